package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/reports"
)

// ProfileWindow is the length of each CPU profile a profiled run takes of a
// process. kube-apiserver ends a request after 60 s, and a run waits for the
// windows in flight when its steps end, so they are short; `go tool pprof`
// merges a process's windows when given them all.
const ProfileWindow = 10 * time.Second

// ProfileTarget is a process a profiled run reads Go's pprof profiles from.
type ProfileTarget struct {
	// Name names its files: <run>-<Name>-cpu-NNN.pb.gz and
	// <run>-<Name>-heap-{start,end}.pb.gz.
	Name string
	// Fetch writes the named profile ("profile" for CPU, "heap") to w;
	// seconds > 0 is a CPU profile's length.
	Fetch func(ctx context.Context, profile string, seconds int, w io.Writer) error
}

// pprofHTTPTarget fetches from base (a /debug/pprof URL) as base() says
// at each request: a controller's ports are new when it restarts, and ""
// means it is not running (a fetch then fails and is counted).
func pprofHTTPTarget(name string, base func() string, client *http.Client) ProfileTarget {
	return ProfileTarget{Name: name, Fetch: func(ctx context.Context, profile string, seconds int, w io.Writer) error {
		url := base()
		if url == "" {
			return errors.New("not running")
		}
		url += "/" + profile
		if seconds > 0 {
			url += "?seconds=" + strconv.Itoa(seconds)
		}
		return httpGetWith(ctx, client, url, w)
	}}
}

// profileFetchSlack is how long a profile may take to encode and fetch
// beyond its window.
const profileFetchSlack = 30 * time.Second

// profileClient fetches a CPU window and the time to encode it; it
// trusts the self-signed port of upstream's controller, on loopback only.
var profileClient = &http.Client{
	Timeout:   ProfileWindow + profileFetchSlack,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback only
}

// ClusterPprofTargets are the cluster's etcd and kwok controller as
// profile targets (kube-apiserver is reached through the API).
func ClusterPprofTargets(ts []kwok.PprofTarget) []ProfileTarget {
	var out []ProfileTarget
	for _, t := range ts {
		base := t.BaseURL
		out = append(out, pprofHTTPTarget(t.Component, func() string { return base }, profileClient))
	}
	return out
}

// apiserverPprofTarget reads kube-apiserver's profiles through the API
// (GET /debug/pprof/..., which the cluster's admin may do).
func apiserverPprofTarget(c kubernetes.Interface) ProfileTarget {
	return ProfileTarget{Name: kwok.ComponentKubeAPIServer, Fetch: func(ctx context.Context, profile string, seconds int, w io.Writer) error {
		req := c.CoreV1().RESTClient().Get().AbsPath("/debug/pprof", profile)
		if seconds > 0 {
			req = req.Param("seconds", strconv.Itoa(seconds))
		}
		body, err := req.Stream(ctx)
		if err != nil {
			return err
		}
		defer body.Close()
		_, err = io.Copy(w, body)
		return err
	}}
}

// profiler takes a run's profiles: back-to-back CPU windows of every
// target, a heap profile of each when it starts and when it finishes
// (`go tool pprof -sample_index=alloc_space -base START END` is what the run
// allocated), and the harness's own CPU profile over the whole time.
type profiler struct {
	dir, prefix string
	window      time.Duration
	clock       clock.Clock
	targets     []ProfileTarget
	stop        chan struct{}
	loops       sync.WaitGroup
	finished    *reports.Profiles // finish's result, once it ran

	mu    sync.Mutex
	files []string
	// failed is each target's first error and how many fetches failed.
	failed map[string]*profileFailure
	self   *os.File // the harness's CPU profile; nil when not taken
}

type profileFailure struct {
	first string
	count int
}

// startProfiler starts profiling targets into dir, its files named
// prefix-<target>-...; finish stops it.
func startProfiler(ctx context.Context, dir, prefix string, targets []ProfileTarget, window time.Duration, clk clock.Clock) *profiler {
	p := &profiler{dir: dir, prefix: prefix, window: window, clock: clk, targets: targets,
		stop: make(chan struct{}), failed: map[string]*profileFailure{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.fail("profiles", err)
		p.targets = nil
		return p
	}
	p.startSelf()
	for _, t := range p.targets {
		p.loops.Add(1)
		go func() {
			defer p.loops.Done()
			p.take(ctx, t, "heap", 0, "heap-start")
			p.cpuWindows(ctx, t)
		}()
	}
	return p
}

// cpuWindows takes t's CPU profile in windows until stop, finishing the
// window in flight. A target that fails (restarting, or not serving
// profiles) is tried again a window later.
func (p *profiler) cpuWindows(ctx context.Context, t ProfileTarget) {
	for i := 1; ; i++ {
		select {
		case <-p.stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		if p.take(ctx, t, "profile", int(p.window/time.Second), fmt.Sprintf("cpu-%03d", i)) {
			continue
		}
		select {
		case <-p.stop:
			return
		case <-ctx.Done():
			return
		case <-p.clock.After(p.window):
		}
	}
}

// take fetches one profile of t into prefix-<t>-<suffix>.pb.gz, keeping
// the file only when it is a profile (gzip), and says whether it did.
func (p *profiler) take(ctx context.Context, t ProfileTarget, profile string, seconds int, suffix string) bool {
	name := fmt.Sprintf("%s-%s-%s.pb.gz", p.prefix, t.Name, suffix)
	var buf bytes.Buffer
	// Bounded whatever the target's client does, so that finish waits at
	// most a window and the time to fetch it.
	fctx, cancel := context.WithTimeout(ctx, p.window+profileFetchSlack)
	defer cancel()
	err := t.Fetch(fctx, profile, seconds, &buf)
	if err == nil {
		err = checkProfile(buf.Bytes())
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(p.dir, name), buf.Bytes(), 0o644)
	}
	if err != nil {
		if ctx.Err() == nil {
			p.fail(t.Name, fmt.Errorf("%s %s: %w", profile, suffix, err))
		}
		return false
	}
	p.mu.Lock()
	p.files = append(p.files, name)
	p.mu.Unlock()
	return true
}

// checkProfile accepts what pprof serves: a gzipped protocol buffer. A
// handler that is turned off answers 200 with text on some servers.
func checkProfile(data []byte) error {
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		head := data[:min(len(data), 80)]
		return fmt.Errorf("not a profile (no gzip header): %q", head)
	}
	return nil
}

func (p *profiler) fail(target string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.failed[target]
	if f == nil {
		f = &profileFailure{first: err.Error()}
		p.failed[target] = f
	}
	f.count++
}

// startSelf starts the harness's own CPU profile (the oracle, its watches,
// and the floor when the floor runs). Go allows one at a time per process.
func (p *profiler) startSelf() {
	p.writeSelfHeap("heap-start")
	name := fmt.Sprintf("%s-harness-cpu.pb.gz", p.prefix)
	f, err := os.Create(filepath.Join(p.dir, name))
	if err != nil {
		p.fail("harness", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		p.fail("harness", fmt.Errorf("cpu: %w", err))
		return
	}
	p.self = f
}

func (p *profiler) writeSelfHeap(suffix string) {
	name := fmt.Sprintf("%s-harness-%s.pb.gz", p.prefix, suffix)
	var buf bytes.Buffer
	err := pprof.Lookup("heap").WriteTo(&buf, 0)
	if err == nil {
		err = os.WriteFile(filepath.Join(p.dir, name), buf.Bytes(), 0o644)
	}
	if err != nil {
		p.fail("harness", fmt.Errorf("heap %s: %w", suffix, err))
		return
	}
	p.mu.Lock()
	p.files = append(p.files, name)
	p.mu.Unlock()
}

// finish stops the windows (waiting for those in flight, at most a window
// and the time to fetch it), takes the heap profiles at the end, and
// returns what the run's report records. Called again, it returns the
// same.
func (p *profiler) finish(ctx context.Context) *reports.Profiles {
	if p.finished != nil {
		return p.finished
	}
	close(p.stop)
	if p.self != nil {
		pprof.StopCPUProfile()
		name := filepath.Base(p.self.Name())
		if err := p.self.Close(); err != nil {
			p.fail("harness", err)
		} else {
			p.mu.Lock()
			p.files = append(p.files, name)
			p.mu.Unlock()
		}
		p.self = nil
	}
	p.loops.Wait()
	var ends sync.WaitGroup
	for _, t := range p.targets {
		ends.Add(1)
		go func() {
			defer ends.Done()
			p.take(ctx, t, "heap", 0, "heap-end")
		}()
	}
	ends.Wait()
	if len(p.targets) > 0 || len(p.files) > 0 {
		p.writeSelfHeap("heap-end")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &reports.Profiles{Dir: p.dir, Files: slices.Clone(p.files)}
	slices.Sort(out.Files)
	for _, target := range slices.Sorted(maps.Keys(p.failed)) {
		f := p.failed[target]
		out.Errors = append(out.Errors, fmt.Sprintf("%s: %d failed, the first: %s", target, f.count, f.first))
	}
	p.finished = out
	return out
}
