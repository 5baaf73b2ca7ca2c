package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// The Go runtime sizes its heap from GOGC alone and does not read the
// container's memory limit (as of Go 1.26; golang/go#75164). Told a soft
// limit under it, the garbage collector works harder as the heap nears the
// limit instead of the kernel killing the container.

// cgroupLimit is the tightest memory limit found over a process's cgroup and
// its ancestors, with the file it came from.
type cgroupLimit struct {
	bytes int64
	file  string // e.g. "/sys/fs/cgroup/memory.max"
}

// cgroupMemoryLimit reads the memory limit of the process's cgroup from
// fsys, a view of "/" (os.DirFS("/") outside tests): /proc/self/cgroup names
// the cgroup, /proc/self/mountinfo where its hierarchy is mounted, and the
// limit is the smallest of memory.limit_in_bytes (cgroup v1) or memory.max
// and memory.high (v2) from the cgroup up to the hierarchy's root, since a
// parent's limit binds its children. ok is false when no limit is set, or
// the process is in no memory cgroup that is mounted.
func cgroupMemoryLimit(fsys fs.FS) (limit cgroupLimit, ok bool, err error) {
	cg, found, err := findMemoryCgroup(fsys)
	if err != nil || !found {
		return cgroupLimit{}, false, err
	}
	dir, top, files := cg.dir, cg.top, cg.limitFiles
	for {
		for _, name := range files {
			file := path.Join(dir, name)
			b, err := fs.ReadFile(fsys, strings.TrimPrefix(file, "/"))
			if errors.Is(err, fs.ErrNotExist) {
				continue // the root cgroup has no limit files
			}
			if err != nil {
				return cgroupLimit{}, false, err
			}
			n, set, err := parseLimitFile(string(b))
			if err != nil {
				return cgroupLimit{}, false, fmt.Errorf("%s: %w", file, err)
			}
			if set && (!ok || n < limit.bytes) {
				limit, ok = cgroupLimit{bytes: n, file: file}, true
			}
		}
		if dir == top || dir == "/" || dir == "." {
			return limit, ok, nil
		}
		dir = path.Dir(dir)
	}
}

// memoryCgroup is where the process's memory cgroup is: its directory, the
// mount point of its hierarchy (the walk's top), and its limit files.
type memoryCgroup struct {
	dir, top   string
	limitFiles []string
}

// findMemoryCgroup finds the process's memory cgroup from /proc/self/cgroup
// and /proc/self/mountinfo in fsys; found is false when it is in none that
// is mounted.
func findMemoryCgroup(fsys fs.FS) (cg memoryCgroup, found bool, err error) {
	cgroups, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return memoryCgroup{}, false, err
	}
	mountinfo, err := fs.ReadFile(fsys, "proc/self/mountinfo")
	if err != nil {
		return memoryCgroup{}, false, err
	}
	v1Path, v2Path, err := parseProcCgroup(string(cgroups))
	if err != nil {
		return memoryCgroup{}, false, fmt.Errorf("/proc/self/cgroup: %w", err)
	}
	mounts, err := parseCgroupMounts(string(mountinfo))
	if err != nil {
		return memoryCgroup{}, false, fmt.Errorf("/proc/self/mountinfo: %w", err)
	}
	// A hybrid host mounts both; the memory controller is in v1 there.
	switch {
	case v1Path != "" && mounts.v1Memory != nil:
		return memoryCgroup{mounts.v1Memory.dirOf(v1Path), mounts.v1Memory.point, []string{"memory.limit_in_bytes"}}, true, nil
	case v2Path != "" && mounts.v2 != nil:
		return memoryCgroup{mounts.v2.dirOf(v2Path), mounts.v2.point, []string{"memory.max", "memory.high"}}, true, nil
	}
	return memoryCgroup{}, false, nil
}

// parseProcCgroup returns the process's memory cgroup path in v1 and its
// cgroup path in v2 ("" when absent). Lines are "ID:CONTROLLERS:PATH".
func parseProcCgroup(text string) (v1Memory, v2 string, err error) {
	for i, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		id, rest, ok1 := strings.Cut(line, ":")
		controllers, p, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || !strings.HasPrefix(p, "/") {
			return "", "", fmt.Errorf("line %d: %q is not ID:CONTROLLERS:/PATH", i+1, line)
		}
		switch {
		case id == "0" && controllers == "":
			v2 = p
		case containsField(controllers, "memory"):
			v1Memory = p
		}
	}
	return v1Memory, v2, nil
}

// cgroupMount is where a cgroup hierarchy is mounted: the cgroup path of
// the mount's root (not "/" inside a cgroup namespace's view of the host's)
// and the directory it is mounted on.
type cgroupMount struct {
	root, point string
}

// dirOf is the directory of the cgroup p, or the mount point itself when p
// is outside what is mounted (a cgroup namespace shows the others' as "/..").
func (m *cgroupMount) dirOf(p string) string {
	rel, ok := strings.CutPrefix(p, m.root)
	if !ok || (rel != "" && m.root != "/" && !strings.HasPrefix(rel, "/")) {
		return m.point
	}
	d := path.Join(m.point, rel)
	if d != m.point && !strings.HasPrefix(d, strings.TrimSuffix(m.point, "/")+"/") {
		return m.point // "/.." climbs out of the mount
	}
	return d
}

type cgroupMounts struct {
	v1Memory, v2 *cgroupMount
}

// parseCgroupMounts finds the v1 memory and the v2 mounts in
// /proc/self/mountinfo, whose lines are
// "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS"
// (proc(5)). The first of each kind is kept.
func parseCgroupMounts(text string) (cgroupMounts, error) {
	var m cgroupMounts
	for i, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		sep := -1
		for j, f := range fields {
			if f == "-" && j >= 6 {
				sep = j
				break
			}
		}
		if sep < 0 || len(fields) < sep+4 {
			return cgroupMounts{}, fmt.Errorf("line %d: %q has not the fields of proc(5)", i+1, line)
		}
		root, point := unescapeMountPath(fields[3]), unescapeMountPath(fields[4])
		fstype, superOptions := fields[sep+1], fields[sep+3]
		switch {
		case fstype == "cgroup2" && m.v2 == nil:
			m.v2 = &cgroupMount{root: root, point: point}
		case fstype == "cgroup" && m.v1Memory == nil && containsField(superOptions, "memory"):
			m.v1Memory = &cgroupMount{root: root, point: point}
		}
	}
	return m, nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// containsField reports whether the comma-separated list holds want.
func containsField(list, want string) bool {
	for f := range strings.SplitSeq(list, ",") {
		if f == want {
			return true
		}
	}
	return false
}

// v1Unlimited: cgroup v1 writes "no limit" as the largest page-aligned
// int64 (9223372036854771712 with 4-KiB pages); anything this large is none.
const v1Unlimited = 1 << 62

// parseLimitFile reads one limit file: a count of bytes, or "max" (v2) or a
// huge count (v1) for none.
func parseLimitFile(text string) (bytes int64, set bool, err error) {
	s := strings.TrimSpace(text)
	if s == "max" || s == "-1" { // v1 takes -1 for none and may echo it
		return 0, false, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%q is neither a count of bytes nor \"max\"", s)
	}
	if n >= v1Unlimited {
		return 0, false, nil
	}
	return int64(n), true, nil
}

// goMemoryLimitDecision is what applyGoMemoryLimit chose, for the log and tests.
type goMemoryLimitDecision struct {
	set    int64  // the soft limit set, in bytes; 0: none set
	reason string // why, in a few words
}

// applyGoMemoryLimit sets the Go runtime's soft memory limit to ratio times
// the cgroup's limit (setLimit is debug.SetMemoryLimit outside tests),
// unless GOMEMLIMIT is in the environment (the runtime has read it; the
// user's choice wins, "off" included) or ratio is 0. A cgroup that cannot
// be read leaves the runtime's default: the controller runs without the
// limit, as before, and the log says why.
func applyGoMemoryLimit(ratio float64, fsys fs.FS, lookupEnv func(string) (string, bool), setLimit func(int64) int64) goMemoryLimitDecision {
	if v, ok := lookupEnv("GOMEMLIMIT"); ok && v != "" {
		return goMemoryLimitDecision{reason: fmt.Sprintf("GOMEMLIMIT=%s is set", v)}
	}
	if ratio == 0 {
		return goMemoryLimitDecision{reason: "--go-memory-limit-ratio is 0"}
	}
	limit, ok, err := cgroupMemoryLimit(fsys)
	switch {
	case err != nil:
		return goMemoryLimitDecision{reason: fmt.Sprintf("reading the cgroup's memory limit: %v", err)}
	case !ok:
		return goMemoryLimitDecision{reason: "the cgroup sets no memory limit"}
	}
	soft := int64(math.Floor(ratio * float64(limit.bytes)))
	setLimit(soft)
	return goMemoryLimitDecision{set: soft, reason: fmt.Sprintf("%s of %d bytes in %s", strconv.FormatFloat(ratio, 'f', -1, 64), limit.bytes, limit.file)}
}

// logGoMemoryLimit says what applyGoMemoryLimit chose.
func logGoMemoryLimit(logger klog.Logger, d goMemoryLimitDecision) {
	if d.set > 0 {
		logger.Info("Set the Go runtime's soft memory limit from the cgroup", "bytes", d.set, "from", d.reason)
		return
	}
	logger.Info("Left the Go runtime's soft memory limit alone", "reason", d.reason)
}
