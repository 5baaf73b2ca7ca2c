package kwok

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
)

// Labels and annotations on every fake node.
const (
	// ManagedAnnotation makes the kwok controller adopt the node (kwokctl's
	// default node selector).
	ManagedAnnotation = "kwok.x-k8s.io/node"
	// PoolLabel names the pool a node belongs to.
	PoolLabel = "dsbench.dev/pool"
	// FrozenStatusLabel makes kwok leave the node's status alone, so that a
	// node marked NotReady stays NotReady.
	FrozenStatusLabel = "dsbench.dev/frozen-status"
)

// DefaultCapacity is what a fake node offers when a pool says nothing.
var DefaultCapacity = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("32"),
	corev1.ResourceMemory: resource.MustParse("128Gi"),
	corev1.ResourcePods:   resource.MustParse("110"),
}

// NodePool describes a set of identical fake nodes named <Prefix>-<index>.
type NodePool struct {
	Prefix   string
	Count    int
	Labels   map[string]string
	Taints   []corev1.Taint
	Capacity corev1.ResourceList
	// Start is the index of the first node, so that pools can grow.
	Start int
}

// Validate names the first bad field.
func (p NodePool) Validate() error {
	if p.Count < 0 {
		return fmt.Errorf("count %d: must not be negative", p.Count)
	}
	if p.Start < 0 {
		return fmt.Errorf("start %d: must not be negative", p.Start)
	}
	if errs := validation.IsDNS1123Subdomain(p.NodeName(p.Start + p.Count)); p.Prefix == "" || len(errs) > 0 {
		return fmt.Errorf("prefix %q: must be a DNS subdomain: %s", p.Prefix, strings.Join(errs, "; "))
	}
	for k, v := range p.Labels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("labels[%q]: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("labels[%q] value %q: %s", k, v, strings.Join(errs, "; "))
		}
	}
	for i, t := range p.Taints {
		if err := ValidateTaint(t); err != nil {
			return fmt.Errorf("taints[%d]: %w", i, err)
		}
	}
	return nil
}

// ValidateTaint checks the key and the effect of a taint.
func ValidateTaint(t corev1.Taint) error {
	if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		return fmt.Errorf("key %q: %s", t.Key, strings.Join(errs, "; "))
	}
	if t.Value != "" {
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return fmt.Errorf("value %q: %s", t.Value, strings.Join(errs, "; "))
		}
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	default:
		return fmt.Errorf("effect %q: must be NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
	}
}

// ParseTaint parses key[=value]:Effect, as kubectl taint does.
func ParseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("taint %q: want key[=value]:Effect", s)
	}
	key, value, _ := strings.Cut(kv, "=")
	t := corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
	if err := ValidateTaint(t); err != nil {
		return corev1.Taint{}, fmt.Errorf("taint %q: %w", s, err)
	}
	return t, nil
}

// NodeName is the name of the node at index i.
func (p NodePool) NodeName(i int) string { return fmt.Sprintf("%s-%d", p.Prefix, i) }

// NodeNames lists the pool's node names in index order.
func (p NodePool) NodeNames() []string {
	names := make([]string, 0, p.Count)
	for i := p.Start; i < p.Start+p.Count; i++ {
		names = append(names, p.NodeName(i))
	}
	return names
}

// Node builds the Node object at index i.
func (p NodePool) Node(i int) *corev1.Node {
	capacity := p.Capacity
	if len(capacity) == 0 {
		capacity = DefaultCapacity
	}
	name := p.NodeName(i)
	labels := map[string]string{
		corev1.LabelHostname:   name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
		"type":                 "kwok",
		PoolLabel:              p.Prefix,
	}
	for k, v := range p.Labels {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{ManagedAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec: corev1.NodeSpec{Taints: append([]corev1.Taint(nil), p.Taints...)},
		Status: corev1.NodeStatus{
			Capacity:    capacity.DeepCopy(),
			Allocatable: capacity.DeepCopy(),
			Phase:       corev1.NodeRunning,
		},
	}
}

// DefaultParallelism is the number of node writes in flight.
const DefaultParallelism = 64

// CreateNodes creates the pool's nodes with up to parallelism writes in
// flight. A node that already exists is left as it is.
func CreateNodes(ctx context.Context, client kubernetes.Interface, p NodePool, parallelism int) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("node pool %q: %w", p.Prefix, err)
	}
	return forEach(ctx, p.Start, p.Start+p.Count, parallelism, func(ctx context.Context, i int) error {
		_, err := client.CoreV1().Nodes().Create(ctx, p.Node(i), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", p.NodeName(i), err)
		}
		return nil
	})
}

// DeleteNodes deletes the named nodes. Nodes that are gone already are fine.
func DeleteNodes(ctx context.Context, client kubernetes.Interface, names []string, parallelism int) error {
	return forEach(ctx, 0, len(names), parallelism, func(ctx context.Context, i int) error {
		err := client.CoreV1().Nodes().Delete(ctx, names[i], metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting node %s: %w", names[i], err)
		}
		return nil
	})
}

// NodePatch is a change to a node's labels, taints or schedulability. A nil
// label value removes the label.
type NodePatch struct {
	Labels map[string]*string
	// SetTaints are added, or replace a taint with the same key and effect.
	SetTaints []corev1.Taint
	// RemoveTaints are removed by key (and effect, when it is set).
	RemoveTaints []corev1.Taint
	// Unschedulable, when set, cordons (true) or uncordons (false).
	Unschedulable *bool
}

// PatchNodes applies the patch to each named node and returns the nodes as
// written, in the order of names. Taint changes need the current taints, so
// those go through a read-modify-write with a resource version precondition
// and are retried on conflict.
func PatchNodes(ctx context.Context, client kubernetes.Interface, names []string, patch NodePatch, parallelism int) ([]*corev1.Node, error) {
	out := make([]*corev1.Node, len(names))
	err := forEach(ctx, 0, len(names), parallelism, func(ctx context.Context, i int) error {
		node, err := patchNode(ctx, client, names[i], patch)
		if err != nil {
			return fmt.Errorf("patching node %s: %w", names[i], err)
		}
		out[i] = node
		return nil
	})
	return out, err
}

func patchNode(ctx context.Context, client kubernetes.Interface, name string, patch NodePatch) (*corev1.Node, error) {
	if len(patch.SetTaints) == 0 && len(patch.RemoveTaints) == 0 {
		body := map[string]any{}
		if len(patch.Labels) > 0 {
			body["metadata"] = map[string]any{"labels": patch.Labels}
		}
		if patch.Unschedulable != nil {
			body["spec"] = map[string]any{"unschedulable": *patch.Unschedulable}
		}
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		return client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	}
	return updateNode(ctx, client, name, func(node *corev1.Node) {
		for k, v := range patch.Labels {
			if v == nil {
				delete(node.Labels, k)
			} else {
				if node.Labels == nil {
					node.Labels = map[string]string{}
				}
				node.Labels[k] = *v
			}
		}
		if patch.Unschedulable != nil {
			node.Spec.Unschedulable = *patch.Unschedulable
		}
		node.Spec.Taints = EditTaints(node.Spec.Taints, patch.SetTaints, patch.RemoveTaints)
	})
}

// updateNode reads the node, lets mutate change a copy and writes it with
// the read's resource version, again on a conflict (up to 10 times).
func updateNode(ctx context.Context, client kubernetes.Interface, name string, mutate func(*corev1.Node)) (*corev1.Node, error) {
	for attempt := 0; ; attempt++ {
		node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		node = node.DeepCopy()
		mutate(node)
		updated, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && attempt < 10 {
			continue
		}
		return updated, err
	}
}

// ResetNodes makes each node's labels, taints and schedulability those of
// its want again (nodes are named by want), keeping the labels that the
// apiserver adds itself and the taints of the node lifecycle. A run can
// then reuse a node that an earlier run relabeled, tainted or cordoned,
// instead of deleting and recreating it.
func ResetNodes(ctx context.Context, client kubernetes.Interface, wants []*corev1.Node, parallelism int) error {
	return forEach(ctx, 0, len(wants), parallelism, func(ctx context.Context, i int) error {
		want := wants[i]
		_, err := updateNode(ctx, client, want.Name, func(node *corev1.Node) {
			labels := maps.Clone(want.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			for k, v := range node.Labels {
				if IsAPIServerLabel(k) {
					labels[k] = v
				}
			}
			node.Labels = labels
			// Taints of the node lifecycle (node.kubernetes.io/*) are its
			// controller's: it lifts unschedulable once the node is
			// uncordoned, and would put back one we removed too early.
			taints := slices.Clone(want.Spec.Taints)
			for _, t := range node.Spec.Taints {
				if IsLifecycleTaint(t.Key) {
					taints = append(taints, t)
				}
			}
			node.Spec.Taints = taints
			node.Spec.Unschedulable = want.Spec.Unschedulable
		})
		if err != nil {
			return fmt.Errorf("resetting node %s: %w", want.Name, err)
		}
		return nil
	})
}

// IsLifecycleTaint says whether the node lifecycle controller (or the
// cloud node controller) manages taints with this key.
func IsLifecycleTaint(key string) bool {
	return strings.HasPrefix(key, "node.kubernetes.io/") || strings.HasPrefix(key, "node.cloudprovider.kubernetes.io/")
}

// IsAPIServerLabel says whether the apiserver, not the node's creator, sets
// the label: it adds the deprecated beta.kubernetes.io/{os,arch} labels.
func IsAPIServerLabel(key string) bool { return strings.HasPrefix(key, "beta.kubernetes.io/") }

// EditTaints returns taints with remove taken out and set put in.
func EditTaints(taints, set, remove []corev1.Taint) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(taints)+len(set))
	matches := func(t corev1.Taint, list []corev1.Taint, byEffect bool) bool {
		for _, r := range list {
			if t.Key == r.Key && (!byEffect && r.Effect == "" || t.Effect == r.Effect) {
				return true
			}
		}
		return false
	}
	for _, t := range taints {
		if matches(t, remove, false) || matches(t, set, true) {
			continue
		}
		out = append(out, t)
	}
	for _, t := range set {
		if t.Effect == corev1.TaintEffectNoExecute && t.TimeAdded == nil {
			now := metav1.Now()
			t.TimeAdded = &now
		}
		out = append(out, t)
	}
	return out
}

// forEach runs fn for every i in [from, to) with bounded parallelism and
// returns the first error after every started call has finished.
func forEach(ctx context.Context, from, to, parallelism int, fn func(ctx context.Context, i int) error) error {
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallelism)
	for i := from; i < to; i++ {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// NodeReady says whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeSchedulable says whether the node is Ready and the node-lifecycle
// controller has lifted the not-ready taint that every new node starts with.
// Until then DaemonSet pods do not tolerate the node.
func NodeSchedulable(n *corev1.Node) bool {
	if !NodeReady(n) {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady {
			return false
		}
	}
	return true
}

// SetNodeReady freezes or thaws a node's status. ready=false labels the node
// so that kwok stops managing its status, then writes Ready=False, as a node
// whose kubelet stopped would look. ready=true removes the label, and kwok
// makes the node Ready again.
func SetNodeReady(ctx context.Context, client kubernetes.Interface, name string, ready bool) error {
	if ready {
		patch := []byte(`{"metadata":{"labels":{"` + FrozenStatusLabel + `":null}}}`)
		_, err := client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("thawing node %s: %w", name, err)
		}
		// kwok's node-initialize stage picks up nodes whose Ready is not True.
		return setReadyCondition(ctx, client, name, corev1.ConditionUnknown, "NodeStatusThawed")
	}
	patch := []byte(`{"metadata":{"labels":{"` + FrozenStatusLabel + `":"true"}}}`)
	if _, err := client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("freezing node %s: %w", name, err)
	}
	return setReadyCondition(ctx, client, name, corev1.ConditionFalse, "KubeletStopped")
}

func setReadyCondition(ctx context.Context, client kubernetes.Interface, name string, status corev1.ConditionStatus, reason string) error {
	for attempt := 0; ; attempt++ {
		node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("getting node %s: %w", name, err)
		}
		node = node.DeepCopy()
		now := metav1.Now()
		found := false
		for i := range node.Status.Conditions {
			c := &node.Status.Conditions[i]
			if c.Type == corev1.NodeReady {
				found = true
				if c.Status != status {
					c.LastTransitionTime = now
				}
				c.Status, c.Reason, c.LastHeartbeatTime = status, reason, now
			}
		}
		if !found {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status, Reason: reason, LastTransitionTime: now, LastHeartbeatTime: now})
		}
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && attempt < 10 {
			continue
		}
		if err != nil {
			return fmt.Errorf("setting Ready=%s on node %s: %w", status, name, err)
		}
		return nil
	}
}

// SplitNodeName is the inverse of NodeName: the prefix and index of a name
// of the form prefix-index, and false for any other name.
func SplitNodeName(name string) (prefix string, index int, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil || n < 0 || strconv.Itoa(n) != name[i+1:] {
		return "", 0, false
	}
	return name[:i], n, true
}

// NudgePod touches a pod (an annotation with the time) so that kwok sees an
// event for it again: kwok v0.8.0 drops the events of pods bound to a node
// it has not registered yet. (It does not help pods on a node re-created
// under a recent name, which kwok never plays: TestKwokStallsPodsOfReusedNodeNames.)
func NudgePod(ctx context.Context, client kubernetes.Interface, namespace, name string, now time.Time) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"dsbench.dev/nudged":%q}}}`, now.UTC().Format(time.RFC3339Nano))
	_, err := client.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("nudging pod %s/%s: %w", namespace, name, err)
	}
	return nil
}
