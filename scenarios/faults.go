package scenarios

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// HasFault says whether any step of the scenario, nested ones included,
// injects a fault of kind k.
func (s *Scenario) HasFault(k FaultKind) bool {
	found := false
	s.Walk(func(st *Step) bool {
		found = st.Fault != nil && slices.Contains(st.Fault.Kinds(), k)
		return !found
	})
	return found
}

// UsesAPIProxy says whether the controller of this scenario must reach the
// API server through the harness's proxy: a slowAPI or writeTimeouts fault
// acts there.
func (s *Scenario) UsesAPIProxy() bool {
	return s.HasFault(FaultSlowAPI) || s.HasFault(FaultWriteTimeouts)
}

// WriterEnv is the environment variable whose value the template writes of
// a conflictingWriters fault change: a new value each time, so that each
// write is a new template.
const WriterEnv = "DSBENCH_WRITER"

// MaxApplyEvery bounds a conflictingWriters fault's applyEvery. The oracle
// gives the controller a status lag (bench.StatusLag, 10 s) after each
// change of the DaemonSet's generation before it judges the status; with a
// template write at least that often, it never judges the status between
// two of them, when the fault's own bogus status would be blamed on the
// controller.
const MaxApplyEvery = 10 * time.Second

// WriterWrite is one template write of a conflictingWriters fault.
type WriterWrite struct {
	// At is when it is made, from the fault's start.
	At time.Duration
	// Apply is a server-side apply (field manager "kubectl", forced);
	// otherwise a read-modify-write update ("kubectl-edit").
	Apply bool
	// Value is what it sets WriterEnv to.
	Value string
}

// Writes lists the template writes of the fault of step (its Step.Index):
// one at the start and one every ApplyEvery after it while within For,
// alternately an apply and an edit, each with a value no other write of the
// scenario sets.
func (w ConflictingWriters) Writes(step int) []WriterWrite {
	if w.ApplyEvery.Duration <= 0 {
		return nil
	}
	var out []WriterWrite
	for i := 0; ; i++ {
		at := time.Duration(i) * w.ApplyEvery.Duration
		if i > 0 && at >= w.For.Duration {
			return out
		}
		apply := i%2 == 0
		verb := "edit"
		if apply {
			verb = "apply"
		}
		out = append(out, WriterWrite{At: at, Apply: apply, Value: fmt.Sprintf("step%d-%s-%d", step, verb, i+1)})
	}
}

// WithWriterValue returns ds with WriterEnv of the writers' container set
// to value: what kubectl edit writes back. ds is not changed.
func WithWriterValue(ds *appsv1.DaemonSet, w *ConflictingWriters, value string) (*appsv1.DaemonSet, error) {
	return ApplyUpdate(ds, &UpdateStep{DaemonSet: w.DaemonSet, Container: w.Container, Env: map[string]string{WriterEnv: value}})
}

// WriterApplyConfig is the server-side apply configuration that sets
// WriterEnv of the writers' container in ds to value, and owns nothing
// else: send it with types.ApplyPatchType.
func WriterApplyConfig(ds *appsv1.DaemonSet, w *ConflictingWriters, value string) ([]byte, error) {
	i, err := container(ds, w.Container)
	if err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "DaemonSet",
		"metadata":   map[string]any{"name": ds.Name, "namespace": ds.Namespace},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": ds.Spec.Template.Spec.Containers[i].Name, "env": []any{
				map[string]any{"name": WriterEnv, "value": value},
			}},
		}}}},
	}
	return json.Marshal(cfg)
}

// WriterValue is the value of WriterEnv in the writers' container of ds,
// and whether it is set.
func WriterValue(ds *appsv1.DaemonSet, w *ConflictingWriters) (string, bool, error) {
	i, err := container(ds, w.Container)
	if err != nil {
		return "", false, err
	}
	env := ds.Spec.Template.Spec.Containers[i].Env
	j := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == WriterEnv })
	if j < 0 {
		return "", false, nil
	}
	return env[j].Value, true, nil
}
