package controller

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dsbench/dsbench/controller/internal/cputime"
)

// BenchmarkSyncDaemonSet measures one sync of one DaemonSet that has nothing
// to do but compute its status, which is how the worker spends its time while
// kwok marks pods Ready: every pod event syncs the whole DaemonSet again.
//
// In steady state every node runs a ready, updated pod. Mid-rollout half the
// pods run the previous template and the rollout's budget (maxUnavailable 1)
// is spent on one new pod that is not ready yet, so the rolling update runs
// in full and deletes nothing. The controller is configured as the binary
// is (StatusInterval), and the cache holds the status the first sync wrote,
// so a sync writes nothing: the benchmark fails if it does. cpu-ns/op is
// the CPU time of the process per sync, the garbage collector's included.
func BenchmarkSyncDaemonSet(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		for _, rolling := range []bool{false, true} {
			name := fmt.Sprintf("nodes=%d", n)
			if rolling {
				name += "/rolling"
			}
			b.Run(name, func(b *testing.B) { benchmarkSync(b, n, rolling) })
		}
	}
}

func benchmarkSync(b *testing.B, n int, rolling bool) {
	ds := newDaemonSet("agent")
	rev := currentRevision(b, ds)
	objs := []runtime.Object{ds, rev}
	var prev *appsv1.DaemonSet // the template before the rollout
	if rolling {
		prev = ds.DeepCopy()
		ds.Generation = 2
		ds.Annotations = map[string]string{"deprecated.daemonset.template.generation": "2"}
		ds.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.11"
		rev = currentRevision(b, ds)
		rev.Revision = 2
		objs = []runtime.Object{ds, currentRevision(b, prev), rev}
	}
	for i := range n {
		node := fmt.Sprintf("node-%05d", i)
		pod := newPodFor(ds, "agent-"+node, node)
		switch {
		case rolling && i%2 == 0:
			pod = newPodFor(prev, "agent-"+node, node)
		case rolling && i == 1:
			pod.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		objs = append(objs, newNode(node, map[string]string{"kubernetes.io/hostname": node}), pod)
	}
	f := newFixture(b, objs, func(c *Config) { c.StatusInterval = DefaultStatusInterval })
	key := dsKey(ds)

	// The first sync writes the status; the informer then delivers it.
	if err := f.sync(key); err != nil {
		b.Fatalf("first sync: %v", err)
	}
	if got := summarize(f.actions()); len(got) != 1 || !strings.HasPrefix(got[0], "update daemonsets/status") {
		b.Fatalf("first sync actions = %q, want a status write only", got)
	}
	written, err := f.client.AppsV1().DaemonSets(ds.Namespace).Get(b.Context(), ds.Name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	f.addToCache(written)
	f.actions()
	if want := int32(n / 2); rolling && written.Status.UpdatedNumberScheduled != want {
		b.Fatalf("updatedNumberScheduled = %d, want %d", written.Status.UpdatedNumberScheduled, want)
	}
	if written.Status.DesiredNumberScheduled != int32(n) || written.Status.CurrentNumberScheduled != int32(n) {
		b.Fatalf("status = %+v, want %d nodes served", written.Status, n)
	}

	ctx := b.Context()
	b.ReportAllocs()
	cpu := cputime.Must(b)
	for b.Loop() {
		if err := f.c.syncDaemonSet(ctx, key); err != nil {
			b.Fatalf("sync: %v", err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cputime.Must(b)-cpu)/float64(b.N), "cpu-ns/op")
	if got := summarize(f.actions()); len(got) != 0 {
		b.Fatalf("syncs in the loop made API calls %q, want none", got)
	}
	if got := f.delayed.takeAfter(); len(got) != 0 {
		b.Fatalf("syncs in the loop requeued %q, want nothing", got)
	}
	if got := f.events(); len(got) != 0 {
		b.Fatalf("syncs in the loop recorded events %q, want none", got)
	}
}
