package oracle_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/dsbench/dsbench/bench/oracle"
)

// clusterLoss says how the cluster takes a node's available pod away.
type clusterLoss int

const (
	podFails     clusterLoss = iota // phase Failed, as a crash
	podUnready                      // Ready=False in place, as a failing probe
	harnessKills                    // deleted by the harness (RequestDeletion)
)

// clusterTakesOver: 21 nodes, maxUnavailable 10% (3). At 6 the controller
// disrupts n1 to n3; at 6.5 the cluster takes the pods of n11 to n15 away
// (8 disrupted, 3 allowed). n1 recovers at 7 (7 disrupted, still over).
// With extraAt > 0 the controller disrupts n4 then, while over; it
// recovers at 8. The controller replaces the lost pods (new pods Ready at
// 8.5), n2 and n3 recover at 8, and the rollout ends in waves of 3 from 9.
func clusterTakesOver(loss clusterLoss, extraAt float64) (timeline, []string) {
	var tl timeline
	var requested []string
	old, upd := tenPercentRollout(&tl, 21)
	for i := 1; i <= 3; i++ {
		n := fmt.Sprintf("n%d", i)
		tl.mod(6, pod(old, "p"+n, n, ready(at(0)), terminating))
	}
	for i := 11; i <= 15; i++ {
		n := fmt.Sprintf("n%d", i)
		switch loss {
		case podFails:
			tl.mod(6.5, pod(old, "p"+n, n, failed))
		case podUnready:
			tl.mod(6.5, pod(old, "p"+n, n, notReady))
		case harnessKills:
			requested = append(requested, "default/p"+n)
			tl.mod(6.5, pod(old, "p"+n, n, ready(at(0)), terminating))
		}
	}
	tl.del(7, pod(old, "pn1", "n1", terminating)).add(7, pod(upd, "qn1", "n1", ready(at(7))))
	done := map[int]bool{1: true, 2: true, 3: true}
	if extraAt > 0 {
		tl.mod(extraAt, pod(old, "pn4", "n4", ready(at(0)), terminating))
		tl.del(8, pod(old, "pn4", "n4", terminating)).add(8, pod(upd, "qn4", "n4", ready(at(8))))
		done[4] = true
	}
	for i := 11; i <= 15; i++ {
		n := fmt.Sprintf("n%d", i)
		tl.del(7.6, pod(old, "p"+n, n)).add(7.6, pod(upd, "q"+n, n))
		done[i] = true
	}
	for _, i := range []int{2, 3} {
		n := fmt.Sprintf("n%d", i)
		tl.del(8, pod(old, "p"+n, n, terminating)).add(8, pod(upd, "q"+n, n, ready(at(8))))
	}
	for i := 11; i <= 15; i++ {
		n := fmt.Sprintf("n%d", i)
		tl.mod(8.5, pod(upd, "q"+n, n, ready(at(8.5))))
	}
	var rest []int
	for i := 1; i <= 21; i++ {
		if !done[i] {
			rest = append(rest, i)
		}
	}
	for w := 0; w*3 < len(rest); w++ {
		start := 9 + float64(w)
		for _, i := range rest[w*3 : min(len(rest), w*3+3)] {
			n := fmt.Sprintf("n%d", i)
			tl.mod(start, pod(old, "p"+n, n, ready(at(0)), terminating))
			tl.del(start+0.5, pod(old, "p"+n, n, terminating)).add(start+0.5, pod(upd, "q"+n, n, ready(at(start+0.5))))
		}
	}
	return tl, requested
}

// A node the cluster takes down during a rollout (its pod fails or turns
// unready, the harness deletes it) counts against maxUnavailable, and the
// controller may not disrupt another while the count is over; but the
// count going over because of the cluster alone is not the controller's
// doing.
func TestOverunavailableClusterMade(t *testing.T) {
	grace := map[oracle.Kind]time.Duration{oracle.MissingPod: 5 * time.Second}
	over := []oracle.Violation{{DaemonSet: dsKey, Kind: oracle.Overunavailable, Start: at(7.5), End: at(8), Peak: 8, Allowed: 3}}
	for _, tc := range []struct {
		name    string
		loss    clusterLoss
		extraAt float64
		want    []oracle.Violation
	}{
		{name: "pods fail", loss: podFails},
		{name: "pods turn unready", loss: podUnready},
		{name: "the harness deletes pods", loss: harnessKills},
		{name: "pods fail, and the controller disrupts one more while over", loss: podFails, extraAt: 7.5, want: over},
		{name: "pods turn unready, and the controller disrupts one more while over", loss: podUnready, extraAt: 7.5, want: over},
		{name: "the harness deletes pods, and the controller disrupts one more while over", loss: harnessKills, extraAt: 7.5, want: over},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl, requested := clusterTakesOver(tc.loss, tc.extraAt)
			c := oracle.NewChecker(oracle.Config{Grace: grace})
			for _, p := range requested {
				c.RequestDeletion(p)
			}
			for i, ev := range tl {
				if err := c.Apply(ev); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				agree(t, c, i)
			}
			got := c.Finish(tl[len(tl)-1].Time)
			if diff := cmp.Diff(tc.want, got, ignoreDetail, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			// The rollout's record counts the cluster's nodes and allows
			// them: 8 at once, 5 of them the cluster's.
			if ro := c.Rollouts(); len(ro) != 1 || ro[0].PeakUnavailable != 8 || ro[0].AllowedAtPeak != 8 || ro[0].ClusterMadeAtPeak != 5 {
				t.Errorf("rollouts %+v: want one, peak 8 of which 5 the cluster's, 8 allowed", ro)
			}
			for _, v := range got {
				if v.Kind == oracle.Overunavailable && !(strings.Contains(v.Detail, "n4 (controller's)") && strings.Contains(v.Detail, "n11 (cluster's)")) {
					t.Errorf("detail does not say who disrupted which node: %s", v.Detail)
				}
			}
		})
	}
}

// clusterFillsBudget: 21 nodes, maxUnavailable 10% (3). The controller
// disrupts n1 and n2 at 6; at 7 the pod of n11 fails, which fills the
// budget; at disruptAt the controller disrupts n3 too (TestOverunavailableLimitLag).
func clusterFillsBudget(disruptAt float64) timeline {
	var tl timeline
	old, upd := tenPercentRollout(&tl, 21)
	tl.mod(6, pod(old, "pn1", "n1", ready(at(0)), terminating)).mod(6, pod(old, "pn2", "n2", ready(at(0)), terminating))
	tl.mod(7, pod(old, "pn11", "n11", failed))
	tl.mod(disruptAt, pod(old, "pn3", "n3", ready(at(0)), terminating))
	tl.del(9, pod(old, "pn11", "n11")).add(9, pod(upd, "qn11", "n11", ready(at(9))))
	for i := 1; i <= 3; i++ {
		n := fmt.Sprintf("n%d", i)
		tl.del(9, pod(old, "p"+n, n, terminating)).add(9, pod(upd, "q"+n, n, ready(at(9))))
	}
	for i := 4; i <= 21; i++ {
		if i == 11 {
			continue
		}
		n := fmt.Sprintf("n%d", i)
		start := 10 + float64((i-4)/3)
		tl.mod(start, pod(old, "p"+n, n, ready(at(0)), terminating))
		tl.del(start+0.5, pod(old, "p"+n, n, terminating)).add(start+0.5, pod(upd, "q"+n, n, ready(at(start+0.5))))
	}
	return tl
}
