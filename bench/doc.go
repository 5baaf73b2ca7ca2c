// Package bench is the runner of the scale-test harness: it brings up or
// reuses a cluster, starts the controller under test as its own process,
// plays a scenario's steps, watches nodes, pods and DaemonSets with its own
// eyes, and measures convergence, rollouts and invariants through the
// independent oracle in bench/oracle. The runner is an executor of I/O
// around Core, which decides and records without any (core.go). A run can
// record its oracle's inputs in a journal that Replay judges again without
// a cluster (journal.go, replay.go). RunSuite plays a whole suite, every
// scenario against every controller in an interleaved order, on a cluster
// its caller opened, then writes and judges the report (suite.go).
package bench
