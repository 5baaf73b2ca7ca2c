package controller

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dsbench/dsbench/controller/plan"
)

func TestPodMemoReadsEachObjectOnce(t *testing.T) {
	ds := newDaemonSet("agent")
	pod := newPodFor(ds, "agent-a", "n1")
	reads := 0
	matches := func(*corev1.Pod) bool { reads++; return true }

	var m podMemo
	m.begin(ds.UID, "app=agent")
	e := m.entry(pod, matches)
	if diff := cmp.Diff(plan.ReadPodFacts(pod), e.facts); diff != "" {
		t.Fatalf("facts (-read +memo):\n%s", diff)
	}
	m.end()
	m.begin(ds.UID, "app=agent")
	if again := m.entry(pod, matches); again != e || reads != 1 {
		t.Fatalf("the same object was read again (reads %d)", reads)
	}
	// The informer replaces a changed pod's object: read afresh.
	changed := pod.DeepCopy()
	changed.Spec.NodeName = "n2"
	if got := m.entry(changed, matches).facts.Node; got != "n2" || reads != 2 {
		t.Fatalf("replaced object: node %q after %d reads, want n2 after 2", got, reads)
	}
}

func TestPodMemoBeginDropsEntriesOfAnotherDaemonSetOrSelector(t *testing.T) {
	ds := newDaemonSet("agent")
	pod := newPodFor(ds, "agent-a", "n1")
	for _, tt := range []struct {
		name          string
		uid, selector string
	}{
		{"same", string(ds.UID), "app=agent"},
		{"DaemonSet replaced", "other-uid", "app=agent"},
		{"selector changed", string(ds.UID), "app=other"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m podMemo
			m.begin(ds.UID, "app=agent")
			m.entry(pod, func(*corev1.Pod) bool { return true })
			m.begin(types.UID(tt.uid), tt.selector)
			got := m.entry(pod, func(*corev1.Pod) bool { return false }).matches
			if want := tt.name == "same"; got != want {
				t.Fatalf("matches = %v, want %v (the first sync's answer only when nothing changed)", got, want)
			}
		})
	}
}

func TestPodMemoEndDropsStaleEntries(t *testing.T) {
	ds := newDaemonSet("agent")
	pods := func(prefix string, n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, newPodFor(ds, fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("n%d", i)))
		}
		return out
	}
	use := func(m *podMemo, ps []*corev1.Pod) {
		m.begin(ds.UID, "app=agent")
		for _, p := range ps {
			m.entry(p, func(*corev1.Pod) bool { return true })
		}
		m.end()
	}
	var m podMemo
	first := pods("a", 400)
	use(&m, first)
	// A few pods replaced: the stale objects stay within the slack.
	use(&m, append(first[10:], pods("b", 10)...))
	if got := len(m.entries); got != 410 {
		t.Fatalf("after 10 of 400 pods were replaced the memo holds %d entries, want 410", got)
	}
	// Every pod replaced (a rollout): the old objects go.
	second := pods("c", 400)
	use(&m, second)
	if got := len(m.entries); got != 400 {
		t.Fatalf("after every pod was replaced the memo holds %d entries, want 400", got)
	}
	for _, p := range first {
		if _, ok := m.entries[p]; ok {
			t.Fatalf("the memo still holds replaced pod %s", p.Name)
		}
	}
}

// A pod whose labels changed comes as a new object: the memo's answer for
// the old one must not keep it.
func TestSyncReleasesPodWhoseLabelsChangedAfterAMemoizedSync(t *testing.T) {
	ds := newDaemonSet("agent")
	rev := currentRevision(t, ds)
	pod := newPodFor(ds, "agent-relabelled", "n1")
	f := newFixture(t, []runtime.Object{ds, rev, newNode("n1", nil), pod})
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	f.actions()
	relabelled := pod.DeepCopy()
	relabelled.Labels = map[string]string{"app": "debug"}
	relabelled.ResourceVersion = "2"
	f.addToCache(relabelled)
	if err := f.sync(dsKey(ds)); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	want := []string{
		"patch pods agent-relabelled",
		"create pods on n1",
	}
	actions := f.actions()
	got := summarize(append(filterActions(actions, "patch pods"), filterActions(actions, "create pods")...))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("second sync's pod writes (-want +got):\n%s", diff)
	}
}
