package scenarios

import (
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/util/intstr"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetDefaults fills the fields a scenario may leave out and numbers the
// steps (Index, Path). Load calls it; call it on scenarios built in Go
// before Validate.
func SetDefaults(s *Scenario) {
	if s.Repetitions == 0 {
		s.Repetitions = 1
	}
	if s.Cluster.Nodes == 0 {
		s.Cluster.Nodes = s.DefaultNodes()
	}
	for i := range s.Cluster.Pools {
		p := &s.Cluster.Pools[i]
		if p.NamePrefix == "" {
			p.NamePrefix = p.Name
		}
	}
	for i := range s.Workloads {
		for _, ds := range s.Workloads[i].DaemonSets {
			if ds.Namespace == "" {
				ds.Namespace = metav1.NamespaceDefault
			}
		}
	}
	index := 0
	var number func(steps []Step, path string)
	number = func(steps []Step, path string) {
		for i := range steps {
			st := &steps[i]
			st.Index = index
			st.Path = indexPath(path, i)
			index++
			switch {
			case st.Evict != nil:
				if st.Evict.Taint == nil {
					st.Evict.Taint = &corev1.Taint{Key: DefaultEvictTaintKey}
				}
				if st.Evict.Taint.Effect == "" {
					st.Evict.Taint.Effect = corev1.TaintEffectNoExecute
				}
			case st.Delete != nil:
				if st.Delete.Cascade == "" {
					st.Delete.Cascade = CascadeBackground
				}
			case st.WaitConverged != nil:
				if st.WaitConverged.Timeout.Duration == 0 {
					st.WaitConverged.Timeout.Duration = DefaultWaitTimeout
				}
			}
			for b := range st.Parallel {
				number(st.Parallel[b], indexPath(st.Path+".parallel", b))
			}
		}
	}
	number(s.Steps, "steps")
}

// DefaultNodes is the node count the pools declare (the sum of their counts).
// DefaultHold is the barrier hold time when a scenario gives none.
const DefaultHold = time.Second

// MaxHold bounds hold: a barrier's stretch must fit well within its timeout.
const MaxHold = time.Minute

// BarrierHold is Hold, or DefaultHold when unset.
func (s *Scenario) BarrierHold() time.Duration {
	if s.Hold.Duration > 0 {
		return s.Hold.Duration
	}
	return DefaultHold
}

func (s *Scenario) DefaultNodes() int {
	n := 0
	for _, p := range s.Cluster.Pools {
		n += p.Count
	}
	return n
}

// Pool returns the named pool, or nil.
func (s *Scenario) Pool(name string) *NodePool {
	for i := range s.Cluster.Pools {
		if s.Cluster.Pools[i].Name == name {
			return &s.Cluster.Pools[i]
		}
	}
	return nil
}

// DaemonSets lists the DaemonSets of every workload, in order.
func (s *Scenario) DaemonSets() []*appsv1.DaemonSet {
	var out []*appsv1.DaemonSet
	for _, w := range s.Workloads {
		out = append(out, w.DaemonSets...)
	}
	return out
}

// DaemonSet resolves a step's reference: "name" (when only one DaemonSet
// has that name) or "namespace/name".
func (s *Scenario) DaemonSet(ref string) (*appsv1.DaemonSet, error) {
	var found []*appsv1.DaemonSet
	ns, name, qualified := strings.Cut(ref, "/")
	for _, ds := range s.DaemonSets() {
		if qualified && ds.Namespace == ns && ds.Name == name || !qualified && ds.Name == ref {
			found = append(found, ds)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		var names []string
		for _, ds := range s.DaemonSets() {
			names = append(names, Ref(ds))
		}
		return nil, fmt.Errorf("no DaemonSet %q in the workloads (have: %s)", ref, strings.Join(names, ", "))
	}
	var names []string
	for _, ds := range found {
		names = append(names, Ref(ds))
	}
	return nil, fmt.Errorf("DaemonSet name %q is ambiguous: write one of %s", ref, strings.Join(names, ", "))
}

// Ref is the qualified reference "namespace/name" of a DaemonSet.
func Ref(ds *appsv1.DaemonSet) string { return ds.Namespace + "/" + ds.Name }

// Walk calls fn for every step in document order, nested steps included,
// and stops early when fn returns false.
func (s *Scenario) Walk(fn func(st *Step) bool) {
	var walk func(steps []Step) bool
	walk = func(steps []Step) bool {
		for i := range steps {
			if !fn(&steps[i]) {
				return false
			}
			for _, branch := range steps[i].Parallel {
				if !walk(branch) {
					return false
				}
			}
		}
		return true
	}
	walk(s.Steps)
}

// DeepCopy copies the scenario. The loaded DaemonSets and Objects are shared:
// they are never mutated.
func (s *Scenario) DeepCopy() *Scenario {
	if s == nil {
		return nil
	}
	out := *s
	out.Metadata.Tags = slices.Clone(s.Metadata.Tags)
	out.Placeholders = maps.Clone(s.Placeholders)
	out.Cluster.Pools = make([]NodePool, len(s.Cluster.Pools))
	for i, p := range s.Cluster.Pools {
		p.Labels = maps.Clone(p.Labels)
		p.Taints = slices.Clone(p.Taints)
		p.Capacity = p.Capacity.DeepCopy()
		out.Cluster.Pools[i] = p
	}
	out.Cluster.Pods.FailImages = slices.Clone(s.Cluster.Pods.FailImages)
	out.Cluster.Pods.NeverReadyImages = slices.Clone(s.Cluster.Pods.NeverReadyImages)
	out.Workloads = make([]Workload, len(s.Workloads))
	for i, w := range s.Workloads {
		w.Placeholders = maps.Clone(w.Placeholders)
		w.DaemonSets = slices.Clone(w.DaemonSets)
		w.Objects = slices.Clone(w.Objects)
		w.docPaths = slices.Clone(w.docPaths)
		out.Workloads[i] = w
	}
	out.Steps = copySteps(s.Steps)
	return &out
}

func copySteps(steps []Step) []Step {
	if steps == nil {
		return nil
	}
	out := make([]Step, len(steps))
	for i, st := range steps {
		st.Expect = slices.Clone(st.Expect)
		st.Nodes = clonePtr(st.Nodes)
		if st.Labels != nil {
			l := *st.Labels
			l.Set = maps.Clone(l.Set)
			l.Remove = slices.Clone(l.Remove)
			st.Labels = &l
		}
		if st.Taints != nil {
			t := *st.Taints
			t.Add = slices.Clone(t.Add)
			t.Remove = slices.Clone(t.Remove)
			st.Taints = &t
		}
		st.Cordon = clonePtr(st.Cordon)
		st.Uncordon = clonePtr(st.Uncordon)
		if st.Evict != nil {
			e := *st.Evict
			e.Taint = clonePtr(e.Taint)
			st.Evict = &e
		}
		st.MarkNotReady = clonePtr(st.MarkNotReady)
		st.MarkReady = clonePtr(st.MarkReady)
		if st.Create != nil {
			c := *st.Create
			c.DaemonSets = slices.Clone(c.DaemonSets)
			st.Create = &c
		}
		st.Delete = clonePtr(st.Delete)
		if st.Update != nil {
			u := *st.Update
			u.Env = maps.Clone(u.Env)
			if u.Patch != nil {
				u.Patch = copyAny(u.Patch).(map[string]any)
			}
			st.Update = &u
		}
		if st.Strategy != nil {
			x := *st.Strategy
			x.MaxUnavailable = clonePtr(x.MaxUnavailable)
			x.MaxSurge = clonePtr(x.MaxSurge)
			x.MinReadySeconds = clonePtr(x.MinReadySeconds)
			st.Strategy = &x
		}
		st.Rollback = clonePtr(st.Rollback)
		st.Pods = clonePtr(st.Pods)
		st.Controller = clonePtr(st.Controller)
		if st.Fault != nil {
			f := *st.Fault
			f.KillStorm, f.RejectCreates, f.APIServerRestart = clonePtr(f.KillStorm), clonePtr(f.RejectCreates), clonePtr(f.APIServerRestart)
			f.SlowAPI, f.ConflictingWriters = clonePtr(f.SlowAPI), clonePtr(f.ConflictingWriters)
			f.WriteTimeouts = clonePtr(f.WriteTimeouts)
			st.Fault = &f
		}
		st.Pause = clonePtr(st.Pause)
		if st.WaitConverged != nil {
			w := *st.WaitConverged
			w.DaemonSets = slices.Clone(w.DaemonSets)
			st.WaitConverged = &w
		}
		if st.Parallel != nil {
			branches := make([][]Step, len(st.Parallel))
			for b, branch := range st.Parallel {
				branches[b] = copySteps(branch)
			}
			st.Parallel = branches
		}
		out[i] = st
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copyAny(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = copyAny(x)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = copyAny(x)
		}
		return s
	}
	return v
}

// FaultNamespace is where a rejectCreates fault puts its quota: its own
// Namespace, else the one namespace all the scenario's DaemonSets share.
func (s *Scenario) FaultNamespace(r *RejectCreates) (string, error) {
	if r.Namespace != "" {
		return r.Namespace, nil
	}
	ns := ""
	for _, ds := range s.DaemonSets() {
		switch {
		case ns == "":
			ns = ds.Namespace
		case ds.Namespace != ns:
			return "", fmt.Errorf("the DaemonSets are in several namespaces (%s, %s): say which one", ns, ds.Namespace)
		}
	}
	if ns == "" {
		return "", errors.New("the scenario has no DaemonSet to take the namespace from: say which one")
	}
	return ns, nil
}

// FaultQuota is the number of pods a rejectCreates fault allows: its count,
// or its percentage of the scenario's nodes, rounded down.
func (s *Scenario) FaultQuota(r *RejectCreates) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(&r.Pods, s.DefaultNodes(), false)
	if err != nil || n < 0 {
		return 0 // Validate refuses such values
	}
	return n
}
