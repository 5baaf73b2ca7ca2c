package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
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
