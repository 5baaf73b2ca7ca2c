package controller

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestRequestVerbResource(t *testing.T) {
	tests := []struct {
		method, url            string
		wantVerb, wantResource string
	}{
		{"GET", "/api/v1/pods?limit=500", "list", "pods"},
		{"GET", "/api/v1/pods?watch=true&resourceVersion=5", "watch", "pods"},
		{"GET", "/api/v1/watch/pods", "watch", "pods"},
		{"GET", "/api/v1/namespaces/default/pods/p1", "get", "pods"},
		{"POST", "/api/v1/namespaces/default/pods", "create", "pods"},
		{"DELETE", "/api/v1/namespaces/default/pods/p1", "delete", "pods"},
		{"DELETE", "/api/v1/namespaces/default/pods", "deletecollection", "pods"},
		{"PATCH", "/api/v1/namespaces/default/pods/p1", "patch", "pods"},
		{"PUT", "/apis/apps/v1/namespaces/default/daemonsets/ds/status", "update", "daemonsets/status"},
		{"GET", "/apis/apps/v1/daemonsets", "list", "daemonsets"},
		{"POST", "/apis/apps/v1/namespaces/default/controllerrevisions", "create", "controllerrevisions"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/dsbench", "update", "leases"},
		{"GET", "/api/v1/nodes/n1", "get", "nodes"},
		{"GET", "/api/v1/namespaces/default", "get", "namespaces"},
		{"PUT", "/api/v1/namespaces/default/finalize", "update", "namespaces/finalize"},
		{"GET", "/version", "get", ""},
		{"GET", "/apis", "get", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.url, nil)
			verb, res := requestVerbResource(req)
			if verb != tt.wantVerb || res != tt.wantResource {
				t.Errorf("got %s %q, want %s %q", verb, res, tt.wantVerb, tt.wantResource)
			}
		})
	}
}

type okTransport struct{}

func (okTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

// metricValue finds the value of a counter or gauge with exactly labels.
func metricValue(t *testing.T, m *Metrics, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
		for _, metric := range fam.GetMetric() {
			got := map[string]string{}
			for _, l := range metric.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if !cmp.Equal(got, labels) {
				continue
			}
			switch {
			case metric.Counter != nil:
				return metric.GetCounter().GetValue(), true
			case metric.Gauge != nil:
				return metric.GetGauge().GetValue(), true
			case metric.Histogram != nil:
				return float64(metric.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func TestTransportCountsRequests(t *testing.T) {
	m := NewMetrics()
	rt := m.WrapTransport(okTransport{})
	for _, r := range []struct{ method, url string }{
		{"POST", "https://api/api/v1/namespaces/default/pods"},
		{"POST", "https://api/api/v1/namespaces/kube-system/pods"},
		{"GET", "https://api/api/v1/pods?watch=1"},
	} {
		if _, err := rt.RoundTrip(httptest.NewRequest(r.method, r.url, nil)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		verb string
		want float64
	}{{"create", 2}, {"watch", 1}} {
		got, ok := metricValue(t, m, "dsbench_controller_api_requests_total", map[string]string{"verb": c.verb, "resource": "pods"})
		if !ok || got != c.want {
			t.Errorf("api_requests_total{verb=%q} = %v (found %v), want %v", c.verb, got, ok, c.want)
		}
	}
	// The endpoint serves the name the bench scrapes.
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `dsbench_controller_api_requests_total{resource="pods",verb="create"} 2`) {
		t.Errorf("/metrics lacks the API request counter:\n%s", rec.Body.String())
	}
}

func TestSyncMetrics(t *testing.T) {
	ds := newDaemonSet("agent")
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil), newNode("n2", nil)},
		func(c *Config) { c.PodUpdateBatch, c.PodUpdateBatchCostFactor = 30*time.Millisecond, 40 })
	m := f.c.Metrics()
	f.c.enqueue(ds)
	f.queued()
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatal(err)
	}
	dsLabels := map[string]string{"namespace": "default", "name": "agent"}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"dsbench_controller_daemonset_desired_number_scheduled", dsLabels, 2},
		{"dsbench_controller_daemonset_updated_number_scheduled", dsLabels, 0},
		{"dsbench_controller_daemonset_number_available", dsLabels, 0},
		{"dsbench_controller_pods_created_total", map[string]string{"reason": createReason}, 2},
		{"dsbench_controller_daemonset_syncs_total", dsLabels, 1},
		{"dsbench_controller_daemonset_pod_update_batch_seconds", dsLabels, 0.03}, // the fake clock makes plans free
		{"dsbench_controller_sync_duration_seconds", map[string]string{"result": "success"}, 1},
		{"dsbench_controller_workqueue_adds_total", map[string]string{"name": "daemonset"}, 1},
	}
	for _, c := range checks {
		if got, ok := metricValue(t, m, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}

	// A deleted DaemonSet's series go away.
	if err := f.factory.Apps().V1().DaemonSets().Informer().GetIndexer().Delete(ds); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dsbench_controller_daemonset_desired_number_scheduled", "dsbench_controller_daemonset_syncs_total", "dsbench_controller_daemonset_pod_update_batch_seconds"} {
		if _, ok := metricValue(t, m, name, dsLabels); ok {
			t.Errorf("%s of a deleted DaemonSet is still exported", name)
		}
	}
}
