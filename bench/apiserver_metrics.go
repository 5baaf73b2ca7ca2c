package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/dsbench/dsbench/reports"
)

// Extra metrics of a run that count the watches kube-apiserver closed as
// unresponsive during it (any client's), by resource. kwok v0.8.0 watches
// again from resourceVersion 0 and so receives every object again each
// time: a run with many closed pod watches had kwok re-reading every pod,
// and its start order following pod names (reports/README.md, "What the
// 5000-node stalls were").
const (
	MetricPodWatchesClosed  = "apiserver-pod-watches-closed"
	MetricNodeWatchesClosed = "apiserver-node-watches-closed"
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
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		l := sc.Text()
		rest, ok := strings.CutPrefix(l, terminatedWatchersMetric+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			return nil, fmt.Errorf("/metrics line %d: %q: want name{labels} value", line, l)
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics line %d: %q: value: %w", line, l, err)
		}
		resource, group := labelValue(labels, "resource"), labelValue(labels, "group")
		if group != "" {
			resource += "." + group
		}
		out[resource] += v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	return out, nil
}

// labelValue returns the value of name in a Prometheus label list
// (a="x",b="y"); label values here hold no quotes or commas.
func labelValue(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
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
