package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// Layouts of /proc/self/mountinfo seen in the wild, one line per mount.
const (
	// A hybrid host (this repository's VMs): v1 controllers, v2 unified
	// without them.
	mountsHybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	// A container in its own cgroup namespace on a v2 host (Kubernetes'
	// default with containerd): its cgroup is "/" and so is the mount's root.
	mountsV2 = `1177 1170 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime master:9 - cgroup2 cgroup rw,nsdelegate
`
	// Docker on v1 without a cgroup namespace: the mount's root is the
	// container's cgroup.
	mountsV1Docker = `1040 1032 0:31 /docker/abc /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime master:15 - cgroup cgroup rw,memory
`
)

func TestCgroupMemoryLimit(t *testing.T) {
	const gib, mib = 1 << 30, 1 << 20
	v1None := "9223372036854771712\n"
	tests := []struct {
		name      string
		cgroup    string
		mountinfo string
		files     map[string]string // path under / -> content
		want      int64             // 0: no limit
		wantFile  string
		wantErr   string
	}{{
		name:      "hybrid host, v1 memory cgroup with a limit under unlimited parents",
		cgroup:    "4:memory:/process_api/f00\n3:cpuset:/\n0::/\n",
		mountinfo: mountsHybrid,
		files: map[string]string{
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                 v1None,
			"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":     v1None,
			"sys/fs/cgroup/memory/process_api/f00/memory.limit_in_bytes": "536870912\n",
		},
		want: 512 * mib, wantFile: "/sys/fs/cgroup/memory/process_api/f00/memory.limit_in_bytes",
	}, {
		name:      "hybrid host, no limit anywhere",
		cgroup:    "4:memory:/process_api/f00\n0::/\n",
		mountinfo: mountsHybrid,
		files: map[string]string{
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                 v1None,
			"sys/fs/cgroup/memory/process_api/f00/memory.limit_in_bytes": v1None,
		},
	}, {
		name:      "v1, -1 for none",
		cgroup:    "4:memory:/a\n",
		mountinfo: mountsHybrid,
		files:     map[string]string{"sys/fs/cgroup/memory/a/memory.limit_in_bytes": "-1\n"},
	}, {
		name:      "v1 controllers listed together",
		cgroup:    "5:cpu,memory:/x\n",
		mountinfo: "35 31 0:32 / /sys/fs/cgroup/cpu,memory rw - cgroup cgroup rw,cpu,memory\n",
		files:     map[string]string{"sys/fs/cgroup/cpu,memory/x/memory.limit_in_bytes": "1048576"},
		want:      mib, wantFile: "/sys/fs/cgroup/cpu,memory/x/memory.limit_in_bytes",
	}, {
		name:      "v1 docker, the mount's root is the container's cgroup",
		cgroup:    "9:memory:/docker/abc\n",
		mountinfo: mountsV1Docker,
		files:     map[string]string{"sys/fs/cgroup/memory/memory.limit_in_bytes": "268435456\n"},
		want:      256 * mib, wantFile: "/sys/fs/cgroup/memory/memory.limit_in_bytes",
	}, {
		name:      "v2 in a cgroup namespace: the container's memory.max",
		cgroup:    "0::/\n",
		mountinfo: mountsV2,
		files:     map[string]string{"sys/fs/cgroup/memory.max": "1073741824\n", "sys/fs/cgroup/memory.high": "max\n"},
		want:      gib, wantFile: "/sys/fs/cgroup/memory.max",
	}, {
		name:      "v2, memory.high under memory.max",
		cgroup:    "0::/\n",
		mountinfo: mountsV2,
		files:     map[string]string{"sys/fs/cgroup/memory.max": "1073741824\n", "sys/fs/cgroup/memory.high": "805306368\n"},
		want:      768 * mib, wantFile: "/sys/fs/cgroup/memory.high",
	}, {
		name:      "v2 host view: the pod's limit binds the container that has none",
		cgroup:    "0::/kubepods.slice/pod1/ctr\n",
		mountinfo: "24 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
		files: map[string]string{
			"sys/fs/cgroup/kubepods.slice/pod1/ctr/memory.max": "max\n",
			"sys/fs/cgroup/kubepods.slice/pod1/memory.max":     "268435456\n",
			"sys/fs/cgroup/kubepods.slice/memory.max":          "2147483648\n",
		},
		want: 256 * mib, wantFile: "/sys/fs/cgroup/kubepods.slice/pod1/memory.max",
	}, {
		name:      "v2, the cgroup is outside the mount: only the mount's own limit",
		cgroup:    "0::/../../other\n",
		mountinfo: mountsV2,
		files:     map[string]string{"sys/fs/cgroup/memory.max": "1073741824\n", "sys/other/memory.max": "1"},
		want:      gib, wantFile: "/sys/fs/cgroup/memory.max",
	}, {
		name:      "a mount point with a space, escaped",
		cgroup:    "0::/a\n",
		mountinfo: `24 1 0:22 / /mnt/cg\040two rw - cgroup2 cgroup2 rw` + "\n",
		files:     map[string]string{"mnt/cg two/a/memory.max": "4096\n"},
		want:      4096, wantFile: "/mnt/cg two/a/memory.max",
	}, {
		name:      "v2 listed but not mounted",
		cgroup:    "0::/a\n",
		mountinfo: "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n",
	}, {
		name:      "v1 memory without a memory mount, v2 root without limit files",
		cgroup:    "4:memory:/a\n0::/\n",
		mountinfo: "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
	}, {
		name:      "a malformed /proc/self/cgroup line",
		cgroup:    "0::/\nmemory\n",
		mountinfo: mountsV2,
		wantErr:   `/proc/self/cgroup: line 2: "memory" is not ID:CONTROLLERS:/PATH`,
	}, {
		name:      "a malformed mountinfo line",
		cgroup:    "0::/\n",
		mountinfo: "24 1 0:22 / /sys/fs/cgroup rw cgroup2\n",
		wantErr:   "/proc/self/mountinfo: line 1:",
	}, {
		name:      "a limit file that is not a number",
		cgroup:    "0::/\n",
		mountinfo: mountsV2,
		files:     map[string]string{"sys/fs/cgroup/memory.max": "lots\n"},
		wantErr:   `/sys/fs/cgroup/memory.max: "lots" is neither a count of bytes nor "max"`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"proc/self/cgroup":    {Data: []byte(tt.cgroup)},
				"proc/self/mountinfo": {Data: []byte(tt.mountinfo)},
			}
			for p, content := range tt.files {
				fsys[p] = &fstest.MapFile{Data: []byte(content)}
			}
			got, ok, err := cgroupMemoryLimit(fsys)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == 0 {
				if ok {
					t.Fatalf("limit %d from %s, want none", got.bytes, got.file)
				}
				return
			}
			if !ok || got.bytes != tt.want || got.file != tt.wantFile {
				t.Fatalf("limit %d from %q (ok %v), want %d from %q", got.bytes, got.file, ok, tt.want, tt.wantFile)
			}
		})
	}
}

func TestCgroupMemoryLimitWithoutProc(t *testing.T) {
	if _, _, err := cgroupMemoryLimit(fstest.MapFS{}); err == nil {
		t.Fatal("no error without /proc/self/cgroup")
	}
}

func TestApplyGoMemoryLimit(t *testing.T) {
	limited := fstest.MapFS{
		"proc/self/cgroup":         {Data: []byte("0::/\n")},
		"proc/self/mountinfo":      {Data: []byte(mountsV2)},
		"sys/fs/cgroup/memory.max": {Data: []byte("1073741824\n")},
	}
	unlimited := fstest.MapFS{
		"proc/self/cgroup":         {Data: []byte("0::/\n")},
		"proc/self/mountinfo":      {Data: []byte(mountsV2)},
		"sys/fs/cgroup/memory.max": {Data: []byte("max\n")},
	}
	noEnv := func(string) (string, bool) { return "", false }
	tests := []struct {
		name       string
		ratio      float64
		fsys       fstest.MapFS
		env        func(string) (string, bool)
		wantSet    int64
		wantReason string
	}{
		{"a limit", 0.9, limited, noEnv, 966367641, "0.9 of 1073741824 bytes in /sys/fs/cgroup/memory.max"},
		{"the whole limit", 1, limited, noEnv, 1073741824, "1 of 1073741824 bytes"},
		{"GOMEMLIMIT wins", 0.9, limited, func(k string) (string, bool) { return "500MiB", k == "GOMEMLIMIT" }, 0, "GOMEMLIMIT=500MiB is set"},
		{"GOMEMLIMIT=off wins", 0.9, limited, func(k string) (string, bool) { return "off", k == "GOMEMLIMIT" }, 0, "GOMEMLIMIT=off is set"},
		{"an empty GOMEMLIMIT is unset", 0.9, limited, func(k string) (string, bool) { return "", k == "GOMEMLIMIT" }, 966367641, "0.9 of"},
		{"off", 0, limited, noEnv, 0, "--go-memory-limit-ratio is 0"},
		{"no limit", 0.9, unlimited, noEnv, 0, "the cgroup sets no memory limit"},
		{"unreadable", 0.9, fstest.MapFS{}, noEnv, 0, "reading the cgroup's memory limit: open proc/self/cgroup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set []int64
			d := applyGoMemoryLimit(tt.ratio, tt.fsys, tt.env, func(n int64) int64 { set = append(set, n); return 0 })
			if d.set != tt.wantSet || !strings.Contains(d.reason, tt.wantReason) {
				t.Errorf("decision %+v, want set %d and a reason containing %q", d, tt.wantSet, tt.wantReason)
			}
			switch {
			case tt.wantSet == 0 && len(set) > 0:
				t.Errorf("the runtime's limit was set to %v, want it left alone", set)
			case tt.wantSet != 0 && (len(set) != 1 || set[0] != tt.wantSet):
				t.Errorf("the runtime's limit was set to %v, want [%d]", set, tt.wantSet)
			}
		})
	}
}

func TestGoMemoryLimitRatioFlag(t *testing.T) {
	for _, bad := range []string{"-0.1", "1.5", "NaN"} {
		if _, err := parse([]string{"--go-memory-limit-ratio=" + bad}); err == nil || !strings.Contains(err.Error(), "--go-memory-limit-ratio") {
			t.Errorf("--go-memory-limit-ratio=%s: error %v, want one naming the flag", bad, err)
		}
	}
	for _, good := range []string{"0", "0.5", "1"} {
		if _, err := parse([]string{"--go-memory-limit-ratio=" + good}); err != nil {
			t.Errorf("--go-memory-limit-ratio=%s: %v", good, err)
		}
	}
}

// FuzzCgroupMemoryLimit: whatever /proc and the cgroup files say, reading
// them ends, without a panic, in a limit, none, or an error.
func FuzzCgroupMemoryLimit(f *testing.F) {
	f.Add("4:memory:/process_api/f00\n0::/\n", mountsHybrid, "536870912")
	f.Add("0::/\n", mountsV2, "max")
	f.Add("0::/../..\n", mountsV2, "1")
	f.Add("9:memory:/docker/abc\n", mountsV1Docker, "9223372036854771712")
	f.Fuzz(func(t *testing.T, cgroup, mountinfo, limit string) {
		fsys := fstest.MapFS{
			"proc/self/cgroup":    {Data: []byte(cgroup)},
			"proc/self/mountinfo": {Data: []byte(mountinfo)},
		}
		// The limit file in every directory the cgroup paths could name.
		for _, line := range strings.Split(cgroup, "\n") {
			if _, p, ok := strings.Cut(line, ":"); ok {
				if _, p, ok = strings.Cut(p, ":"); ok {
					for _, root := range []string{"sys/fs/cgroup", "sys/fs/cgroup/memory", "sys/fs/cgroup/unified"} {
						for _, name := range []string{"memory.max", "memory.limit_in_bytes"} {
							fp := path.Join(root, p, name)
							if rel := strings.TrimPrefix(fp, "/"); rel != "" && !strings.HasPrefix(rel, "..") {
								fsys[rel] = &fstest.MapFile{Data: []byte(limit)}
							}
						}
					}
				}
			}
		}
		got, ok, err := cgroupMemoryLimit(fsys)
		if err == nil && ok && (got.bytes < 0 || got.bytes >= v1Unlimited || got.file == "") {
			t.Errorf("limit %+v", got)
		}
	})
}

// TestGoMemoryLimitFromARealCgroup runs the controller's own start-up (the
// test binary again, as the controller's execute) inside a memory cgroup
// that the test makes with a limit of its own, and compares the soft limit
// the Go runtime then holds with 0.9 of it: the real /proc and cgroup
// files, the real runtime. It needs the right to make a cgroup (root on a
// host with cgroup v1's memory controller, or a delegated v2 subtree).
func TestGoMemoryLimitFromARealCgroup(t *testing.T) {
	if procs := os.Getenv("DSBENCH_TEST_CGROUP_PROCS"); procs != "" {
		runInCgroup(procs)
		return
	}
	dir, file := makeTestMemoryCgroup(t, 192<<20)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("not: [a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, env, ratio string
		want             int64
	}{
		{"the default ratio", "", "", 192 << 20 * 9 / 10},
		{"a ratio of a half", "", "--go-memory-limit-ratio=0.5", 96 << 20},
		{"GOMEMLIMIT wins", "GOMEMLIMIT=50MiB", "", 50 << 20},
		{"off", "", "--go-memory-limit-ratio=0", 1<<63 - 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0"}
			if tt.ratio != "" {
				args = append(args, tt.ratio)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestGoMemoryLimitFromARealCgroup$")
			cmd.Env = append(withoutEnv(os.Environ(), "GOMEMLIMIT"),
				"DSBENCH_TEST_CGROUP_PROCS="+filepath.Join(dir, "cgroup.procs"),
				"DSBENCH_TEST_CONTROLLER_ARGS="+strings.Join(args, "\x1f"))
			if tt.env != "" {
				cmd.Env = append(cmd.Env, tt.env)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			var got int64 = -1
			for _, line := range strings.Split(stdout.String(), "\n") {
				if v, ok := strings.CutPrefix(line, "gomemlimit="); ok {
					got, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			if got != tt.want {
				t.Errorf("the runtime's soft limit is %d, want %d (the cgroup's limit is in %s)\nstdout:\n%s\nstderr:\n%s", got, tt.want, file, stdout.String(), stderr.String())
			}
			if tt.env == "" && tt.ratio == "" && !strings.Contains(stderr.String(), file) {
				t.Errorf("the log does not name %s:\n%s", file, stderr.String())
			}
		})
	}
}

// runInCgroup is the child's side: it moves itself into the cgroup, runs
// the controller's start-up (which fails on the kubeconfig, after the
// memory limit), and prints the runtime's limit.
func runInCgroup(procs string) {
	if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "joining the cgroup:", err)
		os.Exit(3)
	}
	code := execute(strings.Split(os.Getenv("DSBENCH_TEST_CONTROLLER_ARGS"), "\x1f"))
	fmt.Printf("exit=%d\ngomemlimit=%d\n", code, debug.SetMemoryLimit(-1))
	os.Exit(0)
}

// makeTestMemoryCgroup makes a child of the test's own memory cgroup with
// the given limit, removed at the end, and returns its directory and the
// limit's file; it skips the test where it cannot.
func makeTestMemoryCgroup(t *testing.T, limit int64) (dir, file string) {
	t.Helper()
	cg, found, err := findMemoryCgroup(os.DirFS("/"))
	if err != nil {
		t.Skipf("no /proc/self/cgroup or mountinfo to read: %v", err)
	}
	if !found {
		t.Skip("the process is in no mounted memory cgroup")
	}
	parent, limitFile := cg.dir, cg.limitFiles[0] // v1's limit_in_bytes or v2's max
	dir = filepath.Join(parent, fmt.Sprintf("dsbench-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup (needs root, or a delegated cgroup): %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the test's cgroup: %v", err)
		}
	})
	file = filepath.Join(dir, limitFile)
	if err := os.WriteFile(file, []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Skipf("cannot set the cgroup's memory limit (v2 needs the memory controller delegated to it): %v", err)
	}
	return dir, file
}

// withoutEnv drops the variable name from env.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
