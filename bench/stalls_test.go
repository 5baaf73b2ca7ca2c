package bench

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func stallPod(node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
}

func TestStallTracker(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ready := map[string]bool{"n1": true, "n2": true, "n3": false}
	nodeReady := func(n string) bool { return ready[n] }
	s := newStallTracker(4*time.Second, 0) // below the floor: 20 s applies
	s.observe("ns/started", stallPod("n1", corev1.PodPending), false, at(0))
	s.observe("ns/started", stallPod("n1", corev1.PodRunning), false, at(2))
	s.observe("ns/stuck", stallPod("n2", corev1.PodPending), false, at(1))
	s.observe("ns/notready-node", stallPod("n3", corev1.PodPending), false, at(1))
	s.observe("ns/unbound", stallPod("", corev1.PodPending), false, at(0))
	if got := s.due(at(20), nodeReady); len(got) != 0 {
		t.Fatalf("due at 20 s: %v, want none (19 s of waiting is within the bound)", got)
	}
	got := s.due(at(21.5), nodeReady)
	if len(got) != 1 || got[0] != "ns/stuck" {
		t.Fatalf("due at 21.5 s: %v, want only ns/stuck (a NotReady node's pod waits rightly, unbound pods are the scheduler's)", got)
	}
	if again := s.due(at(30), nodeReady); len(again) != 0 {
		t.Fatalf("nudged twice: %v", again)
	}
	s.observe("ns/stuck", stallPod("n2", corev1.PodRunning), false, at(24))
	s.observe("ns/gone", stallPod("n1", corev1.PodPending), false, at(30))
	s.due(at(55), nodeReady)
	out := s.finish(at(60))
	if len(out) != 2 {
		t.Fatalf("stalls %+v, want 2", out)
	}
	if out[0].Pod != "ns/stuck" || out[0].Seconds != 23 || !out[0].Nudged || out[0].Open {
		t.Errorf("first stall %+v, want ns/stuck, 23 s, nudged, ended", out[0])
	}
	if out[1].Pod != "ns/gone" || out[1].Seconds != 30 || !out[1].Open {
		t.Errorf("second stall %+v, want ns/gone still open after 30 s", out[1])
	}
}

func terminatingPod(node string, since time.Time) *corev1.Pod {
	p := stallPod(node, corev1.PodRunning)
	p.DeletionTimestamp = &metav1.Time{Time: since}
	return p
}

// A deleted pod kwok never finalizes is a stall of its own: kwok v0.8.0
// drops a delete stage whose request kube-apiserver dropped ("unexpected
// EOF" as it was killed), and a controller that rightly waits for the old
// pod then never replaces it.
func TestStallTrackerTerminatingPods(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ready := map[string]bool{"n1": true, "n2": false}
	nodeReady := func(n string) bool { return ready[n] }
	for _, tc := range []struct {
		name             string
		terminatingAfter time.Duration
		events           func(s *stallTracker)
		check            float64
		want             []string
	}{
		{"finalized in time", 0, func(s *stallTracker) {
			s.observe("ns/old", terminatingPod("n1", at(1)), false, at(1))
			s.observe("ns/old", terminatingPod("n1", at(1)), true, at(3))
		}, 40, nil},
		{"never finalized, within 20 s", 0, func(s *stallTracker) {
			s.observe("ns/old", terminatingPod("n1", at(1)), false, at(1))
		}, 20.9, nil},
		{"never finalized, past 20 s with kwok idle", 0, func(s *stallTracker) {
			s.observe("ns/old", terminatingPod("n1", at(1)), false, at(1))
		}, 21.5, []string{"ns/old"}},
		{"a long delete delay widens the bound", 40 * time.Second, func(s *stallTracker) {
			s.observe("ns/old", terminatingPod("n1", at(1)), false, at(1))
		}, 30, nil},
		{"a long delete delay, past it", 40 * time.Second, func(s *stallTracker) {
			s.observe("ns/old", terminatingPod("n1", at(1)), false, at(1))
		}, 41.5, []string{"ns/old"}},
		{"on a NotReady node", 0, func(s *stallTracker) {
			s.observe("ns/old", terminatingPod("n2", at(1)), false, at(1))
		}, 60, nil},
		{"Pending, then deleted: the wait to finalize starts at the deletion", 0, func(s *stallTracker) {
			s.observe("ns/x", stallPod("n1", corev1.PodPending), false, at(0))
			s.observe("ns/x", terminatingPod("n1", at(15)), false, at(15))
		}, 30, nil},
		{"Pending, then deleted, never finalized", 0, func(s *stallTracker) {
			s.observe("ns/x", stallPod("n1", corev1.PodPending), false, at(0))
			s.observe("ns/x", terminatingPod("n1", at(15)), false, at(15))
		}, 35.5, []string{"ns/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStallTracker(0, tc.terminatingAfter)
			tc.events(s)
			if got := s.due(at(tc.check), nodeReady); !slices.Equal(got, tc.want) {
				t.Errorf("due at %.1f s: %v, want %v", tc.check, got, tc.want)
			}
		})
	}

	// The report says which kind of wait it was, and how long it lasted.
	s := newStallTracker(0, 0)
	s.observe("ns/old", terminatingPod("n1", at(1)), false, at(1))
	s.observe("ns/late", stallPod("n1", corev1.PodPending), false, at(1))
	if got := s.due(at(22), nodeReady); !slices.Equal(got, []string{"ns/late", "ns/old"}) {
		t.Fatalf("due at 22 s: %v, want both", got)
	}
	s.observe("ns/old", terminatingPod("n1", at(1)), true, at(23)) // the nudge worked
	out := s.finish(at(30))
	if len(out) != 2 {
		t.Fatalf("stalls %+v, want 2", out)
	}
	for _, st := range out {
		switch st.Pod {
		case "ns/old":
			if !st.Terminating || st.Open || st.Seconds != 22 || !st.Nudged {
				t.Errorf("stall %+v, want terminating, ended after 22 s, nudged", st)
			}
		case "ns/late":
			if st.Terminating || !st.Open || st.Seconds != 29 {
				t.Errorf("stall %+v, want Pending, open after 29 s", st)
			}
		}
	}
}

// kwok behind is not kwok stalled: while kwok keeps starting pods, a pod
// still waiting is queued, whatever the bind times of the pods it starts
// (kwok's queue is not in bind order: after its pod watch is re-established
// it receives every pod again, in name order). Only when kwok has started
// nothing for 5 s is a pod that still waits stalled.
func TestStallTrackerBacklogIsNotAStall(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	nodeReady := func(string) bool { return true }
	for _, tc := range []struct {
		name string
		// started are the bind times (s) of pods kwok starts at 28 s, 29 s, ...
		started []float64
		check   float64 // when due is asked
		want    bool    // ns/waiting (bound at 10 s) is stalled
	}{
		{"kwok busy with pods bound before it", []float64{8, 9, 10.5, 11.9}, 32, false},
		{"kwok busy with pods bound well after it (a replay in name order)", []float64{9, 12.5, 20, 25}, 32, false},
		{"kwok idle for 5 s", []float64{9, 10.5}, 34, true},
		{"kwok idle, but less than 5 s", []float64{9, 10.5}, 33.5, false},
		{"kwok never started anything", nil, 30.5, true},
		{"kwok idle, but the pod waited less than 20 s", nil, 29, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStallTracker(0, 0)
			s.observe("ns/waiting", stallPod("w", corev1.PodPending), false, at(10))
			for i, bound := range tc.started {
				key := "ns/p" + string(rune('a'+i))
				s.observe(key, stallPod("n", corev1.PodPending), false, at(bound))
				s.observe(key, stallPod("n", corev1.PodRunning), false, at(28+float64(i)))
			}
			got := len(s.due(at(tc.check), nodeReady)) == 1
			if got != tc.want {
				t.Errorf("stalled at %.1f s = %v, want %v", tc.check, got, tc.want)
			}
		})
	}
}

// The pod kwok lost while busy is still caught: as soon as kwok has worked
// through everything else (starts and finalized deletions alike) and gone
// idle for 5 s, not before.
func TestStallTrackerCatchesALostPodOnceKwokIsIdle(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	nodeReady := func(string) bool { return true }
	s := newStallTracker(0, 0)
	s.observe("ns/lost", stallPod("w", corev1.PodPending), false, at(1))
	// kwok starts one other pod a second, from 2 s to 60 s.
	for i := 0; i <= 58; i++ {
		key := fmt.Sprintf("ns/busy-%02d", i)
		s.observe(key, stallPod("n", corev1.PodPending), false, at(float64(i)))
		s.observe(key, stallPod("n", corev1.PodRunning), false, at(float64(i+2)))
		if got := s.due(at(float64(i+2)), nodeReady); len(got) != 0 {
			t.Fatalf("at %d s, while kwok is busy: %v stalled", i+2, got)
		}
	}
	// Then it only finalizes terminating pods (a rollout's deletions), one
	// a second from 61 s to 80 s: busy too.
	for i := 61; i <= 80; i++ {
		p := stallPod("n", corev1.PodRunning)
		p.DeletionTimestamp = &metav1.Time{Time: at(float64(i - 1))}
		s.observe(fmt.Sprintf("ns/old-%02d", i), p, true, at(float64(i)))
		if got := s.due(at(float64(i)), nodeReady); len(got) != 0 {
			t.Fatalf("at %d s, while kwok deletes: %v stalled", i, got)
		}
	}
	// A pod deleted outright (no grace: nothing for kwok to finalize) is
	// not kwok's work.
	s.observe("ns/forced", stallPod("n", corev1.PodRunning), true, at(82))
	if got := s.due(at(84.9), nodeReady); len(got) != 0 {
		t.Fatalf("at 84.9 s, 4.9 s after kwok's last action: %v stalled", got)
	}
	if got := s.due(at(85), nodeReady); len(got) != 1 || got[0] != "ns/lost" {
		t.Fatalf("at 85 s, kwok idle for 5 s: %v stalled, want ns/lost", got)
	}
	out := s.finish(at(90))
	if len(out) != 1 || out[0].Pod != "ns/lost" || !out[0].Open || out[0].Seconds != 89 {
		t.Errorf("stalls %+v, want ns/lost open for 89 s", out)
	}
}
