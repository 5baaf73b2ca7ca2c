package oracle_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/bench/oracle"
)

// pauseTemplate is a template as the apiserver stores it after defaulting.
func pauseTemplate() *corev1.PodTemplateSpec {
	grace := int64(30)
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:                     "pause",
				Image:                    "registry.k8s.io/pause:3.10",
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy:          corev1.PullIfNotPresent,
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     corev1.DNSClusterFirst,
			SchedulerName:                 corev1.DefaultSchedulerName,
			SecurityContext:               &corev1.PodSecurityContext{},
			Tolerations:                   []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
		},
	}
}

// The expected values were printed by two throwaway programs built against
// k8s.io/api v0.36.4: one re-typing upstream's ComputeHash
// (pkg/controller/controller_utils.go) line by line, the other calling
// k8s.io/kubernetes@v1.36.4/pkg/controller.ComputeHash itself. Both agreed.
func TestTemplateHash(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	tests := []struct {
		name      string
		template  *corev1.PodTemplateSpec
		collision *int32
		want      string
	}{
		{"empty, no collision count", &corev1.PodTemplateSpec{}, nil, "85748b7f68"},
		{"empty, collision count 0", &corev1.PodTemplateSpec{}, i32(0), "777dfcd544"},
		{"empty, collision count 1", &corev1.PodTemplateSpec{}, i32(1), "b54bc767c"},
		{"empty, collision count -7", &corev1.PodTemplateSpec{}, i32(-7), "84457b8b"},
		{"pause, no collision count", pauseTemplate(), nil, "6684c78bd6"},
		{"pause, collision count 0", pauseTemplate(), i32(0), "66dc4887cd"},
		{"pause, collision count 1", pauseTemplate(), i32(1), "7d97c4bd55"},
		{"pause, collision count -7", pauseTemplate(), i32(-7), "544fbf7b68"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := oracle.TemplateHash(tc.template, tc.collision); got != tc.want {
				t.Errorf("TemplateHash = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCurrentHashReadsCollisionCount(t *testing.T) {
	one := int32(1)
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: *pauseTemplate()}}
	if got, want := oracle.CurrentHash(ds), "6684c78bd6"; got != want {
		t.Errorf("CurrentHash without collisions = %q, want %q", got, want)
	}
	ds.Status.CollisionCount = &one
	if got, want := oracle.CurrentHash(ds), "7d97c4bd55"; got != want {
		t.Errorf("CurrentHash with collisionCount 1 = %q, want %q", got, want)
	}
}

func TestIsCurrent(t *testing.T) {
	cur := daemonSet("d", image("pause:2", 3)) // template generation annotation "3"
	old := daemonSet("d")
	noAnnotation := daemonSet("d", image("pause:2", 3))
	noAnnotation.Annotations = nil
	tests := []struct {
		name string
		ds   *appsv1.DaemonSet
		pod  *corev1.Pod
		want bool
	}{
		{"hash matches", cur, pod(cur, "p", "n"), true},
		{"old hash", cur, pod(cur, "p", "n", oldRev(old)), false},
		{"old hash, template generation matches", cur, pod(cur, "p", "n", oldRev(old), genLabel("3")), true},
		{"old hash, old template generation", cur, pod(cur, "p", "n", oldRev(old), genLabel("1")), false},
		{"no hash label, template generation matches", cur, pod(cur, "p", "n", hashLabel(""), genLabel("3")), true},
		{"metadata.generation is not the template generation", noAnnotation, pod(cur, "p", "n", oldRev(old), genLabel("3")), false},
		{"no labels at all", cur, pod(cur, "p", "n", hashLabel("")), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, oracle.IsCurrent(tc.ds, tc.pod)); diff != "" {
				t.Errorf("IsCurrent (-want +got):\n%s", diff)
			}
		})
	}
}
