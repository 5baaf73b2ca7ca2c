package scenarios

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func newDaemonSet(containers ...corev1.Container) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: containers},
			},
		},
	}
}

func TestApplyUpdate(t *testing.T) {
	ds := newDaemonSet(
		corev1.Container{Name: "main", Image: "a:v1", Env: []corev1.EnvVar{{Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}}},
		corev1.Container{Name: "sidecar", Image: "s:v1"},
	)
	for _, tc := range []struct {
		name    string
		update  UpdateStep
		want    func(ds *appsv1.DaemonSet)
		wantErr bool
	}{{
		name:   "image and env of a named container",
		update: UpdateStep{Container: "main", Image: "a:v2", Env: map[string]string{"C": "3", "B": "2"}},
		want: func(ds *appsv1.DaemonSet) {
			c := &ds.Spec.Template.Spec.Containers[0]
			c.Image = "a:v2"
			c.Env = []corev1.EnvVar{{Name: "B", Value: "2"}, {Name: "C", Value: "3"}}
		},
	}, {
		name:    "container is required with two",
		update:  UpdateStep{Image: "a:v2"},
		wantErr: true,
	}, {
		name: "strategic merge patch merges containers by name",
		update: UpdateStep{Patch: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "sidecar", "image": "s:v2"}},
		}}}}},
		want: func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[1].Image = "s:v2" },
	}, {
		name:    "a misspelt field in a patch fails",
		update:  UpdateStep{Patch: map[string]any{"spec": map[string]any{"minReadySecond": int64(3)}}},
		wantErr: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyUpdate(ds, &tc.update)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ApplyUpdate succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := ds.DeepCopy()
			tc.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ApplyUpdate (-want +got):\n%s", diff)
			}
			// The patch takes the original to the same result.
			patch, err := UpdatePatch(ds, &tc.update)
			if err != nil {
				t.Fatal(err)
			}
			patched, err := ApplyPatch(ds, patch)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, patched); diff != "" {
				t.Errorf("ApplyPatch(UpdatePatch) (-want +got):\n%s", diff)
			}
		})
	}
	if ds.Spec.Template.Spec.Containers[0].Image != "a:v1" {
		t.Errorf("ApplyUpdate changed its input")
	}
}

func TestStrategyPatch(t *testing.T) {
	ds := newDaemonSet(corev1.Container{Name: "c", Image: "i"})
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{
		Type:          appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1))},
	}
	for _, tc := range []struct {
		name      string
		step      StrategyStep
		wantPatch string
	}{
		{"to OnDelete drops rollingUpdate", StrategyStep{Type: appsv1.OnDeleteDaemonSetStrategyType},
			`{"spec":{"updateStrategy":{"rollingUpdate":null,"type":"OnDelete"}}}`},
		{"surge", StrategyStep{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromString("10%"))},
			`{"spec":{"updateStrategy":{"rollingUpdate":{"maxSurge":"10%","maxUnavailable":0}}}}`},
		{"minReadySeconds", StrategyStep{MinReadySeconds: ptr.To[int32](5)},
			`{"spec":{"minReadySeconds":5}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := StrategyPatch(ds, &tc.step)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantPatch, string(patch)); diff != "" {
				t.Errorf("StrategyPatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRollback(t *testing.T) {
	ds := newDaemonSet(corev1.Container{Name: "c", Image: "v3"})
	revision := func(n int64, image string) *appsv1.ControllerRevision {
		data := `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"c","image":"` + image + `"}]}}}}`
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "agent-" + image}, Revision: n, Data: runtime.RawExtension{Raw: []byte(data)}}
	}
	history := []*appsv1.ControllerRevision{revision(3, "v3"), revision(1, "v1"), revision(2, "v2")}
	for _, tc := range []struct {
		to        int64
		wantImage string
		wantErr   bool
	}{{0, "v2", false}, {1, "v1", false}, {7, "", true}, {-1, "", true}} {
		rev, err := RollbackRevision(history, tc.to)
		if tc.wantErr {
			if err == nil {
				t.Errorf("RollbackRevision(%d) succeeded, want an error", tc.to)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := ApplyRevision(ds, rev)
		if err != nil {
			t.Fatal(err)
		}
		if image := got.Spec.Template.Spec.Containers[0].Image; image != tc.wantImage {
			t.Errorf("rollback to %d gave image %s, want %s", tc.to, image, tc.wantImage)
		}
	}
	if _, err := RollbackRevision(history[:1], 0); err == nil {
		t.Errorf("rollback with one revision succeeded")
	}
}
