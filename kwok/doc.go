// Package kwok builds on kwokctl to run a pinned Kubernetes control plane with
// KWOK fake nodes on this machine: cluster lifecycle, node pools and the pod
// behaviour stages that the scenarios use.
package kwok
