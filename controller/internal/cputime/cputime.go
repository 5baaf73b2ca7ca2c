// Package cputime reads the process's CPU time for benchmarks.
package cputime

import (
	"syscall"
	"time"
)

// Process is the user and system CPU time of the whole process. A
// benchmark's cost includes the garbage collector's work on other cores,
// which ns/op leaves out; and on a machine shared with a cluster, a niced
// benchmark waits for a core, which ns/op counts and CPU time does not.
func Process() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// Fataler is what Must needs of a *testing.B.
type Fataler interface {
	Fatalf(format string, args ...any)
}

// Must is Process for a benchmark: a failure to read it ends b.
func Must(b Fataler) time.Duration {
	d, err := Process()
	if err != nil {
		b.Fatalf("reading the process's CPU time: %v", err)
	}
	return d
}
