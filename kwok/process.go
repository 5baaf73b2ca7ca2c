package kwok

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processAlive says whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// stopProcess sends SIGTERM, then SIGKILL if pid is still alive after a grace
// period.
func stopProcess(ctx context.Context, pid int) error {
	if !processAlive(pid) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !processAlive(pid) {
			return nil
		}
		select {
		case <-ctx.Done():
			deadline = time.Now()
		case <-time.After(100 * time.Millisecond):
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for range 50 {
		if !processAlive(pid) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("process %d survived SIGKILL", pid)
}

func sortProcesses(ps []Process) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Component < ps[j].Component })
}
