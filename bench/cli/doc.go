// Package cli is the command tree of the dsbench harness: cluster lifecycle,
// node pools, scenario validation, runs and reports. cmd/dsbench is a thin
// main around Main.
package cli
