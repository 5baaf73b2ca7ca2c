package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// The golden values were produced by upstream's own controller.ComputeHash and
// daemon.Match (k8s.io/kubernetes v1.36.4, built in a throwaway module); the
// same program cross-checked 20,000 random templates, nodes and pods against
// ComputeHash, RevisionData, NodeShouldRunDaemonPod and NewPod.
func TestComputeHashMatchesUpstream(t *testing.T) {
	tests := []struct {
		name      string
		template  *corev1.PodTemplateSpec
		collision *int32
		want      string
	}{
		{"empty template", &corev1.PodTemplateSpec{}, nil, "85748b7f68"},
		{"empty template, collisionCount 1", &corev1.PodTemplateSpec{}, ptr.To(int32(1)), "b54bc767c"},
		{"test template", &newDaemonSet("ds").Spec.Template, nil, "758cdc468b"},
		{"test template, collisionCount 2", &newDaemonSet("ds").Spec.Template, ptr.To(int32(2)), "6c6ffc5dcb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ComputeHash(tt.template, tt.collision); got != tt.want {
				t.Errorf("ComputeHash = %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("collisionCount 0 differs from nil", func(t *testing.T) {
		tmpl := &newDaemonSet("ds").Spec.Template
		if ComputeHash(tmpl, nil) == ComputeHash(tmpl, ptr.To(int32(0))) {
			t.Error("nil and 0 collision counts hash the same")
		}
	})
}

func TestRevisionDataMatchesUpstream(t *testing.T) {
	const want = `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"ds"}},"spec":{"containers":[{"image":"registry.k8s.io/pause:3.10","name":"agent","resources":{}}]}}}}`
	got, err := RevisionData(newDaemonSet("ds"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got.Raw)); diff != "" {
		t.Errorf("RevisionData (-want +got):\n%s", diff)
	}
	t.Run("only the template matters", func(t *testing.T) {
		other := newDaemonSet("ds", onDelete, minReady(5), func(ds *appsv1.DaemonSet) { ds.Annotations["x"] = "y" })
		got2, err := RevisionData(other)
		if err != nil {
			t.Fatal(err)
		}
		if string(got2.Raw) != want {
			t.Errorf("RevisionData depends on more than the template: %s", got2.Raw)
		}
	})
}

func TestPlanHistory(t *testing.T) {
	ds := newDaemonSet("ds")
	data, err := RevisionData(ds)
	if err != nil {
		t.Fatal(err)
	}
	h := ComputeHash(&ds.Spec.Template, nil)
	rev := func(name, hash string, revision int64, d []byte) *appsv1.ControllerRevision {
		r := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "ds"}},
			Data:       runtime.RawExtension{Raw: d},
			Revision:   revision,
		}
		if hash != "" {
			r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
		}
		return r
	}
	other := func(i int) []byte { return []byte(`{"spec":{"template":{"v":` + string(rune('0'+i)) + `}}}`) }
	olds := func(n int) []*appsv1.ControllerRevision {
		var out []*appsv1.ControllerRevision
		for i := 1; i <= n; i++ {
			name := "ds-o" + string(rune('a'+i-1))
			out = append(out, rev(name, name[3:], int64(i), other(i)))
		}
		return out
	}
	created := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: "ds-" + h, Namespace: "default",
			Labels:      map[string]string{"app": "ds", appsv1.DefaultDaemonSetUniqueLabelKey: h},
			Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: "1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Data:     data,
		Revision: 1,
	}
	withRevision := func(r *appsv1.ControllerRevision, n int64) *appsv1.ControllerRevision {
		r = r.DeepCopy()
		r.Revision = n
		return r
	}

	tests := []struct {
		name      string
		ds        *appsv1.DaemonSet
		revisions []*appsv1.ControllerRevision
		pods      []*corev1.Pod
		want      HistoryPlan
	}{
		{name: "first revision is created", ds: ds,
			want: HistoryPlan{Hash: h, Current: created, Create: true}},
		{name: "new revision numbered after the old ones", ds: ds, revisions: olds(2),
			want: HistoryPlan{Hash: h, Current: withRevision(created, 3), Create: true}},
		{name: "collisionCount changes the name", ds: newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.Status.CollisionCount = ptr.To(int32(2)) }),
			want: HistoryPlan{Hash: "6c6ffc5dcb", Current: func() *appsv1.ControllerRevision {
				r := created.DeepCopy()
				r.Name = "ds-6c6ffc5dcb"
				r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = "6c6ffc5dcb"
				return r
			}(), Create: true}},
		{name: "a listed revision holds the name with other data: collision", ds: ds, revisions: []*appsv1.ControllerRevision{rev("ds-"+h, h, 1, other(1))},
			want: HistoryPlan{Hash: h, Current: withRevision(created, 2), Create: true, Collision: true}},
		{name: "existing current revision is used by its label", ds: ds, revisions: []*appsv1.ControllerRevision{rev("ds-x", "x", 5, data.Raw)},
			want: HistoryPlan{Hash: "x", Current: rev("ds-x", "x", 5, data.Raw)}},
		{name: "rollback bumps the revision", ds: ds, revisions: append(olds(2), rev("ds-x", "x", 1, data.Raw)),
			want: HistoryPlan{Hash: "x", Current: rev("ds-x", "x", 3, data.Raw), BumpRevision: true}},
		{name: "missing hash label is set to the name", ds: ds, revisions: []*appsv1.ControllerRevision{rev("ds-old", "", 1, other(1)), rev("ds-x", "", 2, data.Raw)},
			want: HistoryPlan{Hash: "ds-x", Current: rev("ds-x", "ds-x", 2, data.Raw),
				Relabel: []*appsv1.ControllerRevision{rev("ds-old", "ds-old", 1, other(1)), rev("ds-x", "ds-x", 2, data.Raw)}}},
		{name: "duplicates: keep the highest, relabel only their pods", ds: ds,
			revisions: []*appsv1.ControllerRevision{rev("ds-a", "a", 4, data.Raw), rev("ds-b", "b", 6, data.Raw), rev("ds-c", "c", 2, data.Raw), rev("ds-o", "o", 5, other(1))},
			pods:      []*corev1.Pod{newPod("p1", "n1", hash("a")), newPod("p2", "n2", hash("b")), newPod("p3", "n3", hash("c")), newPod("p4", "n4", hash("o"))},
			want: HistoryPlan{Hash: "b", Current: rev("ds-b", "b", 6, data.Raw),
				DuplicatesToDelete: []string{"ds-a", "ds-c"},
				PodsToRelabel: []PodRelabel{{Namespace: "default", Name: "p1", UID: "p1-uid", Hash: "b"},
					{Namespace: "default", Name: "p3", UID: "p3-uid", Hash: "b"}}}},
		{name: "duplicates with equal revisions: first by name wins", ds: ds,
			revisions: []*appsv1.ControllerRevision{rev("ds-b", "b", 1, data.Raw), rev("ds-a", "a", 1, data.Raw)},
			want:      HistoryPlan{Hash: "a", Current: rev("ds-a", "a", 1, data.Raw), DuplicatesToDelete: []string{"ds-b"}}},
		{name: "cleanup beyond the limit, oldest first", ds: newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr.To(int32(2)) }),
			revisions: append(olds(5), rev("ds-x", "x", 6, data.Raw)),
			want:      HistoryPlan{Hash: "x", Current: rev("ds-x", "x", 6, data.Raw), Deletes: []string{"ds-oa", "ds-ob", "ds-oc"}}},
		{name: "cleanup skips revisions live pods use, even terminating ones", ds: newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr.To(int32(2)) }),
			revisions: append(olds(5), rev("ds-x", "x", 6, data.Raw)),
			pods:      []*corev1.Pod{newPod("p1", "n1", hash("oa")), newPod("p2", "n2", hash("oc"), terminating, phase(corev1.PodFailed))},
			want:      HistoryPlan{Hash: "x", Current: rev("ds-x", "x", 6, data.Raw), Deletes: []string{"ds-ob", "ds-od", "ds-oe"}}},
		{name: "limit 0 keeps only live ones", ds: newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr.To(int32(0)) }),
			revisions: append(olds(2), rev("ds-x", "x", 3, data.Raw)), pods: []*corev1.Pod{newPod("p1", "n1", hash("ob"))},
			want: HistoryPlan{Hash: "x", Current: rev("ds-x", "x", 3, data.Raw), Deletes: []string{"ds-oa"}}},
		{name: "nil limit defaults to 10", ds: newDaemonSet("ds", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = nil }),
			revisions: olds(9),
			want:      HistoryPlan{Hash: h, Current: withRevision(created, 10), Create: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []*appsv1.ControllerRevision
			for _, r := range tt.revisions {
				before = append(before, r.DeepCopy())
			}
			got := PlanHistory(tt.ds, tt.revisions, tt.pods)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("PlanHistory (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.revisions); diff != "" {
				t.Errorf("revisions mutated (-before +after):\n%s", diff)
			}
		})
	}
}

func TestIsHashCollision(t *testing.T) {
	ds := newDaemonSet("ds")
	wanted := PlanHistory(ds, nil, nil).Current
	same := wanted.DeepCopy()
	same.ResourceVersion = "7"
	differs := wanted.DeepCopy()
	differs.Data.Raw = []byte(`{"spec":{}}`)
	if IsHashCollision(same, wanted) {
		t.Error("same data reported as a collision")
	}
	if !IsHashCollision(differs, wanted) {
		t.Error("other data not reported as a collision")
	}
	if got := *NextCollisionCount(nil); got != 1 {
		t.Errorf("NextCollisionCount(nil) = %d, want 1", got)
	}
	cc := ptr.To(int32(4))
	if got := *NextCollisionCount(cc); got != 5 || *cc != 4 {
		t.Errorf("NextCollisionCount(4) = %d (input now %d), want 5 and input unchanged", got, *cc)
	}
}
