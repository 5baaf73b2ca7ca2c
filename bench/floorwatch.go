package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/dsbench/dsbench/controller"
	"github.com/dsbench/dsbench/kwok"
)

// FloorInformersCommand is the dsbench command that holds the floor's
// informers (FloorConfig.Watch): the harness starts its own binary again
// with it, so that their CPU is a process's of its own.
const FloorInformersCommand = "floor-informers"

// floorInformersArgs is the command line of the floor's informers.
func floorInformersArgs(kubeconfig string, healthPort int) []string {
	return []string{FloorInformersCommand, "--kubeconfig=" + kubeconfig,
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(healthPort)}
}

// RunFloorInformers holds the caches our controller holds (DaemonSets,
// ControllerRevisions, pods and nodes, in protobuf, trimmed as it trims
// them) and does nothing with them until ctx ends: the reading of the
// cluster that every DaemonSet controller pays for, with none of a
// controller's work. /healthz on healthAddr answers 200 once every cache
// has synced, 503 before; Go's pprof profiles are under /debug/pprof/ there.
// At the end it writes to log how many pod and node
// events its caches received (adds, updates and deletes).
func RunFloorInformers(ctx context.Context, kubeconfig, healthAddr string, log io.Writer) error {
	cfg, err := kwok.LoadRESTConfig(kubeconfig)
	if err != nil {
		return err
	}
	// As cmd/daemonset-controller's client: protobuf, and no client
	// timeout, which would cut every watch after it.
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.Timeout = 0
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	ln, err := net.Listen("tcp", healthAddr)
	if err != nil {
		return fmt.Errorf("--health-probe-bind-address %s: %w", healthAddr, err)
	}
	var synced atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !synced.Load() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	// As our controller's --profiling, so that a profiled run (--profile)
	// can read what the watch alone costs.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()

	factory := controller.NewInformerFactory(client)
	// Counted only, so that the log shows what the caches received.
	var podEvents, nodeEvents atomic.Int64
	counter := func(n *atomic.Int64) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { n.Add(1) },
			UpdateFunc: func(any, any) { n.Add(1) },
			DeleteFunc: func(any) { n.Add(1) },
		}
	}
	pods, nodes := factory.Core().V1().Pods().Informer(), factory.Core().V1().Nodes().Informer()
	if _, err := pods.AddEventHandler(counter(&podEvents)); err != nil {
		return err
	}
	if _, err := nodes.AddEventHandler(counter(&nodeEvents)); err != nil {
		return err
	}
	hasSynced := []cache.InformerSynced{
		factory.Apps().V1().DaemonSets().Informer().HasSynced,
		factory.Apps().V1().ControllerRevisions().Informer().HasSynced,
		pods.HasSynced, nodes.HasSynced,
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer func() {
		fmt.Fprintf(log, "%s: %d pod events, %d node events\n", FloorInformersCommand, podEvents.Load(), nodeEvents.Load())
	}()
	if cache.WaitForCacheSync(ctx.Done(), hasSynced...) {
		synced.Store(true)
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serving /healthz: %w", err)
	}
}
