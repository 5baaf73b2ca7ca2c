// Package plan is the pure planning core of the DaemonSet controller: given a
// DaemonSet, its nodes, pods and revisions it returns what to create, delete and
// write as data, without I/O, clocks or map-order dependence.
package plan
