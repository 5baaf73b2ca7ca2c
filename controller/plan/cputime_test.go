package plan

import (
	"syscall"
	"testing"
	"time"
)

// processCPUTime is the user and system CPU time of the whole process: on
// a machine shared with a cluster, a niced benchmark waits for a core, which
// ns/op counts and CPU time does not.
func processCPUTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
