// Package kwoktest gives each test package one shared KWOK cluster, brought
// up in TestMain and always torn down, also after a failing test or Ctrl-C,
// a watch that shows a test every state of a namespace's pods, and the
// tests' own reading of a pod's node and readiness.
package kwoktest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/dsbench/dsbench/kwok"
)

// RequireEnv makes missing binaries a failure instead of a skip. `make test`
// sets it, so that CI can never pass by skipping the integration tests.
const RequireEnv = "DSBENCH_REQUIRE_CLUSTER"

var shared struct {
	cluster *kwok.Cluster
	cfg     *rest.Config
	client  kubernetes.Interface
	skip    string
}

// Config is the cluster configuration tests use for a cluster named name.
func Config(name string) kwok.ClusterConfig {
	cache := kwok.CacheDir()
	return kwok.ClusterConfig{
		Name:     name,
		Workdir:  filepath.Join(cache, "kwok-test"),
		Binaries: kwok.Binaries{Dir: filepath.Join(cache, "bin")},
		Timeout:  3 * time.Minute,
	}
}

// Main brings up the cluster named name (adjusted by conf, if non-nil), runs
// the package's tests and tears the cluster down. Use it from TestMain.
func Main(m *testing.M, name string, conf func(*kwok.ClusterConfig)) {
	os.Exit(run(m, name, conf))
}

func run(m *testing.M, name string, adjust func(*kwok.ClusterConfig)) int {
	flag.Parse()
	if testing.Short() {
		shared.skip = "-short: no KWOK cluster"
		return m.Run()
	}
	conf := Config(name)
	if adjust != nil {
		adjust(&conf)
	}
	if err := conf.Binaries.Check(); err != nil {
		if os.Getenv(RequireEnv) != "" {
			fmt.Fprintf(os.Stderr, "kwoktest: %v\n", err)
			return 1
		}
		shared.skip = fmt.Sprintf("no KWOK cluster: %v", err)
		return m.Run()
	}
	// A signal during Up cancels it (Up cleans up after itself); a signal
	// after Up tears the cluster down and exits.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := make(chan struct{})
	var c *kwok.Cluster
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-up:
			<-sigs
			teardown(c)
			os.Exit(130)
		}
	}()
	c, err := kwok.Up(ctx, conf)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kwoktest: bringing up cluster %q: %v\n", name, err)
		return 1
	}
	close(up)
	defer teardown(c)
	defer logToFile(filepath.Join(conf.Workdir, name+".klog"))()
	shared.cluster = c
	shared.cfg, err = c.RESTConfig()
	if err == nil {
		shared.client, err = kubernetes.NewForConfig(shared.cfg)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kwoktest: %v\n", err)
		return 1
	}
	return m.Run()
}

// logToFile sends klog's output (the in-process controller's log) to path,
// so that a failing test's own lines are not buried under it: CI shows only
// the tail of the output. The returned func restores stderr and says where
// the log is.
func logToFile(path string) (restore func()) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kwoktest: klog stays on stderr: %v\n", err)
		return func() {}
	}
	klog.LogToStderr(false)
	klog.SetOutput(f)
	// Errors, too, go only to the file (klog copies them to stderr by default).
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("stderrthreshold", "FATAL"); err != nil {
		fmt.Fprintf(os.Stderr, "kwoktest: klog errors stay on stderr too: %v\n", err)
	}
	return func() {
		klog.Flush()
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "kwoktest: closing %s: %v\n", path, err)
		}
		fmt.Fprintf(os.Stderr, "kwoktest: the controller's log is in %s\n", path)
	}
}

func teardown(c *kwok.Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Down(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "kwoktest: tearing down cluster %q: %v\n", c.Name(), err)
	}
}

// Cluster returns the shared cluster, or skips the test when there is none.
func Cluster(t testing.TB) (*kwok.Cluster, *rest.Config, kubernetes.Interface) {
	t.Helper()
	if shared.cluster == nil {
		if shared.skip == "" {
			t.Fatal("kwoktest.Main was not called from TestMain")
		}
		t.Skip(shared.skip)
	}
	return shared.cluster, rest.CopyConfig(shared.cfg), shared.client
}
