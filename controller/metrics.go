package controller

import (
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/util/workqueue"
)

// MetricsNamespace prefixes every metric the controller exports.
const MetricsNamespace = "dsbench_controller"

// Metrics holds the controller's Prometheus collectors in a registry of its
// own, so that several controllers (tests) never collide on a global one.
type Metrics struct {
	// Registry holds every collector below plus the Go and process collectors.
	Registry *prometheus.Registry

	syncDuration *prometheus.HistogramVec
	podsCreated  *prometheus.CounterVec
	podsDeleted  *prometheus.CounterVec
	podErrors    *prometheus.CounterVec
	apiRequests  *prometheus.CounterVec
	dsDesired    *prometheus.GaugeVec
	dsUpdated    *prometheus.GaugeVec
	dsAvailable  *prometheus.GaugeVec
	dsSyncs      *prometheus.CounterVec
	dsBatch      *prometheus.GaugeVec
	// statusDeferred counts status writes put off by StatusInterval.
	statusDeferred prometheus.Counter
	// createLimit is the adaptive limit on creates in flight.
	createLimit prometheus.Gauge

	wqDepth       *prometheus.GaugeVec
	wqAdds        *prometheus.CounterVec
	wqLatency     *prometheus.HistogramVec
	wqWork        *prometheus.HistogramVec
	wqUnfinished  *prometheus.GaugeVec
	wqLongestProc *prometheus.GaugeVec
	wqRetries     *prometheus.CounterVec
}

// NewMetrics builds and registers all collectors in a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	ns := MetricsNamespace
	m.syncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: ns, Name: "sync_duration_seconds",
		Help:    "Time taken by one DaemonSet sync, by result (success, error).",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"result"})
	m.podsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "pods_created_total",
		Help: "Daemon pods created successfully, by reason.",
	}, []string{"reason"})
	m.podsDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "pods_deleted_total",
		Help: "Daemon pods deleted successfully, by reason.",
	}, []string{"reason"})
	m.podErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "pod_write_errors_total",
		Help: "Failed pod writes, by verb (create, delete, patch).",
	}, []string{"verb"})
	m.apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "api_requests_total",
		Help: "Requests sent to the API server, by verb (get, list, watch, create, update, patch, delete) and resource.",
	}, []string{"verb", "resource"})
	dsLabels := []string{"namespace", "name"}
	m.dsDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "daemonset_desired_number_scheduled",
		Help: "Nodes that should run the DaemonSet's pod, as last computed.",
	}, dsLabels)
	m.dsUpdated = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "daemonset_updated_number_scheduled",
		Help: "Nodes running an up-to-date pod of the DaemonSet, as last computed.",
	}, dsLabels)
	m.dsAvailable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "daemonset_number_available",
		Help: "Nodes running an available pod of the DaemonSet, as last computed.",
	}, dsLabels)
	m.dsSyncs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "daemonset_syncs_total",
		Help: "Syncs of a DaemonSet that exists; one that keeps climbing while nothing changes is a hot loop.",
	}, dsLabels)
	m.dsBatch = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Name: "daemonset_pod_update_batch_seconds",
		Help: "How long the DaemonSet's sync waits after an event of one of its pods: --pod-update-batch-period, stretched to --pod-update-batch-cost-factor times its recent planning time.",
	}, dsLabels)
	m.statusDeferred = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: ns, Name: "status_writes_deferred_total",
		Help: "Status writes put off because the DaemonSet's status was written less than --status-write-interval before (its counters are written with the next one).",
	})
	m.createLimit = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: ns, Name: "create_limit",
		Help: "The adaptive limit on pod creates in flight (--create-pacing=adaptive), as last set.",
	})

	q := []string{"name"}
	m.wqDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Subsystem: "workqueue", Name: "depth", Help: "Current depth of the workqueue.",
	}, q)
	m.wqAdds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Subsystem: "workqueue", Name: "adds_total", Help: "Adds handled by the workqueue.",
	}, q)
	m.wqLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: ns, Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help: "Time an item waits in the workqueue before being requested.", Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10),
	}, q)
	m.wqWork = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: ns, Subsystem: "workqueue", Name: "work_duration_seconds",
		Help: "Time processing an item from the workqueue takes.", Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10),
	}, q)
	m.wqUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Subsystem: "workqueue", Name: "unfinished_work_seconds",
		Help: "Seconds of work in progress not yet observed by work_duration.",
	}, q)
	m.wqLongestProc = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: ns, Subsystem: "workqueue", Name: "longest_running_processor_seconds",
		Help: "Seconds the longest running processor of the workqueue has been running.",
	}, q)
	m.wqRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Subsystem: "workqueue", Name: "retries_total", Help: "Retries handled by the workqueue.",
	}, q)

	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.syncDuration, m.podsCreated, m.podsDeleted, m.podErrors, m.apiRequests,
		m.dsDesired, m.dsUpdated, m.dsAvailable, m.dsSyncs, m.dsBatch, m.statusDeferred, m.createLimit,
		m.wqDepth, m.wqAdds, m.wqLatency, m.wqWork, m.wqUnfinished, m.wqLongestProc, m.wqRetries,
	)
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// setDaemonSetGauges records a DaemonSet's rollout progress.
func (m *Metrics) setDaemonSetGauges(namespace, name string, desired, updated, available int32) {
	m.dsDesired.WithLabelValues(namespace, name).Set(float64(desired))
	m.dsUpdated.WithLabelValues(namespace, name).Set(float64(updated))
	m.dsAvailable.WithLabelValues(namespace, name).Set(float64(available))
}

// deleteDaemonSetSeries drops the series of a DaemonSet that is gone, so
// that churn does not grow the registry forever.
func (m *Metrics) deleteDaemonSetSeries(namespace, name string) {
	m.dsDesired.DeleteLabelValues(namespace, name)
	m.dsUpdated.DeleteLabelValues(namespace, name)
	m.dsAvailable.DeleteLabelValues(namespace, name)
	m.dsSyncs.DeleteLabelValues(namespace, name)
	m.dsBatch.DeleteLabelValues(namespace, name)
}

// workqueueProvider adapts Metrics to workqueue.MetricsProvider; each queue
// is one value of the "name" label.
type workqueueProvider struct{ m *Metrics }

var _ workqueue.MetricsProvider = workqueueProvider{}

func (p workqueueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.m.wqDepth.WithLabelValues(name)
}
func (p workqueueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.m.wqAdds.WithLabelValues(name)
}
func (p workqueueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.m.wqLatency.WithLabelValues(name)
}
func (p workqueueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.m.wqWork.WithLabelValues(name)
}
func (p workqueueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.m.wqUnfinished.WithLabelValues(name)
}
func (p workqueueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.m.wqLongestProc.WithLabelValues(name)
}
func (p workqueueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.m.wqRetries.WithLabelValues(name)
}

// WrapTransport returns a RoundTripper that counts every request by verb and
// resource before passing it on. Use it as rest.Config.WrapTransport (or via
// rest.Config.Wrap) so that the bench can read
// dsbench_controller_api_requests_total{verb=...}.
func (m *Metrics) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return &countingTransport{next: rt, counter: m.apiRequests}
}

type countingTransport struct {
	next    http.RoundTripper
	counter *prometheus.CounterVec
	// cache avoids a label lookup (hash + lock) per request for hot pairs.
	cache sync.Map // [2]string -> prometheus.Counter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	verb, resource := requestVerbResource(req)
	k := [2]string{verb, resource}
	c, ok := t.cache.Load(k)
	if !ok {
		c, _ = t.cache.LoadOrStore(k, t.counter.WithLabelValues(verb, resource))
	}
	c.(prometheus.Counter).Inc()
	return t.next.RoundTrip(req)
}

// requestVerbResource maps a REST request to the Kubernetes verb (as RBAC
// names them) and "resource[/subresource]". Non-resource paths give the
// lower-cased HTTP method and an empty resource.
func requestVerbResource(req *http.Request) (verb, resource string) {
	method := strings.ToLower(req.Method)
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// Strip the API prefix: /api/<v> or /apis/<group>/<v>.
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return method, ""
	}
	watch := false
	if len(parts) > 0 && parts[0] == "watch" { // legacy /watch/ prefix
		watch, parts = true, parts[1:]
	}
	// Drop namespaces/<ns> of a namespaced resource, but not of the
	// namespace's own subresources (namespaces/<ns>/status, /finalize).
	if len(parts) >= 3 && parts[0] == "namespaces" && !(len(parts) == 3 && (parts[2] == "status" || parts[2] == "finalize")) {
		parts = parts[2:]
	}
	if len(parts) == 0 || parts[0] == "" {
		return method, ""
	}
	resource = parts[0]
	named := len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	if q := req.URL.Query().Get("watch"); q == "true" || q == "1" {
		watch = true
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch:
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		if named {
			verb = "delete"
		} else {
			verb = "deletecollection"
		}
	default:
		verb = method
	}
	return verb, resource
}
