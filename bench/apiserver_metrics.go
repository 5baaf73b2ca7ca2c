package bench

import (
	"bytes"
	"context"
	"fmt"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/reports"
)

// Extra metrics of a run that count the watches kube-apiserver closed as
// unresponsive during it (any client's), by resource. kwok v0.8.0 watches
// again from resourceVersion 0 and so receives every object again each
// time: a run with many closed pod watches had kwok re-reading every pod,
// and its start order following pod names (reports/README.md, "What the
// 5000-node stalls were").
const (
	MetricPodWatchesClosed  = reports.MetricAPIServerPodWatchesClosed
	MetricNodeWatchesClosed = reports.MetricAPIServerNodeWatchesClosed
)

// terminatedWatchersMetric is kube-apiserver's counter of watches it
// closed because their reader did not keep up.
const terminatedWatchersMetric = "apiserver_terminated_watchers_total"

// closedWatches reads kube-apiserver's count of watches closed as
// unresponsive, by resource ("pods", "nodes", "leases.coordination.k8s.io").
func closedWatches(ctx context.Context, client kubernetes.Interface) (map[string]float64, error) {
	rc := client.CoreV1().RESTClient()
	if r, ok := rc.(*rest.RESTClient); rc == nil || ok && r == nil {
		return nil, fmt.Errorf("reading kube-apiserver's /metrics: the client has no REST client (a fake)")
	}
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading kube-apiserver's /metrics: %w", err)
	}
	return parseClosedWatches(raw)
}

// parseClosedWatches picks apiserver_terminated_watchers_total out of
// Prometheus' text format, summed by resource.
func parseClosedWatches(text []byte) (map[string]float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parsing kube-apiserver's /metrics: %w", err)
	}
	out := map[string]float64{}
	for _, m := range families[terminatedWatchersMetric].GetMetric() {
		resource := label(m, "resource")
		if group := label(m, "group"); group != "" {
			resource += "." + group
		}
		out[resource] += m.GetCounter().GetValue()
	}
	return out, nil
}

// closedWatchesMetrics turns two readings into the run's extra metrics.
func closedWatchesMetrics(start, end map[string]float64) []reports.ExtraMetric {
	var out []reports.ExtraMetric
	for _, m := range []struct{ name, resource string }{
		{MetricPodWatchesClosed, "pods"},
		{MetricNodeWatchesClosed, "nodes"},
	} {
		out = append(out, reports.ExtraMetric{Name: m.name, Value: max(end[m.resource]-start[m.resource], 0)})
	}
	return out
}

// kwokWatchCounter is a cluster that can tell how many times kube-apiserver
// has closed kwok's pod watch (kwok.Cluster, from kube-apiserver's log), and
// which kwok it runs.
type kwokWatchCounter interface {
	KwokPodWatchCloses() (int, error)
	KwokWatch() kwok.KwokWatch
}

// kwokPodWatchCloses reads the count so far; ok is false where it cannot be
// known (a cluster not ours, an unreadable log).
func kwokPodWatchCloses(cf ClusterFaults) (n int, ok bool) {
	c, isCounter := cf.(kwokWatchCounter)
	if !isCounter {
		return 0, false
	}
	n, err := c.KwokPodWatchCloses()
	return n, err == nil
}

// kwokWatchOf is the kwok the cluster runs; "" where it is not ours.
func kwokWatchOf(cf ClusterFaults) kwok.KwokWatch {
	if c, ok := cf.(kwokWatchCounter); ok {
		return c.KwokWatch()
	}
	return ""
}

// kwokClosesMetric is the run's count of closes of kwok's pod watch, from
// two readings; a log that went back (rewritten) counts none. With kwok as
// released each close is a replay of every pod (MetricKwokPodWatchReplays);
// the patched kwok resumes, and the count is only a record
// (MetricKwokPodWatchCloses).
func kwokClosesMetric(w kwok.KwokWatch, start, end int) reports.ExtraMetric {
	name := reports.MetricKwokPodWatchReplays
	if w == kwok.KwokWatchResume {
		name = reports.MetricKwokPodWatchCloses
	}
	return reports.ExtraMetric{Name: name, Value: float64(max(end-start, 0))}
}
