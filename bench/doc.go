// Package bench is the runner of the scale-test harness: it brings up or
// reuses a cluster, starts the controller under test as its own process,
// plays a scenario's steps, watches nodes, pods and DaemonSets with its own
// eyes, and measures convergence, rollouts and invariants through the
// independent oracle in bench/oracle. The runner is an executor of I/O
// around Core, which decides and records without any (core.go).
package bench
