//go:build mutants

package controller

import (
	"fmt"
	"hash/fnv"
	"k8s.io/client-go/util/workqueue"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/controller/plan"
)

// This file exists only in the `mutants` build (make mutants): each variant
// is one realistic bug, chosen by DSBENCH_MUTANT, that the harness must
// catch. The first moment a variant acts differently from the correct
// controller (its fault) is appended to the file DSBENCH_MUTANT_FAULTS, so
// that the harness can say how long after the fault it caught it.

// MutantsBuilt reports whether the binary carries the broken variants.
const MutantsBuilt = true

// Mutant names a broken variant.
type Mutant string

// The variants, one realistic bug each.
const (
	CreateOnNoSchedule   Mutant = "create-on-noschedule"    // ignores untolerated NoSchedule taints when creating
	IgnoreNoExecute      Mutant = "ignore-noexecute"        // treats NoExecute taints as tolerated: keeps and creates pods under them
	KeepAfterLabelChange Mutant = "keep-after-label-change" // keeps pods on nodes whose labels no longer select them
	SurgeAll             Mutant = "surge-all"               // surges every node at once
	ExceedMaxUnavailable Mutant = "exceed-max-unavailable"  // deletes every old pod at once
	DoubleCreate         Mutant = "double-create"           // creates two pods on a few nodes
	ChurnHealthy         Mutant = "churn-healthy"           // deletes healthy pods on a few nodes, outside any rollout
	IgnoreNewNodes       Mutant = "ignore-new-nodes"        // never serves nodes created after it started
	RememberDeletedNodes Mutant = "remember-deleted-nodes"  // a node cache that never forgets: serves deleted nodes
	OldTemplateOnJoin    Mutant = "old-template-on-join"    // joining nodes get the first template it saw
	StopRolloutHalfway   Mutant = "stop-rollout-halfway"    // stops replacing once half the pods are updated
	NoAdoption           Mutant = "no-adoption"             // creates new pods beside orphans instead of adopting them
	WrongDesiredCount    Mutant = "wrong-desired-count"     // desiredNumberScheduled counts every node
	HotLoopOnError       Mutant = "hot-loop-on-error"       // retries a failed sync at once, without backoff
	NoStatusOnError      Mutant = "no-status-on-error"      // skips the status write when a pod write failed
	// counts a pod it is deleting, or that terminates, as gone: its
	// replacement goes beside it at once, without surge
	CreateBesideTerminating Mutant = "create-beside-terminating"
	// takes a Timeout answer for a refused write, as upstream does: it
	// creates again while the first create may still land
	TrustWriteTimeouts Mutant = "trust-write-timeouts"
	// takes an old Running pod for available whatever its Ready
	// condition: one whose readiness probe fails uses no budget, and is
	// not replaced before the available ones
	ReadyMeansRunning Mutant = "ready-means-running"
)

// Mutants lists every variant.
func Mutants() []Mutant {
	return []Mutant{CreateOnNoSchedule, IgnoreNoExecute, KeepAfterLabelChange, SurgeAll,
		ExceedMaxUnavailable, DoubleCreate, ChurnHealthy, IgnoreNewNodes, RememberDeletedNodes,
		OldTemplateOnJoin, StopRolloutHalfway, NoAdoption, WrongDesiredCount, HotLoopOnError, NoStatusOnError,
		CreateBesideTerminating, TrustWriteTimeouts, ReadyMeansRunning}
}

var mutant = struct {
	sync.Mutex
	name      Mutant
	faultFile string
	faulted   bool
	started   time.Time
	nodes     map[string]*corev1.Node    // RememberDeletedNodes: every node ever seen
	first     map[string]firstTemplate   // OldTemplateOnJoin: per DaemonSet UID
	served    map[string]map[string]bool // OldTemplateOnJoin: nodes that had a pod, per DaemonSet UID
	rollout   map[string]bool            // OldTemplateOnJoin: a rollout is under way, per DaemonSet key
	deleted   map[string]time.Time       // ChurnHealthy: when we last deleted on a node
}{
	name:      Mutant(os.Getenv("DSBENCH_MUTANT")),
	faultFile: os.Getenv("DSBENCH_MUTANT_FAULTS"),
	started:   time.Now(),
	nodes:     map[string]*corev1.Node{},
	first:     map[string]firstTemplate{},
	served:    map[string]map[string]bool{},
	rollout:   map[string]bool{},
	deleted:   map[string]time.Time{},
}

type firstTemplate struct {
	ds   *appsv1.DaemonSet
	hash string
}

// init refuses an unknown variant: a typo must not run the correct
// controller under a mutant's name and report it "missed".
func init() {
	if mutant.name == "" {
		return
	}
	if !slices.Contains(Mutants(), mutant.name) {
		fmt.Fprintf(os.Stderr, "DSBENCH_MUTANT=%q is not a known variant; known: %v\n", mutant.name, Mutants())
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "MUTANT ACTIVE %s\n", mutant.name)
}

// fault records the first wrong action of this process.
func fault(format string, args ...any) {
	mutant.Lock()
	defer mutant.Unlock()
	if mutant.faulted {
		return
	}
	mutant.faulted = true
	// One line per fault: a joined error's newlines would start lines that
	// the harness cannot read.
	detail := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", "; ")
	line := fmt.Sprintf("%s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), mutant.name, detail)
	fmt.Fprint(os.Stderr, "MUTANT FAULT "+line)
	if mutant.faultFile == "" {
		return
	}
	if f, err := os.OpenFile(mutant.faultFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		f.WriteString(line)
		f.Close()
	}
}

// few picks about one node in n, the same ones every time.
func few(node string, n uint32) bool {
	h := fnv.New32a()
	h.Write([]byte(node))
	return h.Sum32()%n == 0
}

func computePlan(key string, in plan.Input) plan.Plan {
	switch mutant.name {
	case CreateOnNoSchedule, IgnoreNoExecute:
		// The taint manager evicts pods under an untolerated NoExecute
		// taint whatever the controller does; the bug shows in what the
		// controller creates after that.
		effect := corev1.TaintEffectNoSchedule
		if mutant.name == IgnoreNoExecute {
			effect = corev1.TaintEffectNoExecute
		}
		in2 := in
		in2.DaemonSet = in.DaemonSet.DeepCopy()
		in2.DaemonSet.Spec.Template.Spec.Tolerations = append(in2.DaemonSet.Spec.Template.Spec.Tolerations,
			corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: effect})
		return compared(in, plan.Compute(in2))
	case SurgeAll:
		ru := in.DaemonSet.Spec.UpdateStrategy.RollingUpdate
		if ru == nil || ru.MaxSurge == nil || ru.MaxSurge.String() == "0" || ru.MaxSurge.String() == "0%" {
			break
		}
		in2 := in
		in2.DaemonSet = in.DaemonSet.DeepCopy()
		all := intstr.FromString("100%")
		in2.DaemonSet.Spec.UpdateStrategy.RollingUpdate.MaxSurge = &all
		return compared(in, plan.Compute(in2))
	case ExceedMaxUnavailable:
		if in.DaemonSet.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
			break
		}
		in2 := in
		in2.DaemonSet = in.DaemonSet.DeepCopy()
		all, zero := intstr.FromString("100%"), intstr.FromInt32(0)
		in2.DaemonSet.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &all, MaxSurge: &zero}
		return compared(in, plan.Compute(in2))
	case ReadyMeansRunning:
		// An old Running pod counts as available whatever its Ready
		// condition (as if readiness were read from the phase).
		in2 := in
		in2.Pods, in2.Facts = slices.Clone(in.Pods), nil
		changed := false
		for i, pod := range in2.Pods {
			if pod.Status.Phase != corev1.PodRunning || plan.IsPodReady(pod) || pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == in.Hash {
				continue
			}
			p := pod.DeepCopy()
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: p.CreationTimestamp}}
			in2.Pods[i], changed = p, true
		}
		if !changed {
			break
		}
		return compared(in, plan.Compute(in2))
	case CreateBesideTerminating:
		in2 := in
		in2.Pods, in2.Facts, in2.InFlight.Deletes = nil, nil, nil
		kept := len(in.Facts) == len(in.Pods)
		for i, pod := range in.Pods {
			if _, deleting := in.InFlight.Deletes[pod.Name]; deleting || pod.DeletionTimestamp != nil {
				continue
			}
			in2.Pods = append(in2.Pods, pod)
			if kept {
				in2.Facts = append(in2.Facts, in.Facts[i])
			}
		}
		return compared(in, plan.Compute(in2))
	case RememberDeletedNodes:
		mutant.Lock()
		have := map[string]bool{}
		for _, n := range in.Nodes {
			mutant.nodes[n.Name] = n
			have[n.Name] = true
		}
		in2 := in
		in2.Nodes = slices.Clone(in.Nodes)
		for name, n := range mutant.nodes {
			if !have[name] {
				in2.Nodes = append(in2.Nodes, n)
			}
		}
		mutant.Unlock()
		return compared(in, plan.Compute(in2))
	}

	p := plan.Compute(in)
	nodes := map[string]*corev1.Node{}
	for _, n := range in.Nodes {
		nodes[n.Name] = n
	}
	switch mutant.name {
	case KeepAfterLabelChange:
		p.Deletes = slices.DeleteFunc(p.Deletes, func(d plan.PodDeletion) bool {
			n := nodes[d.Node]
			if d.Reason != plan.NodeNotEligibleReason || n == nil {
				return false
			}
			if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }) {
				fault("kept pod %s on node %s", d.Name, d.Node)
				return true
			}
			return false
		})
	case DoubleCreate:
		for _, node := range slices.Clone(p.Creates) {
			if few(node, 20) {
				fault("two pods for node %s", node)
				p.Creates = append(p.Creates, node)
			}
		}
	case ChurnHealthy:
		if len(p.Creates) > 0 || len(p.Deletes) > 0 {
			break
		}
		mutant.Lock()
		for _, pod := range in.Pods {
			node, _ := plan.TargetNodeName(pod)
			if n := nodes[node]; n == nil || !few(node, 25) || pod.DeletionTimestamp != nil || !plan.IsPodReady(pod) {
				continue
			}
			if last, ok := mutant.deleted[node]; ok && in.Now.Sub(last) < 15*time.Second {
				continue
			}
			if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != in.Hash {
				continue
			}
			mutant.deleted[node] = in.Now
			p.Deletes = append(p.Deletes, plan.PodDeletion{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Node: node, Reason: "Mutant"})
			go fault("deleted healthy pod %s on node %s", pod.Name, node)
		}
		mutant.Unlock()
		p.RequeueAfter = 5 * time.Second
	case IgnoreNewNodes:
		p.Creates = slices.DeleteFunc(p.Creates, func(node string) bool {
			if n := nodes[node]; n != nil && n.CreationTimestamp.Time.After(mutant.started) {
				fault("no pod for new node %s", node)
				return true
			}
			return false
		})
	case OldTemplateOnJoin:
		mutant.Lock()
		uid := string(in.DaemonSet.UID)
		if _, ok := mutant.first[uid]; !ok {
			mutant.first[uid] = firstTemplate{ds: in.DaemonSet.DeepCopy(), hash: in.Hash}
		}
		if mutant.served[uid] == nil {
			mutant.served[uid] = map[string]bool{}
		}
		old := false
		for _, pod := range in.Pods {
			node, _ := plan.TargetNodeName(pod)
			mutant.served[uid][node] = true
			old = old || pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != in.Hash
		}
		mutant.rollout[key] = old
		mutant.Unlock()
	case StopRolloutHalfway:
		current, outdated := 0, 0
		for _, pod := range in.Pods {
			if pod.DeletionTimestamp != nil {
				continue
			}
			if pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == in.Hash {
				current++
			} else {
				outdated++
			}
		}
		if outdated == 0 || current < outdated {
			break
		}
		withPod := map[string]bool{}
		for _, pod := range in.Pods {
			node, _ := plan.TargetNodeName(pod)
			withPod[node] = true
		}
		p.Deletes = slices.DeleteFunc(p.Deletes, func(d plan.PodDeletion) bool {
			if d.Reason == plan.RollingUpdateReason || d.Reason == plan.SurgeReplacedReason {
				fault("left old pod %s on node %s", d.Name, d.Node)
				return true
			}
			return false
		})
		p.Creates = slices.DeleteFunc(p.Creates, func(node string) bool { return withPod[node] })
	case WrongDesiredCount:
		n := int32(len(in.Nodes))
		if p.Status.DesiredNumberScheduled != n {
			fault("desiredNumberScheduled %d instead of %d", n, p.Status.DesiredNumberScheduled)
			p.Status.DesiredNumberScheduled = n
		}
	}
	return p
}

// compared returns the mutated plan, recording a fault when it acts
// differently from the correct one. The status stays the correct one: each
// variant has one bug, and a status computed from its altered input would be
// a second one, which its fault record would not show.
func compared(in plan.Input, mutated plan.Plan) plan.Plan {
	correct := plan.Compute(in)
	mutated.Status = correct.Status
	if !slices.Equal(correct.Creates, mutated.Creates) {
		fault("creates on %v instead of %v", headOf(mutated.Creates), headOf(correct.Creates))
	} else if len(correct.Deletes) != len(mutated.Deletes) {
		fault("%d deletes instead of %d", len(mutated.Deletes), len(correct.Deletes))
	}
	return mutated
}

func headOf(s []string) []string {
	if len(s) > 5 {
		return append(slices.Clone(s[:5]), fmt.Sprintf("... %d in all", len(s)))
	}
	return s
}

func createTemplate(key string, ds *appsv1.DaemonSet, hash, node string) (*appsv1.DaemonSet, string) {
	if mutant.name != OldTemplateOnJoin {
		return ds, hash
	}
	mutant.Lock()
	defer mutant.Unlock()
	uid := string(ds.UID)
	first, ok := mutant.first[uid]
	if !ok || first.hash == hash || !mutant.rollout[key] || mutant.served[uid][node] {
		return ds, hash
	}
	go fault("old template %s for joining node %s", first.hash, node)
	return first.ds, first.hash
}

func skipAdoption(pod *corev1.Pod) bool {
	if mutant.name != NoAdoption {
		return false
	}
	fault("did not adopt orphan %s/%s", pod.Namespace, pod.Name)
	return true
}

func requeueAfterError(q workqueue.TypedRateLimitingInterface[string], key string) {
	if mutant.name == HotLoopOnError {
		fault("requeued %s at once after a failed sync", key)
		q.Add(key)
		return
	}
	q.AddRateLimited(key)
}

func skipStatusAfterPodError(err error) bool {
	if mutant.name == NoStatusOnError && err != nil {
		fault("skipped the status write after: %v", err)
		return true
	}
	return false
}

func mayHaveLanded(err error) bool {
	if mutant.name == TrustWriteTimeouts && writeMayHaveLanded(err) {
		fault("took %v for a refused write", err)
		return false
	}
	return writeMayHaveLanded(err)
}
