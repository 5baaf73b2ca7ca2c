package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/dsbench/dsbench/controller/internal/pacing"
	"github.com/dsbench/dsbench/controller/plan"
)

func TestSyncCreatesOnEligibleNodesOnly(t *testing.T) {
	ds := newDaemonSet("agent", withNodeSelector(map[string]string{"role": "worker"}))
	objs := []runtime.Object{
		ds,
		newNode("n1", map[string]string{"role": "worker"}),
		newNode("n2", map[string]string{"role": "worker"}, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}),
		newNode("n3", map[string]string{"role": "infra"}),
		// Tolerated by the auto-added tolerations.
		newNode("n4", map[string]string{"role": "worker"}, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}),
	}
	for _, mode := range []plan.BindMode{plan.BindScheduler, plan.BindDirect} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t, objs, func(c *Config) { c.BindMode = mode })
			if err := f.sync(dsKey(ds)); err != nil {
				t.Fatalf("sync: %v", err)
			}
			actions := f.actions()
			hash := currentHash(ds)
			want := []string{
				"create controllerrevisions agent-" + hash,
				"create pods on n1",
				"create pods on n4",
				"update daemonsets/status agent",
			}
			if diff := cmp.Diff(want, summarize(actions)); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}

			pod := actions[1].(core.CreateAction).GetObject().(*corev1.Pod)
			if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash || pod.Labels[plan.TemplateGenerationLabelKey] != "1" || pod.Labels["app"] != "agent" {
				t.Errorf("pod labels = %v", pod.Labels)
			}
			ref := metav1.GetControllerOf(pod)
			if ref == nil || ref.UID != ds.UID || !ptr.Deref(ref.BlockOwnerDeletion, false) {
				t.Errorf("pod ControllerRef = %+v", ref)
			}
			switch mode {
			case plan.BindDirect:
				if pod.Spec.NodeName != "n1" {
					t.Errorf("direct mode: spec.nodeName = %q, want n1", pod.Spec.NodeName)
				}
			case plan.BindScheduler:
				if pod.Spec.NodeName != "" || targetNodeName(pod) != "n1" {
					t.Errorf("scheduler mode: nodeName %q, pinned to %q; want unbound, pinned to n1", pod.Spec.NodeName, targetNodeName(pod))
				}
			}

			status := actions[3].(core.UpdateAction).GetObject().(*appsv1.DaemonSet).Status
			wantStatus := appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, NumberUnavailable: 2, ObservedGeneration: 1}
			if diff := cmp.Diff(wantStatus, status); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if adds, dels := f.c.expectations.Pending(dsKey(ds)); adds != 2 || dels != 0 {
				t.Errorf("pending expectations = %d adds, %d dels; want 2, 0", adds, dels)
			}
			if got := f.events(); len(got) != 2 || !strings.Contains(got[0], SuccessfulCreateReason) {
				t.Errorf("events = %q, want two %s", got, SuccessfulCreateReason)
			}
		})
	}
}

func TestSyncAdoptsOrphan(t *testing.T) {
	ds := newDaemonSet("agent")
	rev := currentRevision(t, ds)
	pod := orphan(newPodFor(ds, "agent-orphan", "n1"))
	f := newFixture(t, []runtime.Object{ds, rev, newNode("n1", nil), pod})
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync: %v", err)
	}
	actions := f.actions()
	want := []string{
		"get daemonsets agent", // the quorum read before adopting
		"patch pods agent-orphan",
		"update daemonsets/status agent",
	}
	if diff := cmp.Diff(want, summarize(actions)); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	var patch struct {
		Metadata struct {
			UID             string                  `json:"uid"`
			OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(actions[1].(core.PatchAction).GetPatch(), &patch); err != nil {
		t.Fatal(err)
	}
	if patch.Metadata.UID != string(pod.UID) || len(patch.Metadata.OwnerReferences) != 1 ||
		patch.Metadata.OwnerReferences[0].UID != ds.UID || !ptr.Deref(patch.Metadata.OwnerReferences[0].Controller, false) {
		t.Errorf("adoption patch = %+v", patch)
	}
	// The adopted pod counts: status says the node is served.
	status := actions[2].(core.UpdateAction).GetObject().(*appsv1.DaemonSet).Status
	if status.CurrentNumberScheduled != 1 || status.NumberReady != 1 {
		t.Errorf("status = %+v, want the adopted pod counted", status)
	}
}

// A DaemonSet deleted with cascade orphan and created again: the garbage
// collector's release of a pod can reach the cache while the sync adopts
// the others, one request each. Created beside it, a second pod would
// run on that node until a later sync deleted one (many-daemonsets at 1000
// nodes: 65 to 691 nodes per run). The node waits for the next sync, which
// adopts the late orphan.
func TestSyncDoesNotCreateBesideAnOrphanThatArrivedDuringAdoption(t *testing.T) {
	ds := newDaemonSet("agent")
	rev := currentRevision(t, ds)
	early := orphan(newPodFor(ds, "agent-early", "n1"))
	// Still controlled by the deleted DaemonSet when the sync reads the cache.
	late := newPodFor(ds, "agent-late", "n2")
	late.OwnerReferences[0].UID = "uid-deleted-agent"
	f := newFixture(t, []runtime.Object{ds, rev, newNode("n1", nil), newNode("n2", nil), newNode("n3", nil), early, late})
	released := false
	f.client.PrependReactor("patch", "pods", func(core.Action) (bool, runtime.Object, error) {
		if !released {
			released = true
			f.addToCache(orphan(late.DeepCopy()))
		}
		return false, nil, nil
	})
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync: %v", err)
	}
	want := []string{
		"get daemonsets agent",
		"patch pods agent-early",
		"create pods on n3", // no pod at all there
		"update daemonsets/status agent",
	}
	if diff := cmp.Diff(want, summarize(f.actions())); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	if got := f.queued(); !slices.Contains(got, dsKey(ds)) {
		t.Errorf("queued = %q, want %s again for the late orphan", got, dsKey(ds))
	}

	// The next sync adopts it, with the first adoption back in the cache.
	f.addToCache(newPodFor(ds, "agent-early", "n1"))
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	got := summarize(f.actions())
	if !slices.Contains(got, "patch pods agent-late") || slices.Contains(got, "create pods on n2") {
		t.Errorf("second sync: actions %q, want agent-late adopted and nothing created on n2", got)
	}
}

// A DaemonSet deleted with cascade orphan and created again at once: the
// garbage collector released every pod before the old one was gone, but the
// pod watch can trail the DaemonSet watch, and the new DaemonSet's first
// sync then sees pods still controlled by the deleted one. Upstream ignores
// them and creates beside them (164 duplicates in one run of
// many-daemonsets at 1000 nodes); the node waits instead, for at most
// staleOwnerHold after the DaemonSet's creation.
func TestSyncHoldsNodesWhosePodsDaemonSetIsGone(t *testing.T) {
	young := func(ds *appsv1.DaemonSet) { ds.CreationTimestamp = metav1.NewTime(t0.Add(-time.Second)) }
	// staleOn is a pod on n1 that ds's selector matches, controlled by a
	// DaemonSet of ds's name that the cache no longer has.
	staleOn := func(ds *appsv1.DaemonSet) *corev1.Pod {
		p := newPodFor(ds, "agent-old", "n1")
		p.OwnerReferences[0].UID = "uid-deleted-agent"
		return p
	}
	// beingDeletedWith is a DaemonSet like ds being deleted with finalizer,
	// and its pod on n1.
	beingDeletedWith := func(finalizer string) func(ds *appsv1.DaemonSet) []runtime.Object {
		return func(ds *appsv1.DaemonSet) []runtime.Object {
			old := newDaemonSet("old-agent", func(old *appsv1.DaemonSet) {
				old.Spec = ds.Spec
				old.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
				old.Finalizers = []string{finalizer}
			})
			return []runtime.Object{old, newPodFor(old, "agent-old", "n1")}
		}
	}
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		// objs beside ds, its revision and nodes n1 and n2.
		objs   func(ds *appsv1.DaemonSet) []runtime.Object
		wantN1 bool // whether the sync creates on n1
	}{{
		name:   "its controller is gone",
		ds:     newDaemonSet("agent", young),
		objs:   func(ds *appsv1.DaemonSet) []runtime.Object { return []runtime.Object{staleOn(ds)} },
		wantN1: false,
	}, {
		name:   "its controller is being deleted with its pods orphaned",
		ds:     newDaemonSet("agent", young),
		objs:   beingDeletedWith(metav1.FinalizerOrphanDependents),
		wantN1: false,
	}, {
		// Its pods are deleted, not released: as upstream.
		name:   "its controller is being deleted in the foreground",
		ds:     newDaemonSet("agent", young),
		objs:   beingDeletedWith(metav1.FinalizerDeleteDependents),
		wantN1: true,
	}, {
		// Overlapping selectors: the other DaemonSet's pod is its own, as
		// upstream.
		name: "its controller is another live DaemonSet",
		ds:   newDaemonSet("agent", young),
		objs: func(ds *appsv1.DaemonSet) []runtime.Object {
			other := newDaemonSet("other-agent", func(o *appsv1.DaemonSet) { o.Spec = ds.Spec })
			return []runtime.Object{other, newPodFor(other, "agent-old", "n1")}
		},
		wantN1: true,
	}, {
		name: "it is terminating",
		ds:   newDaemonSet("agent", young),
		objs: func(ds *appsv1.DaemonSet) []runtime.Object {
			p := staleOn(ds)
			p.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
			return []runtime.Object{p}
		},
		wantN1: true,
	}, {
		name: "it failed",
		ds:   newDaemonSet("agent", young),
		objs: func(ds *appsv1.DaemonSet) []runtime.Object {
			p := staleOn(ds)
			p.Status.Phase = corev1.PodFailed
			return []runtime.Object{p}
		},
		wantN1: true,
	}, {
		name: "the selector does not match it",
		ds:   newDaemonSet("agent", young),
		objs: func(ds *appsv1.DaemonSet) []runtime.Object {
			p := staleOn(ds)
			p.Labels = map[string]string{"app": "something-else"}
			return []runtime.Object{p}
		},
		wantN1: true,
	}, {
		name: "its controller is a ReplicaSet that is gone",
		ds:   newDaemonSet("agent", young),
		objs: func(ds *appsv1.DaemonSet) []runtime.Object {
			p := staleOn(ds)
			p.OwnerReferences[0].Kind = "ReplicaSet"
			return []runtime.Object{p}
		},
		wantN1: true,
	}, {
		// Past the hold, or a controller restarted long after: what the
		// pod is waiting for may never come (no garbage collector).
		name: "the DaemonSet is older than the hold",
		ds: newDaemonSet("agent", func(ds *appsv1.DaemonSet) {
			ds.CreationTimestamp = metav1.NewTime(t0.Add(-staleOwnerHold))
		}),
		objs:   func(ds *appsv1.DaemonSet) []runtime.Object { return []runtime.Object{staleOn(ds)} },
		wantN1: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := append([]runtime.Object{tt.ds, currentRevision(t, tt.ds), newNode("n1", nil), newNode("n2", nil)}, tt.objs(tt.ds)...)
			f := newFixture(t, objs)
			if err := f.sync(dsKey(tt.ds)); err != nil {
				t.Fatalf("sync: %v", err)
			}
			want := []string{"create pods on n1", "create pods on n2", "update daemonsets/status agent"}
			if !tt.wantN1 {
				want = want[1:]
			}
			if diff := cmp.Diff(want, summarize(f.actions())); diff != "" {
				t.Fatalf("actions (-want +got):\n%s", diff)
			}
			after := f.delayed.takeAfter()
			wantAfter := dsKey(tt.ds) + " 4s" // the hold's end: created 1 s ago
			if got := slices.Contains(after, wantAfter); got == tt.wantN1 {
				t.Errorf("requeued after %q, want %q: %v", after, wantAfter, !tt.wantN1)
			}
		})
	}
}

// The held node gets our pod once its old one is released (adopted), or
// once the hold is over; its deletion by the garbage collector wakes us.
func TestSyncStaleOwnerHoldEnds(t *testing.T) {
	newFixtureWithStalePod := func(t *testing.T) (*fixture, *appsv1.DaemonSet, *corev1.Pod) {
		ds := newDaemonSet("agent", func(ds *appsv1.DaemonSet) { ds.CreationTimestamp = metav1.NewTime(t0) })
		stale := newPodFor(ds, "agent-old", "n1")
		stale.OwnerReferences[0].UID = "uid-deleted-agent"
		f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil), stale})
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if got := summarize(filterActions(f.actions(), "create")); len(got) != 0 {
			t.Fatalf("first sync created %q, want the node held", got)
		}
		f.queued()
		return f, ds, stale
	}
	t.Run("released", func(t *testing.T) {
		f, ds, stale := newFixtureWithStalePod(t)
		released := orphan(stale.DeepCopy())
		released.ResourceVersion = "2"
		f.addToCache(released)
		f.c.updatePod(stale, released)
		if got := f.queued(); !slices.Contains(got, dsKey(ds)) {
			t.Fatalf("queued after the release = %q, want %s", got, dsKey(ds))
		}
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		want := []string{"get daemonsets agent", "patch pods agent-old", "update daemonsets/status agent"}
		if diff := cmp.Diff(want, summarize(f.actions())); diff != "" {
			t.Fatalf("actions (-want +got):\n%s", diff)
		}
	})
	t.Run("deleted by the garbage collector", func(t *testing.T) {
		f, ds, stale := newFixtureWithStalePod(t)
		if err := f.factory.Core().V1().Pods().Informer().GetIndexer().Delete(stale); err != nil {
			t.Fatal(err)
		}
		f.c.deletePod(stale)
		if got := f.queued(); !slices.Contains(got, dsKey(ds)) {
			t.Fatalf("queued after the deletion = %q, want %s", got, dsKey(ds))
		}
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if got := summarize(filterActions(f.actions(), "create")); !slices.Equal(got, []string{"create pods on n1"}) {
			t.Fatalf("creates = %q, want one on n1", got)
		}
	})
	t.Run("hold over", func(t *testing.T) {
		f, ds, _ := newFixtureWithStalePod(t)
		f.clock.Step(staleOwnerHold)
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if got := summarize(filterActions(f.actions(), "create")); !slices.Equal(got, []string{"create pods on n1"}) {
			t.Fatalf("creates = %q, want one on n1 beside the stale pod, as upstream", got)
		}
	})
}

// A pod of another namespace is never ours, however it names us. Counted as
// ours, it would leave its node without our pod.
func TestSyncIgnoresPodsOfOtherNamespaces(t *testing.T) {
	tests := []struct {
		name string
		// ns and uid of the DaemonSet; the stranger pod is made from it.
		ns, uid  string
		stranger func(ds *appsv1.DaemonSet) *corev1.Pod
	}{{
		// An ownerReference never crosses namespaces: upstream lists only
		// the DaemonSet's namespace, and the garbage collector treats such
		// an owner as absent.
		name: "a pod whose ControllerRef carries our UID",
		ns:   metav1.NamespaceDefault, uid: "uid-agent",
		stranger: func(ds *appsv1.DaemonSet) *corev1.Pod {
			p := newPodFor(ds, "agent-foreign", "n1")
			p.Namespace = ds.Namespace + "-other"
			return p
		},
	}, {
		// The pod index's keys of owners and of orphans never meet.
		name: "an orphan of a namespace named like our UID, for a DaemonSet in namespace orphan",
		ns:   "orphan", uid: "uid-agent",
		stranger: func(ds *appsv1.DaemonSet) *corev1.Pod {
			p := orphan(newPodFor(ds, "agent-elsewhere", "n1"))
			p.Namespace = string(ds.UID)
			return p
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDaemonSet("agent", func(ds *appsv1.DaemonSet) {
				ds.Namespace, ds.UID = tt.ns, types.UID(tt.uid)
			})
			f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil), tt.stranger(ds)})
			if err := f.sync(dsKey(ds)); err != nil {
				t.Fatalf("sync: %v", err)
			}
			want := []string{"create pods on n1", "update daemonsets/status agent"}
			if diff := cmp.Diff(want, summarize(f.actions())); diff != "" {
				t.Fatalf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSyncDoesNotAdoptWhenDaemonSetIsBeingDeleted(t *testing.T) {
	ds := newDaemonSet("agent")
	rev := currentRevision(t, ds)
	pod := orphan(newPodFor(ds, "agent-orphan", "n1"))
	f := newFixture(t, []runtime.Object{ds, rev, newNode("n1", nil), pod})
	// The cache has not seen the deletion yet; the live read has.
	live := ds.DeepCopy()
	live.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	live.Finalizers = []string{"foregroundDeletion"}
	if err := f.client.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("daemonsets"), live, ds.Namespace); err != nil {
		t.Fatal(err)
	}
	err := f.sync(dsKey(ds))
	if err == nil || !strings.Contains(err.Error(), "being deleted") {
		t.Fatalf("sync error = %v, want a refusal to adopt", err)
	}
	if diff := cmp.Diff([]string{"get daemonsets agent"}, summarize(f.actions())); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

func TestSyncReleasesPodThatNoLongerMatches(t *testing.T) {
	ds := newDaemonSet("agent")
	rev := currentRevision(t, ds)
	pod := newPodFor(ds, "agent-relabelled", "n1")
	pod.Labels = map[string]string{"app": "debug"}
	f := newFixture(t, []runtime.Object{ds, rev, newNode("n1", nil), pod})
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync: %v", err)
	}
	actions := f.actions()
	want := []string{
		"patch pods agent-relabelled",
		"create pods on n1", // the released pod no longer serves the node
		"update daemonsets/status agent",
	}
	if diff := cmp.Diff(want, summarize(actions)); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	patch := string(actions[0].(core.PatchAction).GetPatch())
	if !strings.Contains(patch, `"$patch":"delete"`) || !strings.Contains(patch, string(ds.UID)) {
		t.Errorf("release patch = %s", patch)
	}
}

func TestSyncNoDoubleCreateWhileExpectationsUnsatisfied(t *testing.T) {
	ds := newDaemonSet("agent")
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)})
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	created := filterActions(f.actions(), "create pods")
	if len(created) != 1 {
		t.Fatalf("first sync created %d pods, want 1", len(created))
	}
	// The informer has not seen the pod: a second sync must not create again.
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if got := filterActions(f.actions(), "create pods"); len(got) != 0 {
		t.Fatalf("second sync created %d pods while expectations were unsatisfied", len(got))
	}
	// Observing the creation satisfies them and wakes the DaemonSet.
	pod := created[0].(core.CreateAction).GetObject().(*corev1.Pod)
	f.c.addPod(pod)
	if !f.c.expectations.Satisfied(dsKey(ds)) {
		t.Error("expectations unsatisfied after the pod was observed")
	}
	if diff := cmp.Diff([]string{dsKey(ds)}, f.queued()); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
}

func TestSyncFailedCreateLowersExpectations(t *testing.T) {
	ds := newDaemonSet("agent")
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)})
	fails := 1
	f.client.PrependReactor("create", "pods", func(core.Action) (bool, runtime.Object, error) {
		if fails > 0 {
			fails--
			return true, nil, apierrors.NewServiceUnavailable("etcd is sad")
		}
		return false, nil, nil
	})
	err := f.sync(dsKey(ds))
	if err == nil || !strings.Contains(err.Error(), "creating pod on node n1") {
		t.Fatalf("sync error = %v, want the create failure (so the key is requeued with backoff)", err)
	}
	if !f.c.expectations.Satisfied(dsKey(ds)) {
		t.Fatal("a failed create left expectations unsatisfied: the DaemonSet would stall until the TTL (upstream #72155)")
	}
	f.actions()
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := filterActions(f.actions(), "create pods"); len(got) != 1 {
		t.Errorf("retry created %d pods, want 1", len(got))
	}
	if ev := f.events(); !slices.ContainsFunc(ev, func(e string) bool { return strings.Contains(e, FailedCreateReason) }) {
		t.Errorf("events = %q, want a %s", ev, FailedCreateReason)
	}
}

// kube-apiserver answers Timeout when its deadline passes while the create
// goes on, so the pod may exist (a 5000-node many-daemonsets run saw two pods
// on a node that way). The retry must not create on the node until the
// informer could have shown the pod, and creates again once the hold ends
// with no pod seen.
func TestSyncUncertainCreateIsNotRepeated(t *testing.T) {
	ds := newDaemonSet("agent")
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)})
	timeouts := 1
	f.client.PrependReactor("create", "pods", func(core.Action) (bool, runtime.Object, error) {
		if timeouts > 0 {
			timeouts--
			return true, nil, apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0)
		}
		return false, nil, nil
	})
	if err := f.sync(dsKey(ds)); !apierrors.IsTimeout(err) {
		t.Fatalf("sync error = %v, want the create's Timeout (requeued with backoff)", err)
	}
	if adds, _ := f.c.expectations.Pending(dsKey(ds)); adds != 1 {
		t.Fatalf("pending creates after the Timeout = %d, want 1: the pod may exist", adds)
	}
	f.actions()
	f.delayed.takeAfter()
	// The retry, before the hold ends: nothing to create.
	f.clock.Step(UncertainWriteHold)
	if err := f.c.syncDaemonSet(f.t.Context(), dsKey(ds)); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := filterActions(f.actions(), "create pods"); len(got) != 0 {
		t.Fatalf("the retry created %d pods while the first may exist, want 0", len(got))
	}
	if diff := cmp.Diff([]string{dsKey(ds) + " 1ns"}, f.delayed.takeAfter()); diff != "" {
		t.Errorf("delayed (-want +got):\n%s", diff)
	}
	// The hold over and no pod seen: the create did not land.
	f.clock.Step(time.Nanosecond)
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("after the hold: %v", err)
	}
	if got := filterActions(f.actions(), "create pods"); len(got) != 1 {
		t.Errorf("after the hold created %d pods, want 1", len(got))
	}
}

// A delete answered with Timeout may have started the pod's deletion: the
// pod stays counted as terminating, so no sync deletes it, or another in
// its place, again during the hold.
func TestSyncUncertainDeleteStaysInFlight(t *testing.T) {
	ds := newDaemonSet("agent", withNodeSelector(map[string]string{"role": "worker"}))
	pod := newPodFor(ds, "agent-old", "n1")
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", map[string]string{"role": "infra"}), pod})
	f.client.PrependReactor("delete", "pods", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0)
	})
	if err := f.sync(dsKey(ds)); err == nil {
		t.Fatal("sync error = nil, want the delete's Timeout")
	}
	if _, dels := f.c.expectations.Pending(dsKey(ds)); dels != 1 {
		t.Fatalf("pending deletes after the Timeout = %d, want 1", dels)
	}
	f.actions()
	if err := f.c.syncDaemonSet(f.t.Context(), dsKey(ds)); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := filterActions(f.actions(), "delete pods"); len(got) != 0 {
		t.Errorf("the retry deleted %d pods during the hold, want 0", len(got))
	}
}

func TestWriteMayHaveLanded(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"the API server's own deadline", apierrors.NewTimeoutError("request did not complete within requested timeout", 0), true},
		{"wrapped", fmt.Errorf("creating pod on node n1: %w", apierrors.NewTimeoutError("x", 0)), true},
		{"server timeout", apierrors.NewServerTimeout(gr, "create", 1), true},
		{"internal error (etcd timed out)", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), true},
		{"connection broke", fmt.Errorf("Post \"https://apiserver/api/v1/namespaces/x/pods\": %w", io.ErrUnexpectedEOF), true},
		{"client timeout", context.DeadlineExceeded, true},
		{"shutting down", fmt.Errorf("creating: %w", context.Canceled), false},
		{"unavailable", apierrors.NewServiceUnavailable("etcd is sad"), false},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), false},
		{"forbidden", apierrors.NewForbidden(gr, "", errors.New("quota")), false},
		{"already gone", apierrors.NewNotFound(gr, "agent-x"), false},
		{"conflict", apierrors.NewConflict(gr, "agent-x", errors.New("uid")), false},
	}
	for _, tt := range tests {
		if got := writeMayHaveLanded(tt.err); got != tt.want {
			t.Errorf("%s: writeMayHaveLanded(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestSyncSlowStartAndBurstCap(t *testing.T) {
	nodes := func(n int) []runtime.Object {
		var out []runtime.Object
		for i := range n {
			out = append(out, newNode(string(rune('a'+i)), nil))
		}
		return out
	}
	tests := []struct {
		name        string
		nodes       int
		burst       int
		first       int      // Config.SlowStartInitialBatch
		failNodes   []string // creates on these nodes fail
		wantCreates int      // create calls made
		wantErr     bool
	}{
		{name: "unlimited", nodes: 9, wantCreates: 9},
		{name: "burst cap", nodes: 9, burst: 4, wantCreates: 4},
		{name: "first batch fails", nodes: 9, failNodes: []string{"a"}, wantCreates: 1, wantErr: true},
		// Batches a | b c | d e f g | h i: the second fails, the rest is skipped.
		{name: "second batch fails", nodes: 9, failNodes: []string{"c"}, wantCreates: 3, wantErr: true},
		// Batches a b c | d e f g h i: the first is sent whole.
		{name: "initial batch of 3 fails", nodes: 9, first: 3, failNodes: []string{"a"}, wantCreates: 3, wantErr: true},
		// a b c | d e f g h i: the second batch is sent whole (from 1, a | b c | d e f g).
		{name: "initial batch of 3, second fails", nodes: 9, first: 3, failNodes: []string{"d"}, wantCreates: 9, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDaemonSet("agent")
			objs := append([]runtime.Object{ds, currentRevision(t, ds)}, nodes(tt.nodes)...)
			f := newFixture(t, objs, func(c *Config) { c.BurstReplicas, c.SlowStartInitialBatch = tt.burst, tt.first })
			f.client.PrependReactor("create", "pods", func(a core.Action) (bool, runtime.Object, error) {
				if slices.Contains(tt.failNodes, targetNodeName(a.(core.CreateAction).GetObject().(*corev1.Pod))) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
				}
				return false, nil, nil
			})
			err := f.sync(dsKey(ds))
			if (err != nil) != tt.wantErr {
				t.Fatalf("sync error = %v, want error %v", err, tt.wantErr)
			}
			if got := len(filterActions(f.actions(), "create pods")); got != tt.wantCreates {
				t.Errorf("create calls = %d, want %d", got, tt.wantCreates)
			}
			adds, _ := f.c.expectations.Pending(dsKey(ds))
			if want := tt.wantCreates - len(tt.failNodes); adds != want {
				t.Errorf("pending creates = %d, want %d (only successful creates are awaited)", adds, want)
			}
		})
	}
}

// Adaptive pacing puts every create through the controller's limiter (its
// limit, 32 to start with, is exported) and loses none of them. That the
// limiter bounds the calls in flight is pacing's own test; the fake client
// runs its reactors one at a time, so it cannot show concurrency here.
func TestSyncAdaptiveCreates(t *testing.T) {
	for _, adaptive := range []bool{false, true} {
		t.Run(fmt.Sprintf("adaptive=%v", adaptive), func(t *testing.T) {
			ds := newDaemonSet("agent")
			objs := []runtime.Object{ds, currentRevision(t, ds)}
			for i := range 127 { // batches 1 2 4 8 16 32 64
				objs = append(objs, newNode(fmt.Sprintf("n%03d", i), nil))
			}
			f := newFixture(t, objs, func(c *Config) { c.AdaptiveCreates = adaptive })
			if err := f.sync(dsKey(ds)); err != nil {
				t.Fatal(err)
			}
			if got := len(filterActions(f.actions(), "create pods")); got != 127 {
				t.Errorf("create calls = %d, want 127", got)
			}
			want := 0.0 // never set
			if adaptive {
				want = pacing.DefaultInitialLimit
			}
			got, _ := metricValue(t, f.c.Metrics(), MetricsNamespace+"_create_limit", map[string]string{})
			if got != want {
				t.Errorf("create_limit = %v, want %v", got, want)
			}
		})
	}
}

// Past the slow start (batches smaller than MaxCreateBatch), the creates
// stream with MaxCreateBatch in flight and stop being sent at the first
// failure; the ones not sent are not awaited.
func TestSyncStreamsCreatesAfterSlowStart(t *testing.T) {
	var objs []runtime.Object
	for i := range 12 {
		objs = append(objs, newNode(fmt.Sprintf("n%02d", i), nil))
	}
	for _, tt := range []struct {
		name string
		// failCall is the create call that fails, counted from 1; 0: none
		failCall int
		min, max int // create calls sent
	}{
		{name: "all succeed", min: 12, max: 12},
		// Batches of 1 and 2 (calls 1-3), then the stream, 4 in flight:
		// besides the failing 4th call, the 3 in flight beside it, and
		// those that the successes among them let start before the
		// failing call's goroutine has flagged the failure (3 more): no
		// create starts after that, so at most 10 of the 12.
		{name: "the first streamed create fails", failCall: 4, min: 4, max: 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDaemonSet("agent")
			f := newFixture(t, append([]runtime.Object{ds, currentRevision(t, ds)}, objs...), func(c *Config) { c.MaxCreateBatch = 4 })
			calls := 0 // the fake client runs one reactor at a time
			f.client.PrependReactor("create", "pods", func(a core.Action) (bool, runtime.Object, error) {
				if calls++; calls == tt.failCall {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
				}
				return false, nil, nil
			})
			err := f.sync(dsKey(ds))
			if (err != nil) != (tt.failCall > 0) {
				t.Fatalf("sync error = %v, want an error: %v", err, tt.failCall > 0)
			}
			creates := filterActions(f.actions(), "create pods")
			if len(creates) < tt.min || len(creates) > tt.max {
				t.Errorf("create calls = %d, want %d to %d", len(creates), tt.min, tt.max)
			}
			succeeded := len(creates)
			if tt.failCall > 0 {
				succeeded--
			}
			if adds, _ := f.c.expectations.Pending(dsKey(ds)); adds != succeeded {
				t.Errorf("pending creates = %d, want %d (the successful creates)", adds, succeeded)
			}
		})
	}
}

// MaxPodWritesInFlight: 0 is no cap, as upstream.
func TestMaxPodWritesInFlight(t *testing.T) {
	for _, tt := range []struct {
		conf int
		want int64 // 0: no cap
	}{{0, 0}, {5, 5}} {
		f := newFixture(t, nil, func(c *Config) { c.MaxPodWritesInFlight = tt.conf })
		var got int64
		if f.c.podWrites != nil {
			for f.c.podWrites.TryAcquire(1) {
				got++
			}
		}
		if got != tt.want {
			t.Errorf("MaxPodWritesInFlight %d: %d slots, want %d", tt.conf, got, tt.want)
		}
	}
	if _, err := NewController(Config{Client: newFakeClient(), MaxPodWritesInFlight: -1}); err == nil {
		t.Error("a negative MaxPodWritesInFlight was accepted")
	}
}

func TestSlowStartBatches(t *testing.T) {
	for _, tt := range []struct {
		n, maxBatch, first int
		want               []int
	}{
		{0, 1000, 1, nil},
		{1, 1000, 1, []int{1}},
		{2, 1000, 1, []int{1, 1}},
		{3, 1000, 1, []int{1, 2}},
		{7, 1000, 1, []int{1, 2, 4}},
		{10, 1000, 1, []int{1, 2, 4, 3}},
		// Resumed where an earlier sync's slow start left it.
		{10, 1000, 4, []int{4, 6}},
		{40, 16, 8, []int{8, 16, 16}},
		{5, 16, 64, []int{5}}, // never above maxBatch
		{3, 1000, 0, []int{1, 2}},
	} {
		if diff := cmp.Diff(tt.want, slowStartBatches(tt.n, tt.maxBatch, tt.first)); diff != "" {
			t.Errorf("slowStartBatches(%d, %d, %d) (-want +got):\n%s", tt.n, tt.maxBatch, tt.first, diff)
		}
	}
	// 5000 nodes: at most 250 in flight, where the doubling alone reached 2048.
	got := slowStartBatches(5000, DefaultMaxCreateBatch, 1)
	want := []int{1, 2, 4, 8, 16, 32, 64, 128}
	for left := 5000 - 255; left > 0; left -= 250 {
		want = append(want, min(250, left))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("slowStartBatches(5000, %d) (-want +got):\n%s", DefaultMaxCreateBatch, diff)
	}
}

// A DaemonSet's creates resume the slow start where its last creates, all
// successful, left it, for SlowStartMemory, and start at the initial batch
// when nothing is remembered; after a failure they start at one until
// creates succeed again, however long that takes; the DaemonSet's deletion
// forgets everything.
func TestSlowStartResumes(t *testing.T) {
	for _, initial := range []int{0, 3} { // 0: the default, upstream's 1
		t.Run(fmt.Sprintf("initial=%d", initial), func(t *testing.T) {
			testSlowStartResumes(t, initial)
		})
	}
}

func testSlowStartResumes(t *testing.T, initial int) {
	wantInitial := max(initial, DefaultSlowStartInitialBatch)
	ds := newDaemonSet("agent")
	key := dsKey(ds)
	objs := []runtime.Object{ds, currentRevision(t, ds)}
	for i := range 3 { // batches 1 2, or one of 3
		objs = append(objs, newNode(fmt.Sprintf("n%d", i), nil))
	}
	f := newFixture(t, objs, func(c *Config) { c.MaxCreateBatch, c.SlowStartInitialBatch = 16, initial })
	failOn := ""
	f.client.PrependReactor("create", "pods", func(a core.Action) (bool, runtime.Object, error) {
		if targetNodeName(a.(core.CreateAction).GetObject().(*corev1.Pod)) == failOn {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
		}
		return false, nil, nil
	})
	if got := f.c.slowStartFirst(key); got != wantInitial {
		t.Fatalf("first batch before any create = %d, want %d", got, wantInitial)
	}
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	wantNext := 4 // after batches of 1 and 2
	if wantInitial == 3 {
		wantNext = 6 // after one batch of 3
	}
	if got := f.c.slowStartFirst(key); got != wantNext {
		t.Errorf("after the first creates: next first batch = %d, want %d", got, wantNext)
	}
	f.clock.Step(SlowStartMemory + time.Second)
	if got := f.c.slowStartFirst(key); got != wantInitial {
		t.Errorf("%v after the last creates: first batch = %d, want %d", SlowStartMemory+time.Second, got, wantInitial)
	}

	// Resumed at 4, a batch that fails is sent whole (4 calls, one
	// failing), and the next creates start at one.
	f.c.rememberSlowStart(key, 2)
	for i := 3; i < 9; i++ {
		f.addToCache(newNode(fmt.Sprintf("n%d", i), nil))
	}
	f.actions()
	failOn = "n4"
	for _, n := range []string{"n0", "n1", "n2"} { // the first sync's pods, as the informer would hold them
		f.addToCache(newPodFor(ds, "agent-"+n, n))
	}
	for _, n := range []string{"n0", "n1", "n2"} {
		f.c.expectations.CreationObserved(key, n)
	}
	if err := f.sync(key); err == nil {
		t.Fatal("sync succeeded, want the create failure on n4")
	}
	if got := len(filterActions(f.actions(), "create pods")); got != 4 {
		t.Errorf("resumed batch with a failure: %d create calls, want 4 (one batch, the rest skipped)", got)
	}
	if got := f.c.slowStartFirst(key); got != 1 {
		t.Errorf("after a failure: first batch = %d, want 1", got)
	}
	f.clock.Step(10 * SlowStartMemory) // a long backoff: still one
	if got := f.c.slowStartFirst(key); got != 1 {
		t.Errorf("%v after a failure: first batch = %d, want 1", 10*SlowStartMemory, got)
	}

	f.c.rememberSlowStart(key, 8)
	if got := f.c.slowStartFirst(key); got != 16 {
		t.Errorf("after a batch of 8 under a cap of 16: first batch = %d, want 16", got)
	}
	f.c.rememberSlowStart(key, 0)
	f.c.deleteDaemonSet(ds)
	if got := f.c.slowStartFirst(key); got != wantInitial {
		t.Errorf("after the DaemonSet's deletion: first batch = %d, want %d", got, wantInitial)
	}
	if _, err := NewController(Config{Client: newFakeClient(), SlowStartInitialBatch: -1}); err == nil {
		t.Error("a negative SlowStartInitialBatch was accepted")
	}
}

func TestSyncDeletesPodOnIneligibleNodeWithUIDPrecondition(t *testing.T) {
	ds := newDaemonSet("agent", withNodeSelector(map[string]string{"role": "worker"}))
	pod := newPodFor(ds, "agent-old", "n1")
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", map[string]string{"role": "infra"}), pod})
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync: %v", err)
	}
	dels := filterActions(f.actions(), "delete pods")
	if len(dels) != 1 {
		t.Fatalf("deletes = %v, want one", summarize(dels))
	}
	opts := dels[0].(core.DeleteAction).GetDeleteOptions()
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != pod.UID {
		t.Errorf("delete preconditions = %+v, want UID %s", opts.Preconditions, pod.UID)
	}
	if _, d := f.c.expectations.Pending(dsKey(ds)); d != 1 {
		t.Errorf("pending deletes = %d, want 1", d)
	}
	// The graceful-delete update and the final delete count once.
	terminating := pod.DeepCopy()
	terminating.ResourceVersion = "2"
	terminating.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	f.c.updatePod(pod, terminating)
	f.c.deletePod(terminating)
	if !f.c.expectations.Satisfied(dsKey(ds)) {
		t.Error("expectations unsatisfied after the deletion was observed")
	}
}

// A sync's deletes stream under MaxCreateBatch (streamCalls bounds them),
// and, unlike the creates, a failure stops none of them: every pod meant to
// go is asked to, and only the failed delete stops being awaited.
func TestSyncStreamsDeletes(t *testing.T) {
	ds := newDaemonSet("agent", withNodeSelector(map[string]string{"role": "worker"}))
	objs := []runtime.Object{ds, currentRevision(t, ds)}
	for i := range 7 {
		node := fmt.Sprintf("n%d", i)
		objs = append(objs, newNode(node, map[string]string{"role": "infra"}), newPodFor(ds, "agent-"+node, node))
	}
	f := newFixture(t, objs, func(c *Config) { c.MaxCreateBatch = 2 })
	calls := 0 // the fake client runs one reactor at a time
	f.client.PrependReactor("delete", "pods", func(a core.Action) (bool, runtime.Object, error) {
		if calls++; calls == 3 {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("denied by a webhook"))
		}
		return false, nil, nil
	})
	if err := f.sync(dsKey(ds)); err == nil {
		t.Fatal("sync succeeded with a delete refused, want its error")
	}
	if dels := filterActions(f.actions(), "delete pods"); len(dels) != 7 {
		t.Errorf("delete calls = %d, want 7 (one per pod, the refused one included)", len(dels))
	}
	if _, d := f.c.expectations.Pending(dsKey(ds)); d != 6 {
		t.Errorf("pending deletes = %d, want 6 (the refused delete no longer awaited)", d)
	}
}

func TestSyncStatusWrittenOnlyOnChange(t *testing.T) {
	ds := newDaemonSet("agent")
	ds.Status = appsv1.DaemonSetStatus{
		DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1,
		UpdatedNumberScheduled: 1, NumberAvailable: 1, ObservedGeneration: 1,
	}
	objs := []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil), newPodFor(ds, "agent-a", "n1")}

	t.Run("unchanged", func(t *testing.T) {
		f := newFixture(t, objs)
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if got := summarize(f.actions()); len(got) != 0 {
			t.Errorf("actions = %q, want none", got)
		}
	})

	t.Run("changed, with a conflict", func(t *testing.T) {
		f := newFixture(t, append(slices.Clone(objs), newNode("n2", nil)))
		// Someone else wrote a condition the cache has not seen.
		live := ds.DeepCopy()
		live.Status.Conditions = []appsv1.DaemonSetCondition{{Type: "Healthy", Status: corev1.ConditionTrue}}
		if err := f.client.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("daemonsets"), live, ds.Namespace); err != nil {
			t.Fatal(err)
		}
		conflicts := 1
		f.client.PrependReactor("update", "daemonsets", func(a core.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() == "status" && conflicts > 0 {
				conflicts--
				return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, ds.Name, errors.New("stale"))
			}
			return false, nil, nil
		})
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		actions := f.actions()
		want := []string{"create pods on n2", "update daemonsets/status agent", "get daemonsets agent", "update daemonsets/status agent"}
		if diff := cmp.Diff(want, summarize(actions)); diff != "" {
			t.Fatalf("actions (-want +got):\n%s", diff)
		}
		got := actions[3].(core.UpdateAction).GetObject().(*appsv1.DaemonSet).Status
		if got.DesiredNumberScheduled != 2 || len(got.Conditions) != 1 || got.Conditions[0].Type != "Healthy" {
			t.Errorf("retried status = %+v, want desired 2 and the other writer's condition kept", got)
		}
	})
}

// Syncs follow each other faster than the informer delivers our own status
// writes. Each write then goes over the object the last one returned: no
// conflict, no re-read, and no write of a status already stored.
func TestSyncStatusWritesOverOwnLastWrite(t *testing.T) {
	ds := newDaemonSet("agent")
	ds.ResourceVersion = "1"
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)})
	withOptimisticConcurrency(f, 1)
	statusOf := func(a core.Action) appsv1.DaemonSetStatus {
		return a.(core.UpdateAction).GetObject().(*appsv1.DaemonSet).Status
	}
	// The pod informer keeps up; the DaemonSet informer does not.
	observeCreates := func() { f.observeCreatedPods(ds.Namespace) }

	// 1: the pod on n1 is created; status says desired 1.
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync 1: %v", err)
	}
	actions := f.actions()
	if diff := cmp.Diff([]string{"create pods on n1", "update daemonsets/status agent"}, summarize(actions)); diff != "" {
		t.Fatalf("sync 1 actions (-want +got):\n%s", diff)
	}
	observeCreates()
	// 2: the cache still has version 1 with the old status: only what
	// changed since our write (the pod is now scheduled) is written.
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync 2: %v", err)
	}
	actions = f.actions()
	if diff := cmp.Diff([]string{"update daemonsets/status agent"}, summarize(actions)); diff != "" {
		t.Fatalf("sync 2 actions (-want +got):\n%s", diff)
	}
	// 2b: nothing changed since: no write.
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync 2b: %v", err)
	}
	if got := summarize(f.actions()); len(got) != 0 {
		t.Errorf("sync 2b actions = %q, want none (that status is stored)", got)
	}
	// 3 and 4: two more nodes, one at a time, the cache still at version 1:
	// each write goes over the last one's version and succeeds.
	for i, node := range []string{"n2", "n3"} {
		n := newNode(node, nil)
		if err := f.client.Tracker().Add(n); err != nil {
			t.Fatal(err)
		}
		f.addToCache(n)
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync %d: %v", i+3, err)
		}
		actions := f.actions()
		if diff := cmp.Diff([]string{"create pods on " + node, "update daemonsets/status agent"}, summarize(actions)); diff != "" {
			t.Fatalf("sync %d actions (-want +got):\n%s", i+3, diff)
		}
		if got := statusOf(actions[1]).DesiredNumberScheduled; got != int32(i+2) {
			t.Errorf("sync %d wrote desired %d, want %d", i+3, got, i+2)
		}
		observeCreates()
	}
	// 4b: the pod on n3 is seen: one more write, again without a conflict.
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync 4b: %v", err)
	}
	if diff := cmp.Diff([]string{"update daemonsets/status agent"}, summarize(f.actions())); diff != "" {
		t.Fatalf("sync 4b actions (-want +got):\n%s", diff)
	}
	// 5: the informer catches up with our last write: the cache is the base
	// again, and an unchanged status is not written.
	latest, err := f.client.AppsV1().DaemonSets(ds.Namespace).Get(t.Context(), ds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if latest.ResourceVersion != "6" {
		t.Fatalf("server version %s, want 6 (five writes over 1)", latest.ResourceVersion)
	}
	f.actions()
	f.addToCache(latest)
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync 5: %v", err)
	}
	if got := summarize(f.actions()); len(got) != 0 {
		t.Errorf("sync 5 actions = %q, want none", got)
	}
	if _, ok := f.c.writtenStatus[dsKey(ds)]; ok {
		t.Error("the last write is still remembered after the cache caught up")
	}
}

// With StatusInterval, counters that change within it are written once, by
// the sync the controller schedules at its end; a new generation is written
// at once.
func TestSyncStatusWritesCoalesced(t *testing.T) {
	ds := newDaemonSet("agent")
	ds.ResourceVersion = "1"
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)}, func(c *Config) { c.StatusInterval = time.Second })
	withOptimisticConcurrency(f, 1)
	sync := func(step string) []core.Action {
		t.Helper()
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("%s: sync: %v", step, err)
		}
		return f.actions()
	}
	statusOf := func(a core.Action) appsv1.DaemonSetStatus {
		return a.(core.UpdateAction).GetObject().(*appsv1.DaemonSet).Status
	}
	// A new DaemonSet's first status (observedGeneration 0 -> 1) goes at once.
	if diff := cmp.Diff([]string{"create pods on n1", "update daemonsets/status agent"}, summarize(sync("first"))); diff != "" {
		t.Fatalf("first sync actions (-want +got):\n%s", diff)
	}
	f.delayed.takeAfter()
	// The pod is seen 100 ms later: the counters changed within the
	// interval, so nothing is written and the sync asks to run at its end.
	f.clock.Step(100 * time.Millisecond)
	f.observeCreatedPods(ds.Namespace)
	if got := summarize(sync("within the interval")); len(got) != 0 {
		t.Errorf("actions within the interval = %q, want none", got)
	}
	if got, want := f.delayed.takeAfter(), dsKey(ds)+" 900ms"; !slices.Contains(got, want) {
		t.Errorf("requeued %q, want %q among them", got, want)
	}
	if got, ok := metricValue(t, f.c.metrics, MetricsNamespace+"_status_writes_deferred_total", map[string]string{}); !ok || got != 1 {
		t.Errorf("deferred writes = %v (found %v), want 1", got, ok)
	}
	// At the end of the interval the requeued sync writes the counters.
	f.clock.Step(900 * time.Millisecond)
	actions := sync("after the interval")
	if diff := cmp.Diff([]string{"update daemonsets/status agent"}, summarize(actions)); diff != "" {
		t.Fatalf("sync after the interval (-want +got):\n%s", diff)
	}
	if got := statusOf(actions[0]).CurrentNumberScheduled; got != 1 {
		t.Errorf("written currentNumberScheduled %d, want 1", got)
	}
	// A new generation 10 ms later is written at once.
	f.clock.Step(10 * time.Millisecond)
	f.actions()
	latest, err := f.client.AppsV1().DaemonSets(ds.Namespace).Get(t.Context(), ds.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	latest.Generation = 2
	latest.Spec.Template.Spec.Containers[0].Image = "example.com/agent:v2"
	if latest, err = f.client.AppsV1().DaemonSets(ds.Namespace).Update(t.Context(), latest, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.client.ClearActions() // the test's own write, not the controller's
	f.addToCache(latest)
	writes := filterActions(sync("new generation"), "update daemonsets/status")
	if len(writes) == 0 || statusOf(writes[len(writes)-1]).ObservedGeneration != 2 {
		t.Errorf("status writes after a new generation = %q, want one with observedGeneration 2", summarize(writes))
	}
}

// withOptimisticConcurrency gives the fake client's DaemonSet updates the
// API server's resourceVersion check, starting at version: an update over any
// other version conflicts, a successful one bumps it.
func withOptimisticConcurrency(f *fixture, version int) {
	f.client.PrependReactor("update", "daemonsets", func(a core.Action) (bool, runtime.Object, error) {
		obj := a.(core.UpdateAction).GetObject().(*appsv1.DaemonSet).DeepCopy()
		if obj.ResourceVersion != strconv.Itoa(version) {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "daemonsets"}, obj.Name, errors.New("stale"))
		}
		version++
		obj.ResourceVersion = strconv.Itoa(version)
		if err := f.client.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("daemonsets"), obj, obj.Namespace); err != nil {
			return true, nil, err
		}
		return true, obj, nil
	})
}

// observeCreatedPods delivers the pods the client holds and the cache lacks
// to the cache and the pod handler, as the pod informer would.
func (f *fixture) observeCreatedPods(namespace string) {
	f.t.Helper()
	pods, err := f.client.CoreV1().Pods(namespace).List(f.t.Context(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	f.client.ClearActions()
	for i := range pods.Items {
		pod := &pods.Items[i]
		if _, ok, _ := f.factory.Core().V1().Pods().Informer().GetIndexer().Get(pod); !ok {
			f.addToCache(pod)
			f.c.addPod(pod)
		}
	}
}

// After a conflict with another writer, the cache may deliver that
// writer's version before ours: the next write still goes over ours.
func TestSyncStatusAfterAnotherWriter(t *testing.T) {
	ds := newDaemonSet("agent")
	ds.ResourceVersion = "1"
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)})
	other := ds.DeepCopy()
	other.ResourceVersion = "2"
	other.Status.Conditions = []appsv1.DaemonSetCondition{{Type: "Healthy", Status: corev1.ConditionTrue}}
	if err := f.client.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("daemonsets"), other, ds.Namespace); err != nil {
		t.Fatal(err)
	}
	withOptimisticConcurrency(f, 2)

	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync 1: %v", err)
	}
	want := []string{"create pods on n1", "update daemonsets/status agent", "get daemonsets agent", "update daemonsets/status agent"}
	if diff := cmp.Diff(want, summarize(f.actions())); diff != "" {
		t.Fatalf("sync 1 actions (-want +got):\n%s", diff)
	}
	// The cache now has the other writer's version 2; the server has 3, ours.
	f.addToCache(other)
	f.observeCreatedPods(ds.Namespace)
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync 2: %v", err)
	}
	actions := f.actions()
	if diff := cmp.Diff([]string{"update daemonsets/status agent"}, summarize(actions)); diff != "" {
		t.Fatalf("sync 2 actions (-want +got):\n%s", diff)
	}
	got := actions[0].(core.UpdateAction).GetObject().(*appsv1.DaemonSet)
	if got.ResourceVersion != "3" || len(got.Status.Conditions) != 1 {
		t.Errorf("sync 2 wrote over version %s with conditions %v; want 3, with the other writer's condition", got.ResourceVersion, got.Status.Conditions)
	}
}

func TestSyncHistory(t *testing.T) {
	ds := newDaemonSet("agent")
	hash := currentHash(ds)

	t.Run("creates the current revision", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{ds})
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		actions := f.actions()
		if diff := cmp.Diff([]string{"create controllerrevisions agent-" + hash, "update daemonsets/status agent"}, summarize(actions)); diff != "" {
			t.Fatalf("actions (-want +got):\n%s", diff)
		}
		rev := actions[0].(core.CreateAction).GetObject().(*appsv1.ControllerRevision)
		if diff := cmp.Diff(map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: hash}, rev.Labels); diff != "" {
			t.Errorf("revision labels (-want +got):\n%s", diff)
		}
		if rev.Revision != 1 || metav1.GetControllerOf(rev) == nil || metav1.GetControllerOf(rev).UID != ds.UID {
			t.Errorf("revision %d, controller %+v; want 1, the DaemonSet", rev.Revision, metav1.GetControllerOf(rev))
		}
		data, _ := plan.RevisionData(ds)
		if string(rev.Data.Raw) != string(data.Raw) {
			t.Errorf("revision data = %s, want %s", rev.Data.Raw, data.Raw)
		}
	})

	t.Run("already created, not yet in cache", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{ds})
		if err := f.client.Tracker().Add(currentRevision(t, ds)); err != nil {
			t.Fatal(err)
		}
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		want := []string{"create controllerrevisions agent-" + hash, "get controllerrevisions agent-" + hash, "update daemonsets/status agent"}
		if diff := cmp.Diff(want, summarize(f.actions())); diff != "" {
			t.Errorf("actions (-want +got):\n%s", diff)
		}
	})

	other := currentRevision(t, ds)
	other.Data.Raw = []byte(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"agent"}}}}}`)

	t.Run("collision in cache bumps collisionCount", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{ds, other})
		err := f.sync(dsKey(ds))
		if !errors.Is(err, errHashCollision) {
			t.Fatalf("sync error = %v, want errHashCollision (to retry with the new count)", err)
		}
		actions := f.actions()
		if diff := cmp.Diff([]string{"get daemonsets agent", "update daemonsets/status agent"}, summarize(actions)); diff != "" {
			t.Fatalf("actions (-want +got):\n%s", diff)
		}
		if cc := actions[1].(core.UpdateAction).GetObject().(*appsv1.DaemonSet).Status.CollisionCount; cc == nil || *cc != 1 {
			t.Errorf("collisionCount = %v, want 1", cc)
		}
	})

	t.Run("collision on create bumps collisionCount", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{ds})
		if err := f.client.Tracker().Add(other); err != nil {
			t.Fatal(err)
		}
		if err := f.sync(dsKey(ds)); !errors.Is(err, errHashCollision) {
			t.Fatalf("sync error = %v, want errHashCollision", err)
		}
		want := []string{"create controllerrevisions agent-" + hash, "get controllerrevisions agent-" + hash, "get daemonsets agent", "update daemonsets/status agent"}
		if diff := cmp.Diff(want, summarize(f.actions())); diff != "" {
			t.Errorf("actions (-want +got):\n%s", diff)
		}
	})

	t.Run("stale collisionCount is not bumped twice", func(t *testing.T) {
		f := newFixture(t, []runtime.Object{ds, other})
		live := ds.DeepCopy()
		live.Status.CollisionCount = ptr.To[int32](1)
		if err := f.client.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("daemonsets"), live, ds.Namespace); err != nil {
			t.Fatal(err)
		}
		if err := f.sync(dsKey(ds)); !errors.Is(err, errStaleCollisionCount) {
			t.Fatalf("sync error = %v, want errStaleCollisionCount", err)
		}
		if diff := cmp.Diff([]string{"get daemonsets agent"}, summarize(f.actions())); diff != "" {
			t.Errorf("actions (-want +got):\n%s", diff)
		}
	})

	t.Run("rollback raises the revision number", func(t *testing.T) {
		cur := currentRevision(t, ds) // revision 1
		old := other.DeepCopy()
		old.Name, old.UID, old.Revision = "agent-old", "uid-agent-old", 2
		f := newFixture(t, []runtime.Object{ds, cur, old})
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		actions := f.actions()
		if diff := cmp.Diff([]string{"update controllerrevisions agent-" + hash, "update daemonsets/status agent"}, summarize(actions)); diff != "" {
			t.Fatalf("actions (-want +got):\n%s", diff)
		}
		if r := actions[0].(core.UpdateAction).GetObject().(*appsv1.ControllerRevision).Revision; r != 3 {
			t.Errorf("revision = %d, want 3", r)
		}
	})
}

func TestSyncExpectationsExpireWithFakeClock(t *testing.T) {
	ds := newDaemonSet("agent")
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)}, func(c *Config) { c.ExpectationsTTL = time.Minute })
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatal(err)
	}
	f.actions()
	// The sync that creates asks to be woken when its create expires.
	if diff := cmp.Diff([]string{dsKey(ds) + " 1m0.000000001s"}, f.delayed.takeAfter()); diff != "" {
		t.Errorf("delayed after the create (-want +got):\n%s", diff)
	}
	f.clock.Step(time.Minute) // exactly the TTL: still waiting
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatal(err)
	}
	if got := filterActions(f.actions(), "create pods"); len(got) != 0 {
		t.Fatalf("created %d pods before the TTL passed", len(got))
	}
	// Nothing else may wake it if the pod event was lost (no resync): the
	// sync itself schedules a retry for when the expectation expires.
	if diff := cmp.Diff([]string{dsKey(ds) + " 1ns"}, f.delayed.takeAfter()); diff != "" {
		t.Errorf("delayed (-want +got):\n%s", diff)
	}
	f.clock.Step(time.Second)
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatal(err)
	}
	if got := filterActions(f.actions(), "create pods"); len(got) != 1 {
		t.Errorf("created %d pods after the TTL passed, want 1 (the lost creation is given up)", len(got))
	}
}

func TestSyncEdgeCases(t *testing.T) {
	t.Run("missing DaemonSet is not an error", func(t *testing.T) {
		f := newFixture(t, nil)
		f.c.expectations.ExpectCreates("default/gone", "h", []string{"n1", "n2", "n3"})
		if err := f.sync("default/gone"); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if adds, _ := f.c.expectations.Pending("default/gone"); adds != 0 {
			t.Error("expectations of a deleted DaemonSet were kept")
		}
		if got := summarize(f.actions()); len(got) != 0 {
			t.Errorf("actions = %q, want none", got)
		}
	})
	t.Run("empty selector warns and does nothing", func(t *testing.T) {
		ds := newDaemonSet("all", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} })
		f := newFixture(t, []runtime.Object{ds, newNode("n1", nil)})
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if got := summarize(f.actions()); len(got) != 0 {
			t.Errorf("actions = %q, want none", got)
		}
		if ev := f.events(); len(ev) != 1 || !strings.Contains(ev[0], plan.SelectingAllReason) {
			t.Errorf("events = %q, want one %s", ev, plan.SelectingAllReason)
		}
	})
	t.Run("DaemonSet being deleted is left alone", func(t *testing.T) {
		ds := newDaemonSet("agent", func(ds *appsv1.DaemonSet) { ds.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) })
		f := newFixture(t, []runtime.Object{ds, newNode("n1", nil), orphan(newPodFor(ds, "x", "n1"))})
		if err := f.sync(dsKey(ds)); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if got := summarize(f.actions()); len(got) != 0 {
			t.Errorf("actions = %q, want none", got)
		}
	})
}

// TestSyncReadsPodsOnlyAfterCheckingExpectations is the race behind a
// duplicate pod seen at 1000 nodes: the sync reads the cache, the informer
// then delivers the awaited pod (satisfying the expectations), and only then
// does the sync check them. In that order it acts on a cache that lacks the
// pod and creates a second one on its node. Here the event arrives while the
// sync adopts an orphan on another node.
func TestSyncReadsPodsOnlyAfterCheckingExpectations(t *testing.T) {
	ds := newDaemonSet("agent")
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil), newNode("n2", nil),
		orphan(newPodFor(ds, "agent-n2", "n2"))})
	key := dsKey(ds)
	f.c.expectations.ExpectCreates(key, currentHash(ds), []string{"n1"}) // an earlier sync created a pod on n1
	inFlight := newPodFor(ds, "agent-n1", "n1")
	var delivered atomic.Bool
	f.client.PrependReactor("patch", "pods", func(core.Action) (bool, runtime.Object, error) {
		if delivered.CompareAndSwap(false, true) {
			f.addToCache(inFlight) // the informer updates its store, then calls the handler
			f.c.addPod(inFlight)
		}
		return false, nil, nil
	})
	if err := f.sync(key); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if !delivered.Load() {
		t.Fatal("the sync adopted nothing, so the race was not exercised")
	}
	if got := filterActions(f.actions(), "create pods"); len(got) != 0 {
		t.Fatalf("sync created %d pods on a node whose pod was in flight: %v", len(got), summarize(got))
	}
	// The next sync sees the pod and has nothing to create.
	if err := f.sync(key); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if got := filterActions(f.actions(), "create pods"); len(got) != 0 {
		t.Fatalf("second sync created %d pods: %v", len(got), summarize(got))
	}
}

// TestSyncObservedGenerationNeverDecreases: a sync with outstanding
// expectations keeps the cached status's observedGeneration; while the cache
// lags our own write of a newer one, that older value must not be written
// over it (kubectl rollout status, Argo CD and Flux would see "not observed").
func TestSyncObservedGenerationNeverDecreases(t *testing.T) {
	ds := newDaemonSet("agent")
	ds.ResourceVersion, ds.Generation, ds.Status.ObservedGeneration = "1", 2, 1
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)})
	withOptimisticConcurrency(f, 1)
	written := func(step string) int64 {
		t.Helper()
		var gens []int64
		for _, a := range f.actions() {
			if u, ok := a.(core.UpdateAction); ok && a.GetSubresource() == "status" {
				gens = append(gens, u.GetObject().(*appsv1.DaemonSet).Status.ObservedGeneration)
			}
		}
		if len(gens) != 1 {
			t.Fatalf("%s: %d status writes, want 1", step, len(gens))
		}
		return gens[0]
	}
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync 1: %v", err)
	}
	if got := written("sync 1"); got != 2 {
		t.Fatalf("sync 1 wrote observedGeneration %d, want 2", got)
	}
	// The create is not observed yet (expectations outstanding) and the
	// DaemonSet cache still holds observedGeneration 1. A new node changes
	// the status, so it is written again.
	n := newNode("n2", nil)
	if err := f.client.Tracker().Add(n); err != nil {
		t.Fatal(err)
	}
	f.addToCache(n)
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync 2: %v", err)
	}
	if got := written("sync 2"); got != 2 {
		t.Errorf("sync 2 wrote observedGeneration %d, want 2 (it went backwards)", got)
	}
}

func TestMergeStatusKeepsNewerObservedGeneration(t *testing.T) {
	got := mergeStatus(appsv1.DaemonSetStatus{ObservedGeneration: 3}, appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 5})
	if got.ObservedGeneration != 3 || got.DesiredNumberScheduled != 5 {
		t.Errorf("mergeStatus = observedGeneration %d, desired %d; want 3, 5", got.ObservedGeneration, got.DesiredNumberScheduled)
	}
}

// The revision data is kept while the DaemonSet's version stays, and a new
// version (here a new template under the same UID) is encoded again; the
// DaemonSet's deletion forgets it.
func TestRevisionDataKeptPerVersion(t *testing.T) {
	ds := newDaemonSet("agent")
	ds.ResourceVersion = "5"
	f := newFixture(t, []runtime.Object{ds})
	first, err := f.c.revisionData(ds)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := plan.RevisionData(ds)
	if !bytes.Equal(first.Raw, want.Raw) {
		t.Fatalf("revisionData = %s, want %s", first.Raw, want.Raw)
	}
	again, _ := f.c.revisionData(ds)
	if &again.Raw[0] != &first.Raw[0] {
		t.Error("the same version was encoded again")
	}
	updated := ds.DeepCopy()
	updated.ResourceVersion, updated.Generation = "6", 2
	updated.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.11"
	got, _ := f.c.revisionData(updated)
	if want, _ := plan.RevisionData(updated); !bytes.Equal(got.Raw, want.Raw) {
		t.Errorf("after a template change, revisionData = %s, want %s", got.Raw, want.Raw)
	}
	f.c.deleteDaemonSet(updated)
	if n := len(f.c.revisionDataOf); n != 0 {
		t.Errorf("%d revision data kept after the DaemonSet's deletion", n)
	}
}

// A sync starts its pod writes and returns; the next sync, while they are
// still on their way, acts on the other nodes only and reports only the
// pods that exist.
func TestSyncDoesNotWaitForPodWrites(t *testing.T) {
	ds := newDaemonSet("agent")
	key := dsKey(ds)
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)})
	var started []func()
	f.c.startWrite = func(fn func()) { started = append(started, fn) } // on their way until run
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if len(started) != 1 || len(filterActions(f.actions(), "create pods")) != 0 {
		t.Fatalf("first sync: %d writes started, want 1 not yet sent", len(started))
	}
	f.addToCache(newNode("n2", nil)) // joins while n1's create is on its way
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if len(started) != 2 {
		t.Fatalf("second sync started %d writes in all, want 2", len(started))
	}
	for _, fn := range started {
		fn()
	}
	var nodes []string
	for _, a := range filterActions(f.actions(), "create pods") {
		nodes = append(nodes, targetNodeName(a.(core.CreateAction).GetObject().(*corev1.Pod)))
	}
	slices.Sort(nodes)
	if diff := cmp.Diff([]string{"n1", "n2"}, nodes); diff != "" {
		t.Errorf("creates (-want +got):\n%s", diff)
	}
	if adds, _ := f.c.expectations.Pending(key); adds != 2 {
		t.Errorf("creates in flight = %d, want 2 (neither seen yet)", adds)
	}
}

// While a DaemonSet's writes fail, its syncs do not reset the backoff: a
// create that a quota refuses is retried at a growing interval. Writes that
// succeed again reset it.
func TestFailingWritesKeepBackoff(t *testing.T) {
	ds := newDaemonSet("agent")
	key := dsKey(ds)
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)})
	refuse := true
	f.client.PrependReactor("create", "pods", func(core.Action) (bool, runtime.Object, error) {
		if refuse {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
		}
		return false, nil, nil
	})
	for want := 1; want <= 3; want++ {
		f.c.queue.Add(key) // an event, as a pod or node update
		if !f.c.processNextWorkItem(t.Context()) {
			t.Fatal("queue shut down")
		}
		if got := f.c.queue.NumRequeues(key); got != want {
			t.Fatalf("after %d failing syncs: %d requeues with backoff, want %d", want, got, want)
		}
	}
	refuse = false
	f.c.queue.Add(key)
	f.c.processNextWorkItem(t.Context())
	if got := f.c.queue.NumRequeues(key); got != 0 {
		t.Errorf("after writes succeeded: %d requeues, want 0 (backoff reset)", got)
	}
}

// The writes of a DaemonSet deleted meanwhile leave nothing behind when they
// fail: no error kept for its key (a new DaemonSet of the name would not get
// its backoff reset), no requeue.
func TestFailedWritesOfADeletedDaemonSetAreForgotten(t *testing.T) {
	ds := newDaemonSet("agent")
	key := dsKey(ds)
	f := newFixture(t, []runtime.Object{ds, currentRevision(t, ds), newNode("n1", nil)})
	var started []func()
	f.c.startWrite = func(fn func()) { started = append(started, fn) }
	f.client.PrependReactor("create", "pods", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
	})
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if err := f.factory.Apps().V1().DaemonSets().Informer().GetIndexer().Delete(ds); err != nil {
		t.Fatal(err)
	}
	for _, fn := range started {
		fn()
	}
	if err := f.c.writeFailure(key); err != nil {
		t.Errorf("error kept for a deleted DaemonSet: %v", err)
	}
	if got := f.c.queue.NumRequeues(key); got != 0 {
		t.Errorf("%d requeues for a deleted DaemonSet, want 0", got)
	}
}

// TestSyncSendsPodWritesOverPodWriteClient: with a PodWriteClient, pod
// creates and deletes go through it and nothing else does; the revisions
// and the status stay on Client.
func TestSyncSendsPodWritesOverPodWriteClient(t *testing.T) {
	ds := newDaemonSet("agent", withNodeSelector(map[string]string{"role": "worker"}))
	stale := newPodFor(ds, "agent-stale", "n2")
	podWrites := newFakeClient(stale)
	f := newFixture(t, []runtime.Object{
		ds,
		newNode("n1", map[string]string{"role": "worker"}),
		newNode("n2", map[string]string{"role": "infra"}),
		stale,
	}, func(c *Config) { c.PodWriteClient = podWrites })
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("sync: %v", err)
	}
	main := f.actions()
	if slices.ContainsFunc(main, func(a core.Action) bool { return a.GetResource().Resource == "pods" }) {
		t.Errorf("pod calls on the main client: %v", summarize(main))
	}
	if len(filterActions(main, "update daemonsets/status")) != 1 {
		t.Errorf("the status write is not on the main client: %v", summarize(main))
	}
	var writes []string
	for _, a := range podWrites.Actions() {
		writes = append(writes, a.GetVerb()+" "+a.GetResource().Resource)
	}
	slices.Sort(writes)
	if want := []string{"create pods", "delete pods"}; !slices.Equal(writes, want) {
		t.Errorf("calls on the pod-write client = %v, want %v", writes, want)
	}
}
