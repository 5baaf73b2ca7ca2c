package plan

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// TestRolloutGolden records whole rollouts sync by sync, so that a change in
// the order or pace of a rollout shows up as a readable diff.
func TestRolloutGolden(t *testing.T) {
	var buf bytes.Buffer
	for _, sc := range []struct {
		name string
		c    *cluster
	}{
		{"maxUnavailable=2", &cluster{ds: newDaemonSet("ds", maxUnavailable(intstr.FromInt32(2)))}},
		{"maxUnavailable=40%, one node never runs the new pod", &cluster{ds: newDaemonSet("ds", maxUnavailable(intstr.FromString("40%")))}},
		{"maxSurge=1 minReadySeconds=2", &cluster{ds: newDaemonSet("ds", maxSurge(intstr.FromInt32(1)), minReady(2))}},
	} {
		c := sc.c
		c.now = t0
		c.nodes = []*corev1.Node{newNode("node-c"), newNode("node-a"), newNode("node-e", cordon), newNode("node-b"), newNode("node-d")}
		broken := strings.Contains(sc.name, "never")
		c.healthy = func(p *corev1.Pod) bool {
			// In the broken scenario node-b's new pod never becomes ready.
			return !broken || p.Spec.NodeName != "node-b" || p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != curHash
		}
		fmt.Fprintf(&buf, "# %s\n", sc.name)
		for range 3 {
			c.sync(oldHash)
		}
		for i := 1; i <= 30; i++ {
			p := c.sync(curHash)
			s := p.Status
			fmt.Fprintf(&buf, "sync %2d  create %-22s delete %-40s desired=%d current=%d ready=%d available=%d updated=%d requeue=%v idle=%v\n",
				i, fmt.Sprint(p.Creates), deletionNames(p.Deletes), s.DesiredNumberScheduled, s.CurrentNumberScheduled,
				s.NumberReady, s.NumberAvailable, s.UpdatedNumberScheduled, p.RequeueAfter, p.Idle)
			if len(p.Creates) == 0 && len(p.Deletes) == 0 && p.RequeueAfter == 0 &&
				(s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberAvailable == s.DesiredNumberScheduled || broken && i > 12) {
				break
			}
		}
		buf.WriteString("\n")
	}
	golden := filepath.Join("testdata", "rollout.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(want, buf.Bytes()) {
		got := golden + ".got"
		if err := os.WriteFile(got, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Errorf("rollout differs from %s; see %s (rerun with -update to accept)", golden, got)
	}
}

func deletionNames(ds []PodDeletion) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.Node+"/"+d.Name)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
