// Package floor plans the work of the harness's floor controller: the pods a
// DaemonSet controller must create, delete and adopt at one instant of the
// oracle's view, decided without I/O, clock or scheduler, so that a run can
// measure how fast the cluster itself can converge.
package floor
