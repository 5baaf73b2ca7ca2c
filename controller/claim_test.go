package controller

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// claimer.matches compares a matchLabels selector itself; it must agree
// with labels.Selector on every label set.
func TestClaimerMatchesAsSelector(t *testing.T) {
	selectors := []*metav1.LabelSelector{
		{MatchLabels: map[string]string{"app": "agent"}},
		{MatchLabels: map[string]string{"app": "agent", "tier": "node"}},
		{MatchLabels: map[string]string{"app": ""}},
		{MatchLabels: map[string]string{"app": "agent"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"agent"}}}},
	}
	labelSets := []map[string]string{
		nil,
		{},
		{"app": "agent"},
		{"app": ""},
		{"app": "agent", "tier": "node"},
		{"app": "agent", "tier": "edge"},
		{"app": "debug", "tier": "node"},
		{"tier": "node"},
	}
	for i, sel := range selectors {
		selector, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		ds := newDaemonSet("agent", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = sel })
		m := newClaimer(nil, ds, selector)
		for _, ls := range labelSets {
			t.Run(fmt.Sprintf("selector %d on %v", i, ls), func(t *testing.T) {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: ls}}
				if got, want := m.matches(pod), selector.Matches(labels.Set(ls)); got != want {
					t.Errorf("matches = %v, selector %q says %v", got, selector, want)
				}
			})
		}
	}
}
