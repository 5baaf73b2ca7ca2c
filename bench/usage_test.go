package bench

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The reason exitPeakRSS prefers the sampled VmHWM: a child's rusage maxrss
// carries its parent's resident set (os/exec starts children with vfork,
// and exec keeps the old address space's peak). A test process holding
// 200 MiB starts `sleep`: rusage says the sleep peaked at 200 MiB or more,
// VmHWM says a few MiB.
func TestChildRusageCarriesTheParentsPeak(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux's rusage and /proc")
	}
	const held = 200 << 20
	ballast := make([]byte, held)
	for i := range ballast {
		if i%4096 == 0 {
			ballast[i] = 1
		}
	}
	cmd := exec.Command("sleep", "1")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	sampled, err := readUsage(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	rusage := ru.Maxrss * 1024
	runtime.KeepAlive(ballast)
	t.Logf("sleep: rusage maxrss %d MiB, VmHWM %d MiB", rusage>>20, sampled.PeakRSSBytes>>20)
	if sampled.PeakRSSBytes <= 0 || sampled.PeakRSSBytes > 50<<20 {
		t.Errorf("VmHWM of sleep = %d bytes, want a few MiB", sampled.PeakRSSBytes)
	}
	if got := exitPeakRSS(rusage, sampled.PeakRSSBytes); got != sampled.PeakRSSBytes {
		t.Errorf("exitPeakRSS took %d, want the sampled %d", got, sampled.PeakRSSBytes)
	}
	if exitPeakRSS(rusage, 0) != rusage {
		t.Error("without a sample, exitPeakRSS must fall back to rusage")
	}
	if rusage < held {
		t.Logf("rusage did not carry the parent's %d MiB here (%d MiB): this kernel keeps them apart", held>>20, rusage>>20)
	}
}
