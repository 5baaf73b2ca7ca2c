package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/dsbench/dsbench/kwok"
)

func runNodes(ctx context.Context, env Env, args []string) error {
	sub, args, err := subcommand("nodes", args, "create", "delete", "patch")
	if err != nil {
		return err
	}
	fs := newFlagSet("nodes "+sub, env)
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
	switch sub {
	case "create":
		if count < 0 {
			return usageError(fs.Name(), fmt.Errorf("--count %d: must not be negative", count))
		}
		pool, err := buildPool(prefix, count, start, labelArgs, taintArgs, cpu, memory, pods)
		if err != nil {
			return usageError(fs.Name(), err)
		}
		if err := pool.Validate(); err != nil {
			return usageError(fs.Name(), err)
		}
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
		if selector == "" {
			return usageError(fs.Name(), fmt.Errorf("--selector is required"))
		}
		if _, err := labels.Parse(selector); err != nil {
			return usageError(fs.Name(), fmt.Errorf("--selector %q: %w", selector, err))
		}
		patch, err := buildPatch(labelArgs, taintArgs, removeTaint, cordon, uncordon)
		if err != nil {
			return usageError(fs.Name(), err)
		}
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

func buildPool(prefix string, count, start int, labelArgs, taintArgs []string, cpu, memory, pods string) (kwok.NodePool, error) {
	pool := kwok.NodePool{Prefix: prefix, Count: count, Start: start, Labels: map[string]string{}}
	for _, l := range labelArgs {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return pool, fmt.Errorf("--label %q: want key=value", l)
		}
		pool.Labels[k] = v
	}
	for _, s := range taintArgs {
		t, err := kwok.ParseTaint(s)
		if err != nil {
			return pool, fmt.Errorf("--taint: %w", err)
		}
		pool.Taints = append(pool.Taints, t)
	}
	pool.Capacity = corev1.ResourceList{}
	for flag, kv := range map[string]struct {
		name corev1.ResourceName
		val  string
	}{"--cpu": {corev1.ResourceCPU, cpu}, "--memory": {corev1.ResourceMemory, memory}, "--pods": {corev1.ResourcePods, pods}} {
		q, err := resource.ParseQuantity(kv.val)
		if err != nil {
			return pool, fmt.Errorf("%s %q: %w", flag, kv.val, err)
		}
		pool.Capacity[kv.name] = q
	}
	return pool, nil
}

func buildPatch(labelArgs, taintArgs, removeTaint []string, cordon, uncordon bool) (kwok.NodePatch, error) {
	var p kwok.NodePatch
	if cordon && uncordon {
		return p, fmt.Errorf("--cordon and --uncordon: choose one")
	}
	if cordon || uncordon {
		p.Unschedulable = &cordon
	}
	if len(labelArgs) > 0 {
		p.Labels = map[string]*string{}
	}
	for _, l := range labelArgs {
		if k, ok := strings.CutSuffix(l, "-"); ok && !strings.Contains(l, "=") {
			p.Labels[k] = nil
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return p, fmt.Errorf("--label %q: want key=value or key-", l)
		}
		p.Labels[k] = &v
	}
	for _, s := range taintArgs {
		t, err := kwok.ParseTaint(s)
		if err != nil {
			return p, fmt.Errorf("--taint: %w", err)
		}
		p.SetTaints = append(p.SetTaints, t)
	}
	for _, k := range removeTaint {
		key, effect, _ := strings.Cut(k, ":")
		p.RemoveTaints = append(p.RemoveTaints, corev1.Taint{Key: key, Effect: corev1.TaintEffect(effect)})
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
