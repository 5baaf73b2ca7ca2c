package kwok

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// clusterWithPIDs is a cluster folder with only pid files (and a log for
// each), as kwokctl writes them: the pid without a newline.
func clusterWithPIDs(t *testing.T, pids map[string]int) *Cluster {
	t.Helper()
	c, err := Open(ClusterConfig{Name: "restart", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(c.Dir(), "pids"), c.LogDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for comp, pid := range pids {
		if err := os.WriteFile(c.pidFile(comp), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(c.logFile(comp), []byte("log of "+comp), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("running true: %v", err)
	}
	return cmd.Process.Pid
}

// RestartAPIServer refuses before it kills anything when there is nothing
// to restart, and never kills a process that is not kube-apiserver (a pid
// file outlives its process, and pids are reused).
func TestRestartAPIServerRefuses(t *testing.T) {
	tests := []struct {
		name     string
		pids     map[string]int
		downtime time.Duration
		wantErr  string
	}{
		{name: "no pid file", pids: map[string]int{"etcd": os.Getpid()}, wantErr: "kube-apiserver is not running: no pid in "},
		{name: "a dead pid", pids: map[string]int{ComponentKubeAPIServer: deadPID(t)}, wantErr: "is not running"},
		{name: "a pid that runs something else", pids: map[string]int{ComponentKubeAPIServer: os.Getpid()}, wantErr: "not kube-apiserver; not killing it"},
		{name: "negative downtime", pids: map[string]int{ComponentKubeAPIServer: os.Getpid()}, downtime: -1, wantErr: "downtime -1ns is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clusterWithPIDs(t, tt.pids)
			err := c.RestartAPIServer(t.Context(), tt.downtime)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), `cluster "restart"`) {
				t.Fatalf("got %v, want an error naming the cluster and containing %q", err, tt.wantErr)
			}
			// Nothing was touched.
			if diff := cmp.Diff(tt.pids, c.componentPIDs()); diff != "" {
				t.Errorf("pid files (-before +after):\n%s", diff)
			}
		})
	}
}

func TestRetireDeadKeepsTheLogAndDropsThePIDFile(t *testing.T) {
	dead := deadPID(t)
	c := clusterWithPIDs(t, map[string]int{ComponentKubeAPIServer: dead, "kube-scheduler": os.Getpid()})
	retired, err := c.retireDead()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ComponentKubeAPIServer}, retired); diff != "" {
		t.Errorf("retired (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"kube-scheduler": os.Getpid()}, c.componentPIDs()); diff != "" {
		t.Errorf("pid files left (-want +got):\n%s", diff)
	}
	kept, err := os.ReadFile(filepath.Join(c.LogDir(), "kube-apiserver."+strconv.Itoa(dead)+".log"))
	if err != nil || string(kept) != "log of kube-apiserver" {
		t.Errorf("kept log = %q, %v", kept, err)
	}
	if _, err := os.Stat(c.logFile(ComponentKubeAPIServer)); !os.IsNotExist(err) {
		t.Errorf("the dead kube-apiserver's log is still where kwokctl would truncate it (err %v)", err)
	}
	if got, err := os.ReadFile(c.logFile("kube-scheduler")); err != nil || string(got) != "log of kube-scheduler" {
		t.Errorf("live component's log = %q, %v", got, err)
	}
}

func TestDeadComponents(t *testing.T) {
	alive := func(pid int) bool { return pid%2 == 0 }
	tests := []struct {
		name          string
		wasAlive, now map[string]int
		want          []string
	}{
		{name: "all run", wasAlive: map[string]int{"a": 2, "b": 4}, now: map[string]int{"a": 2, "b": 4}},
		{name: "restarted under a new pid", wasAlive: map[string]int{"a": 2}, now: map[string]int{"a": 6}},
		{name: "exited", wasAlive: map[string]int{"b": 4, "a": 2}, now: map[string]int{"a": 3, "b": 5}, want: []string{"a", "b"}},
		{name: "pid file gone", wasAlive: map[string]int{"a": 2}, now: map[string]int{}, want: []string{"a"}},
		{name: "dead before: not ours to judge", wasAlive: map[string]int{}, now: map[string]int{"a": 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, deadComponents(tt.wasAlive, tt.now, alive)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCommandName(t *testing.T) {
	for in, want := range map[string]string{
		"/cache/kwok/clusters/x/bin/kube-apiserver\x00--etcd-prefix=/registry\x00": "kube-apiserver",
		"kube-apiserver": "kube-apiserver",
		"/usr/bin/kube-apiserver-other\x00kube-apiserver\x00": "kube-apiserver-other",
		"": ".",
	} {
		if got := commandName([]byte(in)); got != want {
			t.Errorf("commandName(%q) = %q, want %q", in, got, want)
		}
	}
}

// ReviveDead starts nothing when every component runs, and nothing while
// RestartAPIServer holds the API server down on purpose; otherwise it
// retires the dead ones before kwokctl starts them (here kwokctl is
// missing, so the start fails, and says for which cluster and components).
func TestReviveDead(t *testing.T) {
	live := map[string]int{ComponentKubeAPIServer: os.Getpid(), "kube-scheduler": os.Getpid()}
	c := clusterWithPIDs(t, live)
	if got, err := c.ReviveDead(t.Context()); got != nil || err != nil {
		t.Errorf("all alive: ReviveDead = %v, %v; want nothing to do", got, err)
	}

	dead := deadPID(t)
	withDead := map[string]int{ComponentKubeAPIServer: os.Getpid(), "kube-scheduler": dead}
	c = clusterWithPIDs(t, withDead)
	c.restarting.Lock() // as RestartAPIServer holds it
	if got, err := c.ReviveDead(t.Context()); got != nil || err != nil {
		t.Errorf("during a restart: ReviveDead = %v, %v; want it to leave the components to the restart", got, err)
	}
	if diff := cmp.Diff(withDead, c.componentPIDs()); diff != "" {
		t.Errorf("during a restart, pid files changed (-before +after):\n%s", diff)
	}
	c.restarting.Unlock()

	got, err := c.ReviveDead(t.Context())
	if diff := cmp.Diff([]string{"kube-scheduler"}, got); diff != "" {
		t.Errorf("dead components (-want +got):\n%s", diff)
	}
	if err == nil || !strings.Contains(err.Error(), `cluster "restart"`) || !strings.Contains(err.Error(), "kube-scheduler") {
		t.Errorf("got %v, want kwokctl's failure naming the cluster and kube-scheduler", err)
	}
	if _, ok := c.componentPIDs()["kube-scheduler"]; ok {
		t.Errorf("the dead kube-scheduler's pid file is still there for kwokctl to take for a live process")
	}
}
