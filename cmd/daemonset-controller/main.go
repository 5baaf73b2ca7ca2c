// Command daemonset-controller runs the dsbench DaemonSet controller: it
// keeps one daemon pod on every eligible node for every DaemonSet, like
// kube-controller-manager's daemonset controller, whose flag names it uses.
// Run it with kube-controller-manager's own controller disabled
// (--controllers=*,-daemonset-controller).
//
// Usage:
//
//	daemonset-controller [flags]
//
// Connection:
//
//	--kubeconfig FILE      kubeconfig to use; empty: in-cluster configuration
//	--master URL           API server address; overrides the kubeconfig's
//	--kube-api-qps 100     client-side QPS; 0 or negative: no client-side limit
//	                       (unlike client-go, where 0 means 5; APF still applies)
//	--kube-api-burst 200   client-side burst; 0: the QPS rounded up
//	--kube-api-content-type application/vnd.kubernetes.protobuf
//	                       wire format, as kube-controller-manager's default;
//	                       "application/json" costs the API server more CPU
//
// Controller:
//
//	--concurrent-daemonset-syncs 10   DaemonSets synced in parallel. Upstream's 2
//	                       lets two large DaemonSets block all others (#128442);
//	                       a sync is I/O bound and a worker is a goroutine, so 10
//	                       removes that head-of-line blocking at little cost.
//	--bind-mode scheduler  "scheduler": pin pods with matchFields metadata.name
//	                       and let kube-scheduler bind them (upstream); "direct":
//	                       set spec.nodeName
//	--burst-replicas 0     cap on the creates and on the deletes of one sync;
//	                       0: no cap (upstream's fixed 250 makes large clusters
//	                       wait for several syncs). Creates always go in slow-start
//	                       batches 1, 2, 4, ... and stop after a failing batch.
//	--max-create-batch 250 cap on one sync's creates in flight: the slow-start
//	                       batches double while smaller than it, then the rest
//	                       streams with this many in flight (a 5000-node
//	                       DaemonSet would otherwise send 2048 at once to a
//	                       real API server); a sync's deletes stream under it
//	                       too
//	--slow-start-initial-batch 1  first slow-start batch of a DaemonSet's
//	                       creates when none ended in the last minute (1:
//	                       upstream's); after a failed create the retries
//	                       start at 1 whatever it is
//	--slow-start batch     "window": creates keep a window in flight that
//	                       starts as the first batch and grows by one per
//	                       success, instead of batches that each wait for
//	                       their slowest create; both stop at a failure
//	--max-pod-writes-in-flight 0  cap on pod creates and deletes in flight
//	                       over all DaemonSets; 0: none. About 90 fit in one
//	                       HTTP/2 connection to kube-apiserver; past that each
//	                       waiting request dials one more
//	--pod-write-connections 0  send pod creates and deletes over this many
//	                       HTTP/2 connections of their own, the writes past
//	                       their streams waiting for one instead of dialling;
//	                       0: over the main client. Shares its QPS limit
//	--pod-write-streams 90  pod writes in flight on each of those connections
//	                       (kube-apiserver allows 100 streams per connection)
//	--create-pacing batch  "adaptive": one limit on creates in flight for the
//	                       whole controller, 8 to --max-create-batch, that
//	                       grows while creates are acknowledged fast and
//	                       shrinks as the API server queues them
//	--expectations-ttl 5m  how long unobserved creates/deletes hold a DaemonSet
//	                       back; failed calls never do
//	--status-write-interval 1s  least time between two status writes of one
//	                       DaemonSet that change only its counters (a new
//	                       observedGeneration goes at once); 0: every sync
//	--pod-update-batch-period 20ms  longest a sync waits after an event of
//	                       one of its pods (creation, update, deletion), so that
//	                       the events meanwhile share it; adoptions wake it at
//	                       once; 0: every event. A readiness update of a
//	                       DaemonSet with nothing left to do waits until its
//	                       status may be written again
//	--pod-update-batch-cost-factor 80  stretch that period to this many times
//	                       the DaemonSet's recent planning time (at most 250 ms)
//	--profiling false      serve pprof under /debug/pprof/ on the metrics port
//
// Leader election (on by default, so that several replicas can run):
//
//	--leader-elect true
//	--leader-elect-resource-name dsbench-daemonset-controller
//	--leader-elect-resource-namespace NS   empty: $POD_NAMESPACE, else the
//	                       service account's namespace, else "default"
//	--leader-elect-lease-duration 15s
//	--leader-elect-renew-deadline 10s
//	--leader-elect-retry-period 2s
//
// Every replica starts its informers at once: a standby keeps a warm cache,
// reports ready, and takes over without a relist.
//
// A replica's identity is its hostname and 8 random hex digits; it is the
// Lease's holder when leading, and every request carries it in the user
// agent, "daemonset-controller/<identity>" (".../leader-election" for the
// Lease's own client), so that an API server audit log tells replicas apart.
//
// Endpoints:
//
//	--metrics-bind-address :8080        /metrics (Prometheus); "0" disables it
//	--health-probe-bind-address :8081   /healthz (fails only if the leader could
//	                       not renew its Lease) and /readyz (caches synced, and
//	                       leading or standing by healthy), plain HTTP; "0"
//	                       disables them
//	--shutdown-grace-period 10s         time the HTTP servers get on shutdown
//
// Secure metrics (off by default; deploy/ turns them on), as
// kube-controller-manager's secure port:
//
//	--secure-metrics false serve --metrics-bind-address over HTTPS (TLS 1.2
//	                       or newer), where /metrics needs a bearer token that a
//	                       TokenReview authenticates and whose user a
//	                       SubjectAccessReview allows to get the non-resource URL
//	                       /metrics: 401 without a valid token, 403 if denied.
//	                       Answers are cached 10 s each. That port serves
//	                       /healthz and /readyz too. The service account needs
//	                       create on tokenreviews and subjectaccessreviews
//	                       (deploy/clusterrole.yaml); a scraper needs a binding to
//	                       deploy/metrics-reader-clusterrole.yaml.
//	--tls-cert-file FILE, --tls-private-key-file FILE
//	                       PEM certificate and key; both empty: a self-signed
//	                       certificate generated in memory (the log says so),
//	                       which scrapers cannot verify
//	--authorization-always-allow-paths /healthz,/readyz
//	                       paths served without a token: each a path, or a
//	                       prefix ending in *
//
// Memory:
//
//	--go-memory-limit-ratio 0.9  set the Go runtime's soft memory limit to
//	                       this fraction of the cgroup's memory limit (the
//	                       container's), read at start-up from
//	                       /proc/self/cgroup and the cgroup files (v1 or v2,
//	                       the tightest limit up to the hierarchy's root); the
//	                       log says what was set, or why nothing was. 0: off.
//	                       GOMEMLIMIT in the environment wins
//
// Logging: -v N and --vmodule, as klog.
//
// Testing only (hidden): --sync-delay D sleeps D in every sync, so that a
// bench can check that it notices a slow controller.
//
// SIGINT or SIGTERM stops the workers, then releases the Lease, then closes
// the HTTP servers; a second signal kills the process. Exit codes: 0 after a
// clean shutdown, 1 on a runtime error (including a lost Lease), 2 on bad
// flags (the message names the flag).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

func main() {
	os.Exit(execute(os.Args[1:]))
}

// execute parses args, runs until a signal and returns the exit code.
func execute(args []string) int {
	o, err := parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "daemonset-controller: %v\n", err)
		return 2
	}
	defer klog.Flush()
	logGoMemoryLimit(klog.Background(),
		applyGoMemoryLimit(o.goMemLimitRatio, os.DirFS("/"), os.LookupEnv, debug.SetMemoryLimit))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal the default handling returns: a second one kills.
	context.AfterFunc(ctx, stop)
	ctx = klog.NewContext(ctx, klog.Background())

	if err := run(ctx, o); err != nil {
		klog.Background().Error(err, "DaemonSet controller failed")
		return 1
	}
	return 0
}
