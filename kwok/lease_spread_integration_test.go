package kwok_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/kwok/kwoktest"
)

// Nodes made together renew their Leases at phases spread over the renewal
// interval (kwok-lease-spread.patch), as kubelets started at different
// times do. kwok as released renews them all within 2 s of each other every
// 50 s: at 1000 nodes a burst of 1000 writes in about 5 s, which slowed
// whatever step ran beside it.
func TestKwokSpreadsLeaseRenewals(t *testing.T) {
	cluster, _, client := kwoktest.Cluster(t)
	ctx := t.Context()
	pool := kwok.NodePool{Prefix: "leasespread", Count: 60}
	removeAtEnd(t, client, pool, "leasespread-test")
	createSchedulable(t, client, pool)

	// The renewal interval is a quarter of the lease's duration.
	names := pool.NodeNames()
	lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, names[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	interval := time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second / 4

	// Each lease's first renewal: the first renewTime seen past its
	// creation (kwok creates it with renewTime now; creationTimestamp is
	// truncated to the second). Two intervals: a renewal that fails is tried
	// again one interval later, as kwok as released does, and that lease's
	// phase is still its own. One fails when kwok's lease cache has not yet
	// seen the lease: as released, kwok's lease cache keeps client-go's
	// backoff of up to a minute after kube-apiserver went away (a test
	// before this one restarts it; kwok-outage-recovery.patch now caps it).
	// The loop ends as soon as every lease renewed.
	renewed := map[string]time.Time{}
	waited := 2*interval + 15*time.Second
	deadline := time.Now().Add(waited)
	for len(renewed) < len(names) && time.Now().Before(deadline) {
		list, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list.Items {
			if !slices.Contains(names, l.Name) || l.Spec.RenewTime == nil || !renewed[l.Name].IsZero() {
				continue
			}
			if at := l.Spec.RenewTime.Time; at.Sub(l.CreationTimestamp.Time) > 1500*time.Millisecond {
				renewed[l.Name] = at
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(renewed) < len(names)*9/10 {
		var late []string
		for _, n := range names {
			if renewed[n].IsZero() {
				late = append(late, n)
			}
		}
		t.Logf("not renewed: %v", late)
		t.Logf("kwok's failed lease syncs: %s", failedLeaseSyncs(filepath.Join(cluster.LogDir(), "kwok-controller.log")))
		t.Logf("cluster: %s", cluster.Diagnose(ctx))
		t.Fatalf("%d of %d leases renewed within %v of the nodes being schedulable, want at least 90%%", len(renewed), len(names), waited)
	}

	// Spread: the most renewals in any 5-s window. Uniform over the
	// interval, about a tenth fall in one; all of them, unpatched.
	var times []time.Time
	for _, at := range renewed {
		times = append(times, at)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	const window = 5 * time.Second
	most := 0
	for i := range times {
		j := i
		for j < len(times) && times[j].Sub(times[i]) < window {
			j++
		}
		most = max(most, j-i)
	}
	t.Logf("%d first renewals over %v; at most %d in one %v window", len(times), times[len(times)-1].Sub(times[0]).Round(time.Second), most, window)
	if limit := len(times) * 2 / 5; most > limit {
		t.Errorf("%d of %d first renewals fell within one %v window, want at most %d: the renewals are not spread over the %v interval", most, len(times), window, limit, interval)
	}
	if spanned := times[len(times)-1].Sub(times[0]); spanned < interval/2 {
		t.Errorf("the first renewals spanned %v, want at least half the %v interval", spanned.Round(time.Second), interval)
	}
}

// failedLeaseSyncs counts kwok's "Failed to sync lease" lines in its log and
// quotes the last, to say why a lease was not renewed.
func failedLeaseSyncs(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var failed []string
	for line := range strings.Lines(string(raw)) {
		if strings.Contains(line, "Failed to sync lease") {
			failed = append(failed, strings.TrimSpace(line))
		}
	}
	if len(failed) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d, the last: %s", len(failed), failed[len(failed)-1])
}
