package scenarios

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// These pure helpers turn DaemonSet steps into new objects or patches, so
// that the runner only does I/O: Get, apply, Update (or Patch).

// container finds the container an update step targets: the named one, or
// the only one.
func container(ds *appsv1.DaemonSet, name string) (int, error) {
	cs := ds.Spec.Template.Spec.Containers
	if name == "" {
		if len(cs) == 1 {
			return 0, nil
		}
		names := make([]string, len(cs))
		for i, c := range cs {
			names[i] = c.Name
		}
		return -1, fmt.Errorf("container is required: DaemonSet %s has containers %s", Ref(ds), strings.Join(names, ", "))
	}
	for i, c := range cs {
		if c.Name == name {
			return i, nil
		}
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return -1, fmt.Errorf("DaemonSet %s has no container %q (have: %s)", Ref(ds), name, strings.Join(names, ", "))
}

// ApplyUpdate returns ds with the update step applied: the image and env of
// the container set, then the strategic merge patch applied. ds is not
// changed.
func ApplyUpdate(ds *appsv1.DaemonSet, u *UpdateStep) (*appsv1.DaemonSet, error) {
	out := ds.DeepCopy()
	if u.Image != "" || len(u.Env) > 0 {
		i, err := container(out, u.Container)
		if err != nil {
			return nil, err
		}
		c := &out.Spec.Template.Spec.Containers[i]
		if u.Image != "" {
			c.Image = u.Image
		}
		for _, name := range slices.Sorted(maps.Keys(u.Env)) {
			env := corev1.EnvVar{Name: name, Value: u.Env[name]}
			if j := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }); j >= 0 {
				c.Env[j] = env
			} else {
				c.Env = append(c.Env, env)
			}
		}
	}
	if u.Patch == nil {
		return out, nil
	}
	patch, err := json.Marshal(u.Patch)
	if err != nil {
		return nil, fmt.Errorf("encoding patch: %w", err)
	}
	return ApplyPatch(out, patch)
}

// UpdatePatch is the strategic merge patch that takes ds to
// ApplyUpdate(ds, u): send it with types.StrategicMergePatchType.
func UpdatePatch(ds *appsv1.DaemonSet, u *UpdateStep) ([]byte, error) {
	after, err := ApplyUpdate(ds, u)
	if err != nil {
		return nil, err
	}
	return TwoWayPatch(ds, after)
}

// ApplyStrategy returns ds with the strategy step applied. Switching to
// OnDelete drops rollingUpdate, as the API server requires.
func ApplyStrategy(ds *appsv1.DaemonSet, s *StrategyStep) *appsv1.DaemonSet {
	out := ds.DeepCopy()
	us := &out.Spec.UpdateStrategy
	if s.Type != "" {
		us.Type = s.Type
	}
	if us.Type == appsv1.OnDeleteDaemonSetStrategyType {
		us.RollingUpdate = nil
	}
	if s.MaxUnavailable != nil || s.MaxSurge != nil {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if s.MaxUnavailable != nil {
			x := *s.MaxUnavailable
			us.RollingUpdate.MaxUnavailable = &x
		}
		if s.MaxSurge != nil {
			x := *s.MaxSurge
			us.RollingUpdate.MaxSurge = &x
		}
	}
	if s.MinReadySeconds != nil {
		out.Spec.MinReadySeconds = *s.MinReadySeconds
	}
	return out
}

// StrategyPatch is the strategic merge patch that takes ds to
// ApplyStrategy(ds, s).
func StrategyPatch(ds *appsv1.DaemonSet, s *StrategyStep) ([]byte, error) {
	return TwoWayPatch(ds, ApplyStrategy(ds, s))
}

// ApplyPatch applies a strategic merge patch to ds and returns the result.
func ApplyPatch(ds *appsv1.DaemonSet, patch []byte) (*appsv1.DaemonSet, error) {
	orig, err := json.Marshal(ds)
	if err != nil {
		return nil, fmt.Errorf("encoding DaemonSet %s: %w", Ref(ds), err)
	}
	merged, err := strategicpatch.StrategicMergePatch(orig, patch, appsv1.DaemonSet{})
	if err != nil {
		return nil, fmt.Errorf("applying patch to DaemonSet %s: %w", Ref(ds), err)
	}
	out, err := decodeJSONDaemonSet(merged)
	if err != nil {
		return nil, fmt.Errorf("applying patch to DaemonSet %s: %w", Ref(ds), err)
	}
	return out, nil
}

// decodeJSONDaemonSet decodes strictly, so that a patch with a misspelt
// field fails instead of being dropped.
func decodeJSONDaemonSet(data []byte) (*appsv1.DaemonSet, error) {
	var is issues
	docs, err := parseDocs(data)
	if err != nil || len(docs) != 1 {
		return nil, fmt.Errorf("decoding the patched object: %v", err)
	}
	out := &appsv1.DaemonSet{}
	newDecoder("", &is, map[string]Position{}).decodeStruct(docs[0].Content[0], reflect.ValueOf(out).Elem(), "")
	if len(is.errs) > 0 {
		msgs := make([]string, len(is.errs))
		for i, e := range is.errs {
			msgs[i] = e.Path + ": " + e.Message
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return out, nil
}

// TwoWayPatch is the strategic merge patch from before to after.
func TwoWayPatch(before, after *appsv1.DaemonSet) ([]byte, error) {
	b, err := json.Marshal(before)
	if err != nil {
		return nil, fmt.Errorf("encoding DaemonSet: %w", err)
	}
	a, err := json.Marshal(after)
	if err != nil {
		return nil, fmt.Errorf("encoding DaemonSet: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(b, a, appsv1.DaemonSet{})
	if err != nil {
		return nil, fmt.Errorf("computing patch for DaemonSet %s: %w", Ref(after), err)
	}
	return patch, nil
}

func equalSelector(a, b *metav1.LabelSelector) bool { return apiequality.Semantic.DeepEqual(a, b) }

// RollbackRevision picks the ControllerRevision a rollback step restores, as
// kubectl rollout undo does: toRevision, or with 0 the one before the
// newest. history is the DaemonSet's revisions in any order.
func RollbackRevision(history []*appsv1.ControllerRevision, toRevision int64) (*appsv1.ControllerRevision, error) {
	if toRevision < 0 {
		return nil, fmt.Errorf("choosing revision: %d is negative", toRevision)
	}
	if toRevision == 0 {
		if len(history) < 2 {
			return nil, fmt.Errorf("choosing revision: no previous revision to roll back to")
		}
		sorted := slices.SortedFunc(slices.Values(history), func(a, b *appsv1.ControllerRevision) int {
			return cmp.Compare(a.Revision, b.Revision)
		})
		return sorted[len(sorted)-2], nil
	}
	for _, h := range history {
		if h.Revision == toRevision {
			return h, nil
		}
	}
	return nil, fmt.Errorf("choosing revision: revision %d is not in the history", toRevision)
}

// ApplyRevision restores the pod template a ControllerRevision recorded
// (its data is a strategic merge patch that replaces spec.template).
func ApplyRevision(ds *appsv1.DaemonSet, rev *appsv1.ControllerRevision) (*appsv1.DaemonSet, error) {
	if len(rev.Data.Raw) == 0 {
		return nil, fmt.Errorf("revision %s holds no data", rev.Name)
	}
	return ApplyPatch(ds, rev.Data.Raw)
}
