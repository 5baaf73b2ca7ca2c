package kwok

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Diagnose says why the cluster may not have answered, for a test or run
// that waited in vain on API errors: whether its processes live, how long
// /readyz takes and which checks fail, how starved the machine is (CPU, IO
// and memory pressure), and the last warnings of etcd and kube-apiserver.
// It never fails; what it cannot find out, it says.
func (c *Cluster) Diagnose(ctx context.Context) string {
	var b strings.Builder
	pids := c.componentPIDs()
	for _, comp := range slices.Sorted(maps.Keys(pids)) {
		fmt.Fprintf(&b, "%s pid %d alive=%v; ", comp, pids[comp], processAlive(pids[comp]))
	}
	b.WriteString("\n")
	b.WriteString(c.readyz(ctx))
	b.WriteString("\n")
	b.WriteString(machinePressure())
	for _, comp := range []string{"etcd", "kube-apiserver"} {
		lines, err := lastWarnings(filepath.Join(c.LogDir(), comp+".log"), 8)
		if err != nil {
			fmt.Fprintf(&b, "%s log: %v\n", comp, err)
			continue
		}
		fmt.Fprintf(&b, "%s's last warnings (%d):\n", comp, len(lines))
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	return b.String()
}

// readyz times one verbose /readyz call with a timeout of its own.
func (c *Cluster) readyz(ctx context.Context) string {
	cfg, err := c.RESTConfig()
	if err != nil {
		return "readyz: " + err.Error()
	}
	cfg.Timeout = 10 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "readyz: " + err.Error()
	}
	start := time.Now()
	raw, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
	took := time.Since(start).Round(time.Millisecond)
	var failing []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(l, "[-]") {
			failing = append(failing, l)
		}
	}
	if err != nil {
		return fmt.Sprintf("readyz after %v: %v %s", took, err, strings.Join(failing, " "))
	}
	return fmt.Sprintf("readyz ok after %v", took)
}

// machinePressure reads the kernel's pressure stall information: the share
// of the last 10 and 60 s in which some task waited for CPU, IO or memory.
func machinePressure() string {
	var b strings.Builder
	for _, res := range []string{"cpu", "io", "memory"} {
		raw, err := os.ReadFile("/proc/pressure/" + res)
		if err != nil {
			fmt.Fprintf(&b, "%s pressure: unknown (%v)\n", res, err)
			continue
		}
		first, _, _ := strings.Cut(string(raw), "\n")
		fmt.Fprintf(&b, "%s pressure: %s\n", res, first)
	}
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(&b, "load average: %s", raw)
	}
	return b.String()
}

// lastWarnings returns the last n warning or error lines among the last
// 512 KiB of a component's log: klog lines starting with W or E, and etcd's
// JSON lines at level warn or error.
func lastWarnings(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const tail = 512 << 10
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		if _, err := f.Seek(-tail, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if l := sc.Bytes(); isWarning(l) {
			out = append(out, truncate(string(l), 300))
			if len(out) > n {
				out = out[1:]
			}
		}
	}
	return out, sc.Err()
}

// logTail returns the last n lines of the file at path, from its last
// 64 KiB, on one line.
func logTail(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	const tail = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		if _, err := f.Seek(-tail, io.SeekEnd); err != nil {
			return "", err
		}
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(lastLines(string(raw), n), "\n", " | "), nil
}

func isWarning(l []byte) bool {
	if len(l) > 1 && (l[0] == 'W' || l[0] == 'E') && l[1] >= '0' && l[1] <= '9' {
		return true
	}
	return bytes.Contains(l, []byte(`"level":"warn"`)) || bytes.Contains(l, []byte(`"level":"error"`))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
