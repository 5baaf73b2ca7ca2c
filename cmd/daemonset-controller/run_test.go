package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/record"

	"github.com/dsbench/dsbench/controller"
)

// TestLeaderElectedRunReleasesLease runs the real leader-election path
// against a fake API: the replica becomes leader, turns ready, and on
// shutdown stops its workers and then releases the Lease, so that a standby
// takes over at once instead of after the lease duration.
func TestLeaderElectedRunReleasesLease(t *testing.T) {
	client := fake.NewClientset()
	c, err := controller.NewController(controller.Config{Client: client, Recorder: record.NewFakeRecorder(100)})
	if err != nil {
		t.Fatal(err)
	}
	o := newOptions()
	o.leaseNamespace = "dsbench-system"
	o.leaseDuration, o.renewDeadline, o.retryPeriod = 3*time.Second, 2*time.Second, 100*time.Millisecond
	watchdog := leaderelection.NewLeaderHealthzAdaptor(time.Second)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	c.StartInformers(ctx)
	done := make(chan error, 1)
	const id = "replica-a_00000001"
	go func() { done <- runLeaderElected(ctx, o, id, client, c, watchdog) }()

	leases := client.CoordinationV1().Leases(o.leaseNamespace)
	holder := func(ctx context.Context) string {
		l, err := leases.Get(ctx, o.leaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return holder(ctx) != "", nil
	}); err != nil {
		t.Fatalf("never became leader: %v", err)
	}
	if h := holder(ctx); h != id {
		t.Errorf("Lease holder %q, want the identity %q that the user agent carries", h, id)
	}

	health := healthMux(c, watchdog)
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		rec := httptest.NewRecorder()
		health.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		return rec.Code == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("never became ready: %v", err)
	}
	rec := httptest.NewRecorder()
	health.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/healthz = %d %s", rec.Code, rec.Body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("runLeaderElected after shutdown = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runLeaderElected did not return after shutdown")
	}
	if h := holder(context.Background()); h != "" {
		t.Errorf("Lease still held by %q after shutdown, want released", h)
	}
}

func TestReadyzBeforeCachesSync(t *testing.T) {
	c, err := controller.NewController(controller.Config{Client: fake.NewClientset(), Recorder: record.NewFakeRecorder(1)})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	healthMux(c, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before sync = %d, want 503", rec.Code)
	}
	rec = httptest.NewRecorder()
	healthMux(c, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200 (alive while syncing)", rec.Code)
	}
}

func TestSelfSignedNames(t *testing.T) {
	tests := []struct {
		bindAddr, hostname string
		want               []string
	}{
		{":8443", "controller-7d9f", []string{"127.0.0.1", "controller-7d9f"}},
		{"0.0.0.0:8443", "controller-7d9f", []string{"127.0.0.1", "controller-7d9f"}},
		{"[::]:8443", "", []string{"127.0.0.1"}},
		{"10.0.0.7:8443", "controller-7d9f", []string{"127.0.0.1", "controller-7d9f", "10.0.0.7"}},
		{"127.0.0.1:8443", "localhost", []string{"127.0.0.1"}},
		{"metrics.example:8443", "", []string{"127.0.0.1", "metrics.example"}},
	}
	for _, tt := range tests {
		host, alternates := selfSignedNames(tt.bindAddr, tt.hostname)
		if host != "localhost" || !slices.Equal(alternates, tt.want) {
			t.Errorf("selfSignedNames(%q, %q) = %q, %q; want localhost, %q", tt.bindAddr, tt.hostname, host, alternates, tt.want)
		}
	}
}

// fakeReviewAPI is an API server that answers only TokenReviews (token
// "reader" is user "prometheus", "other" is "nobody") and
// SubjectAccessReviews (prometheus may get /metrics), in JSON only.
func fakeReviewAPI(t *testing.T) *httptest.Server {
	t.Helper()
	reply := func(w http.ResponseWriter, obj any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(obj)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		var review authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		users := map[string]string{"reader": "prometheus", "other": "nobody"}
		if name, ok := users[review.Spec.Token]; ok {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: name}}
		}
		reply(w, review)
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		var review authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		nr := review.Spec.NonResourceAttributes
		review.Status.Allowed = review.Spec.User == "prometheus" && nr != nil && nr.Verb == "get" && nr.Path == "/metrics"
		reply(w, review)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestSecureMetricsServing runs what --secure-metrics serves against a fake
// API server: the health endpoints open, /metrics behind the reviews.
func TestSecureMetricsServing(t *testing.T) {
	c, err := controller.NewController(controller.Config{Client: fake.NewClientset(), Recorder: record.NewFakeRecorder(1)})
	if err != nil {
		t.Fatal(err)
	}
	o, err := parse([]string{"--secure-metrics"})
	if err != nil {
		t.Fatal(err)
	}
	api := fakeReviewAPI(t)
	restConfig := &rest.Config{Host: api.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
	h, tlsConf, err := o.secureMetricsServing(testr.New(t), restConfig, controller.NewMetrics(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = tlsConf
	srv.StartTLS()
	defer srv.Close()
	// The certificate is self-signed: nothing here could verify it.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}

	tests := []struct {
		path, token string
		wantCode    int
		wantBody    string
	}{
		{path: "/healthz", wantCode: 200, wantBody: "ok"},
		{path: "/readyz", wantCode: 503, wantBody: "informer caches not synced"}, // served, not refused
		{path: "/metrics", wantCode: 401},
		{path: "/metrics", token: "forged", wantCode: 401},
		{path: "/metrics", token: "other", wantCode: 403, wantBody: `User "nobody" cannot get path "/metrics"`},
		{path: "/metrics", token: "reader", wantCode: 200, wantBody: "go_goroutines"},
		{path: "/debug/pprof/", token: "reader", wantCode: 403},
	}
	for _, tt := range tests {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+tt.path, nil)
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
			t.Errorf("GET %s with token %q: %d %.200q, want %d and a body with %q", tt.path, tt.token, resp.StatusCode, body, tt.wantCode, tt.wantBody)
		}
	}
}

func TestProfilingOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		srv := httptest.NewServer(metricsMux(controller.NewMetrics(), on))
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline"} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if want := map[bool]int{false: 404, true: 200}[on]; resp.StatusCode != want {
				t.Errorf("--profiling=%v: GET %s = %d, want %d", on, path, resp.StatusCode, want)
			}
		}
		srv.Close()
	}
}
