package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/dsbench/dsbench/kwok"
)

func runNodes(ctx context.Context, env Env, args []string) error {
	sub, args, err := subcommand(env, "nodes", args, "create", "delete", "patch")
	if err != nil {
		return err
	}
	fs := newFlagSet("nodes "+sub, "[flags]", env)
	var cf clusterFlags
	cf.register(fs, env)
	fs.StringVar(&cf.kubeconfig, "kubeconfig", "", "use this cluster instead of the named KWOK cluster")
	var (
		prefix      string
		count       int
		start       int
		labelArgs   []string
		taintArgs   []string
		removeTaint []string
		selector    string
		cpu, memory string
		pods        string
		parallelism int
		waitReady   time.Duration
		cordon      bool
		uncordon    bool
	)
	fs.IntVar(&parallelism, "parallelism", kwok.DefaultParallelism, "API writes in flight")
	switch sub {
	case "create":
		fs.StringVar(&prefix, "prefix", "node", "node name prefix: nodes are PREFIX-0 ... PREFIX-(N-1)")
		fs.IntVar(&count, "count", 0, "number of nodes")
		fs.IntVar(&start, "start", 0, "index of the first node")
		fs.StringArrayVar(&labelArgs, "label", nil, "label key=value (repeatable)")
		fs.StringArrayVar(&taintArgs, "taint", nil, "taint key[=value]:Effect (repeatable)")
		fs.StringVar(&cpu, "cpu", "32", "CPU capacity")
		fs.StringVar(&memory, "memory", "128Gi", "memory capacity")
		fs.StringVar(&pods, "pods", "110", "pod capacity")
		fs.DurationVar(&waitReady, "wait-ready", 2*time.Minute, "wait until every node is Ready (0: don't wait)")
	case "delete":
		fs.StringVar(&selector, "selector", "", "label selector of the nodes to delete (required)")
	case "patch":
		fs.StringVar(&selector, "selector", "", "label selector of the nodes to patch (required)")
		fs.StringArrayVar(&labelArgs, "label", nil, "set label key=value, or remove it with key- (repeatable)")
		fs.StringArrayVar(&taintArgs, "taint", nil, "add taint key[=value]:Effect (repeatable)")
		fs.StringArrayVar(&removeTaint, "remove-taint", nil, "remove taints with this key (repeatable)")
		fs.BoolVar(&cordon, "cordon", false, "mark unschedulable")
		fs.BoolVar(&uncordon, "uncordon", false, "mark schedulable")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	var bad flagErrors
	cf.validate(&bad)
	withKubeconfig(fs, &bad)
	bad.positive("parallelism", parallelism)
	if fs.NArg() > 0 {
		bad = append(bad, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	var pool kwok.NodePool
	var patch kwok.NodePatch
	switch sub {
	case "create":
		if count == 0 {
			bad = append(bad, errors.New("--count is required (the number of nodes)"))
		}
		bad.notNegative("count", count)
		bad.notNegative("start", start)
		if waitReady < 0 {
			bad.add("wait-ready", waitReady, "must not be negative (0: don't wait)")
		}
		var err error
		if pool, err = buildPool(prefix, count, start, labelArgs, taintArgs, cpu, memory, pods); err != nil {
			bad = append(bad, err)
		} else if err := pool.Validate(); err != nil && count >= 0 && start >= 0 {
			bad = append(bad, err) // kwok's own rules, should they grow beyond buildPool's
		}
	case "delete", "patch":
		if selector == "" {
			bad = append(bad, errors.New("--selector is required"))
		} else if _, err := labels.Parse(selector); err != nil {
			bad.add("selector", selector, "%v", err)
		}
		var err error
		if patch, err = buildPatch(labelArgs, taintArgs, removeTaint, cordon, uncordon); err != nil {
			bad = append(bad, err)
		} else if sub == "patch" && patch.Unschedulable == nil && len(patch.Labels)+len(patch.SetTaints)+len(patch.RemoveTaints) == 0 {
			bad = append(bad, errors.New("nothing to patch: give --label, --taint, --remove-taint, --cordon or --uncordon"))
		}
	}
	if err := bad.err(fs.Name()); err != nil {
		return err
	}
	switch sub {
	case "create":
		client, err := clientFor(cf, env)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := kwok.CreateNodes(ctx, client, pool, parallelism); err != nil {
			return err
		}
		created := time.Since(t0)
		fmt.Fprintf(env.Stdout, "created %d nodes in %.2fs (%.0f nodes/s)\n", count, created.Seconds(), float64(count)/created.Seconds())
		if waitReady > 0 && count > 0 {
			sel := labels.SelectorFromSet(labels.Set{kwok.PoolLabel: prefix}).String()
			if err := WaitNodesReady(ctx, client, sel, count, waitReady); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "all %d nodes Ready %.2fs after the first create\n", count, time.Since(t0).Seconds())
		}
		return nil
	case "delete", "patch":
		client, err := clientFor(cf, env)
		if err != nil {
			return err
		}
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return fmt.Errorf("listing nodes: %w", err)
		}
		names := make([]string, 0, len(list.Items))
		for _, n := range list.Items {
			names = append(names, n.Name)
		}
		sort.Strings(names)
		if sub == "delete" {
			if err := kwok.DeleteNodes(ctx, client, names, parallelism); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "deleted %d nodes\n", len(names))
			return nil
		}
		if _, err := kwok.PatchNodes(ctx, client, names, patch, parallelism); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "patched %d nodes\n", len(names))
	}
	return nil
}

func clientFor(cf clusterFlags, env Env) (kubernetes.Interface, error) {
	path := cf.kubeconfig
	if path == "" {
		c, err := kwok.Open(cf.config(env))
		if err != nil {
			return nil, err
		}
		path = c.Kubeconfig()
	}
	cfg, err := kwok.LoadRESTConfig(path)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// buildPool turns the create flags into a pool; errors name the flag.
func buildPool(prefix string, count, start int, labelArgs, taintArgs []string, cpu, memory, pods string) (kwok.NodePool, error) {
	pool := kwok.NodePool{Prefix: prefix, Count: count, Start: start, Labels: map[string]string{}}
	var bad flagErrors
	// The longest name is the last one's.
	if errs := validation.IsDNS1123Subdomain(pool.NodeName(start + max(count-1, 0))); prefix == "" || len(errs) > 0 {
		bad.add("prefix", prefix, "node names PREFIX-N must be DNS subdomains: %s", strings.Join(errs, "; "))
	}
	for _, l := range labelArgs {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			bad.add("label", l, "want key=value")
			continue
		}
		if msg := labelProblem(k, &v); msg != "" {
			bad.add("label", l, "%s", msg)
		}
		pool.Labels[k] = v
	}
	for _, s := range taintArgs {
		t, err := kwok.ParseTaint(s)
		if err != nil {
			bad.add("taint", s, "%v", err)
			continue
		}
		pool.Taints = append(pool.Taints, t)
	}
	pool.Capacity = corev1.ResourceList{}
	for _, r := range []struct {
		flag string
		name corev1.ResourceName
		val  string
	}{{"cpu", corev1.ResourceCPU, cpu}, {"memory", corev1.ResourceMemory, memory}, {"pods", corev1.ResourcePods, pods}} {
		q, err := resource.ParseQuantity(r.val)
		switch {
		case err != nil:
			bad.add(r.flag, r.val, "%v", err)
		case q.Sign() < 0:
			bad.add(r.flag, r.val, "must not be negative")
		default:
			pool.Capacity[r.name] = q
		}
	}
	if len(bad) > 0 {
		return pool, errors.Join(bad...)
	}
	return pool, nil
}

// labelProblem says what is wrong with a label key and value (value nil:
// a removal), or "".
func labelProblem(key string, value *string) string {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Sprintf("key %q: %s", key, strings.Join(errs, "; "))
	}
	if value == nil {
		return ""
	}
	if errs := validation.IsValidLabelValue(*value); len(errs) > 0 {
		return fmt.Sprintf("value %q: %s", *value, strings.Join(errs, "; "))
	}
	return ""
}

// buildPatch turns the patch flags into a patch; errors name the flag.
func buildPatch(labelArgs, taintArgs, removeTaint []string, cordon, uncordon bool) (kwok.NodePatch, error) {
	var p kwok.NodePatch
	var bad flagErrors
	if cordon && uncordon {
		bad.conflict("cordon", "uncordon", "choose one")
	}
	if cordon || uncordon {
		p.Unschedulable = &cordon
	}
	if len(labelArgs) > 0 {
		p.Labels = map[string]*string{}
	}
	for _, l := range labelArgs {
		if k, ok := strings.CutSuffix(l, "-"); ok && !strings.Contains(l, "=") {
			if msg := labelProblem(k, nil); msg != "" {
				bad.add("label", l, "%s", msg)
			}
			p.Labels[k] = nil
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			bad.add("label", l, "want key=value or key-")
			continue
		}
		if msg := labelProblem(k, &v); msg != "" {
			bad.add("label", l, "%s", msg)
		}
		p.Labels[k] = &v
	}
	for _, s := range taintArgs {
		t, err := kwok.ParseTaint(s)
		if err != nil {
			bad.add("taint", s, "%v", err)
			continue
		}
		p.SetTaints = append(p.SetTaints, t)
	}
	for _, k := range removeTaint {
		key, effect, _ := strings.Cut(k, ":")
		if msg := labelProblem(key, nil); msg != "" {
			bad.add("remove-taint", k, "%s", msg)
		}
		p.RemoveTaints = append(p.RemoveTaints, corev1.Taint{Key: key, Effect: corev1.TaintEffect(effect)})
	}
	if len(bad) > 0 {
		return p, errors.Join(bad...)
	}
	return p, nil
}

// WaitNodesReady waits until want nodes matching selector are Ready.
func WaitNodesReady(ctx context.Context, client kubernetes.Interface, selector string, want int, timeout time.Duration) error {
	var ready int
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		ready = 0
		for _, n := range list.Items {
			if kwok.NodeSchedulable(&n) {
				ready++
			}
		}
		return ready >= want, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d nodes (%s) to be Ready and schedulable: %d are: %w", want, selector, ready, err)
	}
	return nil
}
