package bench

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/reports"
)

func TestParseClosedWatches(t *testing.T) {
	text := `# HELP apiserver_terminated_watchers_total [STABLE] Counter of watchers closed due to unresponsiveness broken down by resource.
# TYPE apiserver_terminated_watchers_total counter
apiserver_terminated_watchers_total{group="",resource="nodes"} 95
apiserver_terminated_watchers_total{group="",resource="pods"} 188
apiserver_terminated_watchers_total{group="coordination.k8s.io",resource="leases"} 21
apiserver_request_total{code="200",resource="pods",verb="WATCH"} 163
`
	got, err := parseClosedWatches([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"nodes": 95, "pods": 188, "leases.coordination.k8s.io": 21}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for in, msg := range map[string]string{
		"apiserver_terminated_watchers_total{resource=\"pods\"}\n":           "line 1",
		"x 1\napiserver_terminated_watchers_total{resource=\"pods\"} many\n": "line 2",
	} {
		if _, err := parseClosedWatches([]byte(in)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: got %v, want an error naming %s", in, err, msg)
		}
	}
	// A counter that went back (kube-apiserver restarted) gives 0, not a negative count.
	m := closedWatchesMetrics(map[string]float64{"pods": 188, "nodes": 95}, map[string]float64{"pods": 200, "nodes": 3})
	wantM := []reports.ExtraMetric{{Name: MetricPodWatchesClosed, Value: 12}, {Name: MetricNodeWatchesClosed, Value: 0}}
	if diff := cmp.Diff(wantM, m); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
}

// kwokCloses plays a local cluster whose kube-apiserver log counts closes
// of kwok's pod watch.
type kwokCloses struct {
	ClusterFaults
	n     int
	err   error
	watch kwok.KwokWatch
}

func (k *kwokCloses) KwokPodWatchCloses() (int, error) { return k.n, k.err }
func (k *kwokCloses) KwokWatch() kwok.KwokWatch        { return k.watch }

func TestKwokReplays(t *testing.T) {
	if _, ok := kwokPodWatchCloses(nil); ok {
		t.Error("no cluster of ours: want the count unknown")
	}
	if _, ok := kwokPodWatchCloses(&deadComponents{}); ok {
		t.Error("a cluster that cannot count: want the count unknown")
	}
	if _, ok := kwokPodWatchCloses(&kwokCloses{n: 3, err: errors.New("unreadable")}); ok {
		t.Error("an unreadable log: want the count unknown")
	}
	if n, ok := kwokPodWatchCloses(&kwokCloses{n: 7}); n != 7 || !ok {
		t.Errorf("got %d, %v; want 7, true", n, ok)
	}
	for _, tc := range []struct {
		watch      kwok.KwokWatch
		start, end int
		wantName   string
		wantValue  float64
	}{
		{kwok.KwokWatchRelist, 5, 25, reports.MetricKwokPodWatchReplays, 20},
		{kwok.KwokWatchRelist, 5, 5, reports.MetricKwokPodWatchReplays, 0},
		{kwok.KwokWatchRelist, 25, 3, reports.MetricKwokPodWatchReplays, 0},
		// The patched kwok resumes its watch: a close is no replay.
		{kwok.KwokWatchResume, 5, 25, reports.MetricKwokPodWatchCloses, 20},
	} {
		got := kwokClosesMetric(tc.watch, tc.start, tc.end)
		if want := (reports.ExtraMetric{Name: tc.wantName, Value: tc.wantValue}); got != want {
			t.Errorf("kwokClosesMetric(%s, %d, %d) = %+v, want %+v", tc.watch, tc.start, tc.end, got, want)
		}
	}
	if got := kwokWatchOf(&kwokCloses{watch: kwok.KwokWatchResume}); got != kwok.KwokWatchResume {
		t.Errorf("kwokWatchOf = %q, want %q", got, kwok.KwokWatchResume)
	}
	if got := kwokWatchOf(&deadComponents{}); got != "" {
		t.Errorf("kwokWatchOf(a cluster not ours) = %q, want \"\"", got)
	}
}
