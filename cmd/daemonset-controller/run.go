package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/dsbench/dsbench/controller"
	"github.com/dsbench/dsbench/controller/plan"
	"github.com/dsbench/dsbench/controller/secureserving"
)

// run builds the clients and the controller, serves metrics and probes, and
// syncs DaemonSets (as the leader, if leader election is on) until ctx is
// done. Shutdown order: workers stop, then the Lease is released, then the
// HTTP servers close.
func run(ctx context.Context, o *options) error {
	logger := klog.FromContext(ctx)
	restConfig, err := clientcmd.BuildConfigFromFlags(o.master, o.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading client configuration (--kubeconfig %q, --master %q): %w", o.kubeconfig, o.master, err)
	}
	// The leader-election identity, known before any client exists so that
	// every request names its replica.
	id, err := identity()
	if err != nil {
		return err
	}
	o.applyClientOptions(restConfig, id)
	metrics := controller.NewMetrics()
	restConfig.Wrap(metrics.WrapTransport)
	clientConfig := restConfig // the controller's clients; the others keep limiters of their own
	var podWriteClient kubernetes.Interface
	if o.podWriteConns > 0 {
		clientConfig = withSharedRateLimiter(restConfig)
		if podWriteClient, err = newPodWriteClient(clientConfig, o.podWriteConns, o.podWriteStreams); err != nil {
			return err
		}
	}
	client, err := kubernetes.NewForConfig(clientConfig)
	if err != nil {
		return fmt.Errorf("creating API client: %w", err)
	}

	c, err := controller.NewController(controller.Config{
		Client:                   client,
		PodWriteClient:           podWriteClient,
		Workers:                  o.workers,
		BurstReplicas:            o.burstReplicas,
		MaxCreateBatch:           o.maxCreateBatch,
		SlowStartInitialBatch:    o.slowStartFirst,
		MaxPodWritesInFlight:     o.maxPodWrites,
		AdaptiveCreates:          o.createPacing == createPacingAdaptive,
		SlowStartWindow:          o.slowStart == slowStartWindow,
		BindMode:                 plan.BindMode(o.bindMode),
		Logger:                   logger,
		SyncDelay:                o.syncDelay,
		Metrics:                  metrics,
		ExpectationsTTL:          o.expectationsTTL,
		StatusInterval:           o.statusInterval,
		PodUpdateBatch:           o.podUpdateBatch,
		PodUpdateBatchCostFactor: o.batchFactor,
	})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var watchdog *leaderelection.HealthzAdaptor
	if o.leaderElect {
		// Tolerate 20 s past the lease expiry before /healthz fails.
		watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	var servers []*http.Server
	var serveWG sync.WaitGroup
	// serve serves h on addr, over TLS when tlsConf is not nil.
	serve := func(name, addr string, tlsConf *tls.Config, h http.Handler) error {
		if addr == "0" {
			return nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listening for %s on %s: %w", name, addr, err)
		}
		if tlsConf != nil {
			ln = tls.NewListener(ln, tlsConf)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		serveWG.Go(func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cancel(fmt.Errorf("serving %s on %s: %w", name, addr, err))
			}
		})
		logger.Info("Serving", "endpoint", name, "address", ln.Addr().String(), "tls", tlsConf != nil)
		return nil
	}
	metricsHandler, metricsTLS := metricsMux(metrics, o.profiling), (*tls.Config)(nil)
	if o.secureMetrics {
		metricsHandler, metricsTLS, err = o.secureMetricsServing(logger, restConfig, metrics, c, watchdog)
		if err != nil {
			return err
		}
	}
	if err := serve("metrics", o.metricsAddr, metricsTLS, metricsHandler); err != nil {
		return err
	}
	if err := serve("health probes", o.healthProbeAddr, nil, healthMux(c, watchdog)); err != nil {
		return err
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), o.shutdownGraceTime)
		defer scancel()
		for _, srv := range servers {
			_ = srv.Shutdown(sctx)
		}
		serveWG.Wait()
	}()

	// Informers start at once on every replica: a standby keeps a warm
	// cache, is ready, and takes over without a full relist.
	c.StartInformers(ctx)

	if !o.leaderElect {
		err = c.Run(ctx)
	} else {
		// A client of its own, so that renewals never queue behind pod
		// writes in the controller's rate limiter.
		leConfig := rest.CopyConfig(restConfig)
		leConfig.UserAgent += "/leader-election"
		leClient, lerr := kubernetes.NewForConfig(leConfig)
		if lerr != nil {
			return fmt.Errorf("creating leader election client: %w", lerr)
		}
		err = runLeaderElected(ctx, o, id, leClient, c, watchdog)
	}
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause // a server failed
	}
	return err
}

// secureMetricsServing is what --secure-metrics serves: /metrics, /healthz
// and /readyz behind the authentication filter, and the TLS configuration.
func (o *options) secureMetricsServing(logger klog.Logger, restConfig *rest.Config, metrics *controller.Metrics,
	c *controller.Controller, watchdog *leaderelection.HealthzAdaptor) (http.Handler, *tls.Config, error) {
	cert, err := o.servingCertificate(logger)
	if err != nil {
		return nil, nil, err
	}
	// A client of its own, so that reviews never queue behind pod writes in
	// the controller's rate limiter.
	authClient, err := kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(restConfig), "delegated-auth"))
	if err != nil {
		return nil, nil, fmt.Errorf("creating the delegated authentication client: %w", err)
	}
	filter, err := secureserving.NewFilter(secureserving.FilterConfig{
		Client:           authClient,
		AlwaysAllowPaths: o.alwaysAllowPaths,
		Logger:           logger,
	})
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler())
	if o.profiling {
		addProfiling(mux)
	}
	health := healthMux(c, watchdog)
	mux.Handle("/healthz", health)
	mux.Handle("/readyz", health)
	return filter.Wrap(mux), secureserving.TLSConfig(cert), nil
}

// servingCertificate loads --tls-cert-file and --tls-private-key-file, or,
// when neither is set, generates a self-signed certificate in memory.
func (o *options) servingCertificate(logger klog.Logger) (tls.Certificate, error) {
	if o.tlsCertFile != "" {
		cert, err := secureserving.LoadCertificate(o.tlsCertFile, o.tlsKeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("--tls-cert-file, --tls-private-key-file: %w", err)
		}
		return cert, nil
	}
	hostname, _ := os.Hostname()
	host, alternates := selfSignedNames(o.metricsAddr, hostname)
	logger.Info("Serving metrics with a self-signed certificate generated in memory; scrapers cannot verify it",
		"reason", "neither --tls-cert-file nor --tls-private-key-file is set", "host", host, "alternateNames", alternates)
	return secureserving.SelfSignedCertificate(host, alternates...)
}

// selfSignedNames are the names a self-signed certificate is valid for:
// localhost, the loopback address, the host name (the pod's name in a
// Deployment) and the host of the bind address unless it binds them all.
func selfSignedNames(bindAddr, hostname string) (host string, alternates []string) {
	alternates = []string{"127.0.0.1"}
	add := func(name string) {
		if name != "" && name != "localhost" && !slices.Contains(alternates, name) {
			alternates = append(alternates, name)
		}
	}
	add(hostname)
	if h, _, err := net.SplitHostPort(bindAddr); err == nil {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			add(h)
		}
	}
	return "localhost", alternates
}

// applyClientOptions sets the client-side limits, wire format and user
// agent of the controller's API client.
func (o *options) applyClientOptions(cfg *rest.Config, id string) {
	cfg.QPS, cfg.Burst = o.qps, o.burst
	switch {
	case o.qps <= 0:
		cfg.QPS = -1 // client-go: negative disables the client-side limiter (0 would mean 5)
	case o.burst == 0:
		cfg.Burst = int(math.Ceil(float64(o.qps)))
	}
	cfg.ContentType = o.contentType
	cfg.UserAgent = userAgent(id)
}

// userAgent is "daemonset-controller/<identity>": the API server's audit log
// records no Lease holder at Metadata level, so the user agent is what tells
// one replica's writes from another's (bench/audit reads it back).
func userAgent(id string) string { return controller.ComponentName + "/" + id }

// runLeaderElected runs c while holding the Lease. On ctx done the workers
// stop first and the Lease is released after (ReleaseOnCancel), so that a
// successor never overlaps with our writes. Losing the Lease is an error:
// the process exits and restarts as a standby, as kube-controller-manager.
func runLeaderElected(ctx context.Context, o *options, id string, leClient kubernetes.Interface, c *controller.Controller, watchdog *leaderelection.HealthzAdaptor) error {
	logger := klog.FromContext(ctx)
	ns := o.leaseNamespaceOrDefault()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, o.leaseName,
		leClient.CoreV1(), leClient.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("creating Lease lock %s/%s: %w", ns, o.leaseName, err)
	}

	// The elector's context outlives ctx until our workers have stopped.
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()
	started, workersDone := make(chan struct{}), make(chan struct{})
	var runErr error
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.leaseDuration,
		RenewDeadline:   o.renewDeadline,
		RetryPeriod:     o.retryPeriod,
		ReleaseOnCancel: true,
		Name:            o.leaseName,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				close(started)
				defer close(workersDone)
				defer leCancel() // workers stopped: the Lease may go now
				runCtx, cancel := context.WithCancel(lctx)
				defer cancel()
				defer context.AfterFunc(ctx, cancel)()
				logger.Info("Started leading", "identity", id, "lease", klog.KRef(ns, o.leaseName))
				runErr = c.Run(runCtx)
			},
			OnStoppedLeading: func() {
				logger.Info("Stopped leading", "identity", id)
			},
			OnNewLeader: func(leader string) {
				if leader != id {
					logger.Info("Standing by", "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("configuring leader election: %w", err)
	}
	if watchdog != nil {
		watchdog.SetLeaderElection(le)
	}
	stop := context.AfterFunc(ctx, func() {
		select {
		case <-started:
			<-workersDone
		default:
		}
		leCancel()
	})
	defer stop()

	le.Run(leCtx)
	select {
	case <-started:
		<-workersDone
	default:
	}
	if ctx.Err() == nil {
		return fmt.Errorf("lost the leader election Lease %s/%s", ns, o.leaseName)
	}
	return runErr
}

// identity is the hostname (the pod name in a Deployment) plus a random
// suffix, so that a restarted process never reuses a lease it did not hold.
func identity() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("getting hostname for the leader election identity: %w", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return host + "_" + hex.EncodeToString(b), nil
}

func metricsMux(m *controller.Metrics, profiling bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	if profiling {
		addProfiling(mux)
	}
	return mux
}

// addProfiling serves net/http/pprof under /debug/pprof/, as
// kube-controller-manager's --profiling; behind --secure-metrics a scraper
// needs get on the non-resource URL /debug/pprof/*.
func addProfiling(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// healthMux serves /healthz (alive: fails only if we lead but could not
// renew the Lease for too long) and /readyz (alive and caches synced; a
// standby with synced caches is ready).
func healthMux(c *controller.Controller, watchdog *leaderelection.HealthzAdaptor) http.Handler {
	alive := func(r *http.Request) error {
		if watchdog != nil {
			if err := watchdog.Check(r); err != nil {
				return fmt.Errorf("leader election: %w", err)
			}
		}
		return nil
	}
	write := func(w http.ResponseWriter, err error) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err)
			return
		}
		fmt.Fprintln(w, "ok")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { write(w, alive(r)) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		err := alive(r)
		if err == nil && !c.HasSynced() {
			err = errors.New("informer caches not synced")
		}
		write(w, err)
	})
	return mux
}
