package controller_test

// The controller under the identity deploy/ gives it: deploy/'s Namespace,
// ServiceAccount, roles and bindings applied as shipped, under their own
// names, and the controller run in-process with a client that impersonates
// the ServiceAccount and elects itself through the Lease that
// deploy/deployment.yaml names. It must play a whole scenario without one
// request refused, and be refused what lies outside its roles.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/dsbench/dsbench/controller"
	"github.com/dsbench/dsbench/controller/plan"
	"github.com/dsbench/dsbench/kwok"
	"github.com/dsbench/dsbench/kwok/kwoktest"
)

// TestIntegrationRunsAsDeployServiceAccount applies deploy/'s RBAC, runs the
// controller as its ServiceAccount (by impersonation) with leader election
// on deploy/'s Lease, and plays a small scenario with the admin client:
// nodes told apart by a nodeSelector and a taint the DaemonSet tolerates, a
// rolling update, a node labelled out and one joining. The controller must
// converge after each step, keep its history, write its events, be refused
// nothing, and release the Lease on stop. Through the same identity every
// permission controller/rbac.go lists must be allowed, and calls outside the
// roles must be Forbidden.
func TestIntegrationRunsAsDeployServiceAccount(t *testing.T) {
	cluster, _, admin := kwoktest.Cluster(t) // skips under -short, as the others
	objs := controller.DeployObjects(t)
	sa := deployOne[*corev1.ServiceAccount](t, objs)
	leaseNS, leaseName := deployLease(t, deployOne[*appsv1.Deployment](t, objs))
	// Before the env, so that its cleanup (which stops the controller)
	// runs first and the controller never outlives its permissions.
	applyDeploy(t, admin, objs)
	e := newEnvOn(t, cluster)

	user := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"}
	asSA := rest.CopyConfig(e.cfg)
	asSA.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	probe, err := kubernetes.NewForConfig(asSA)
	if err != nil {
		t.Fatal(err)
	}

	review, err := probe.AuthenticationV1().SelfSubjectReviews().Create(e.ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("asking the API server who the impersonating client is: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != user || !containsAll(u.Groups, groups) {
		t.Fatalf("the API server sees user %q in groups %v, want %q in %v", u.Username, u.Groups, user, groups)
	}

	// RBAC reads roles and bindings from informers, so this also waits
	// until the ones just applied are in effect.
	needed := neededAccess(leaseNS)
	e.waitFor(30*time.Second, fmt.Sprintf("%s allowed the %d accesses controller/rbac.go lists", user, len(needed)), func(ctx context.Context) (bool, string, error) {
		var denied []string
		for _, a := range needed {
			r, err := probe.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}, metav1.CreateOptions{})
			if err != nil {
				return false, "", err
			}
			if !r.Status.Allowed {
				denied = append(denied, describeAccess(a))
			}
		}
		return len(denied) == 0, fmt.Sprintf("denied: %s", strings.Join(denied, "; ")), nil
	})

	var refused refusals
	ctrlCfg := rest.CopyConfig(asSA)
	ctrlCfg.Wrap(refused.wrap)
	const id = "it-serviceaccount_00000001"
	e.startLeaderElected(ctrlCfg, leaseNS, leaseName, id, &refused)
	if h := leaseHolder(t, e, leaseNS, leaseName); h != id {
		t.Fatalf("Lease %s/%s held by %q, want %q", leaseNS, leaseName, h, id)
	}

	// Ten nodes: six selected, two selected behind a taint the DaemonSet
	// tolerates, one selected behind a taint it does not, one not selected.
	ns := e.namespace("it-serviceaccount")
	const prefix, agentLabel = "sa-run", "it.dsbench.dev/agent"
	selected := map[string]string{agentLabel: "true"}
	dedicated := corev1.Taint{Key: "it.dsbench.dev/dedicated", Value: "agent", Effect: corev1.TaintEffectNoSchedule}
	reserved := corev1.Taint{Key: "it.dsbench.dev/reserved", Value: "other", Effect: corev1.TaintEffectNoSchedule}
	var nodes []string
	for _, p := range []kwok.NodePool{
		{Prefix: prefix, Start: 0, Count: 6, Labels: selected},
		{Prefix: prefix, Start: 6, Count: 2, Labels: selected, Taints: []corev1.Taint{dedicated}},
		{Prefix: prefix, Start: 8, Count: 1, Labels: selected, Taints: []corev1.Taint{reserved}},
		{Prefix: prefix, Start: 9, Count: 1},
	} {
		nodes = append(nodes, e.addNodes(p)...)
	}
	e.waitSchedulable(nodes...)
	ds := e.createDS(newDS(ns, "agent", prefix, rollingUpdate(2, 0), func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.NodeSelector[agentLabel] = "true"
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{
			{Key: dedicated.Key, Operator: corev1.TolerationOpEqual, Value: dedicated.Value, Effect: dedicated.Effect}}
	}))
	// Where it must run is worked out from the nodes as they are; that it
	// agrees with how they were made shows the scenario tests both the
	// selector and the toleration, both ways.
	want := e.eligibleNodes(prefix, ds)
	if d := cmp.Diff(sorted(nodes[:8]), want); d != "" {
		t.Fatalf("eligible nodes (-as made +from the nodes):\n%s", d)
	}
	e.waitConverged(ns, ds.Name, converged{nodes: want})

	e.updateDS(ns, ds.Name, setImage("example.com/agent:v2"))
	e.waitConverged(ns, ds.Name, converged{nodes: want})

	notEligible := e.deletedByUs(plan.NodeNotEligibleReason)
	e.patchNodes(nodes[:1], kwok.NodePatch{Labels: map[string]*string{agentLabel: nil}})
	joined := e.addNodes(kwok.NodePool{Prefix: prefix, Start: 10, Count: 1, Labels: selected})
	e.waitSchedulable(joined...)
	want = e.eligibleNodes(prefix, ds)
	if d := cmp.Diff(sorted(slices.Concat(nodes[1:8], joined)), want); d != "" {
		t.Fatalf("eligible nodes after %s was labelled out and %s joined (-as made +from the nodes):\n%s", nodes[0], joined[0], d)
	}
	e.waitConverged(ns, ds.Name, converged{nodes: want})
	e.waitDeletedByUs(plan.NodeNotEligibleReason, notEligible, 1)

	// kubectl rollout history, and the ControllerRevisions behind it.
	e.expectHistory("ds/"+ds.Name, ns, []int64{1, 2})
	cur := e.getDS(ns, ds.Name)
	revs, err := e.client.AppsV1().ControllerRevisions(ns).List(e.ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(cur.Spec.Selector.MatchLabels).String()})
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[int64]string{}
	for _, r := range revs.Items {
		if ref := metav1.GetControllerOf(&r); ref == nil || ref.Kind != "DaemonSet" || ref.UID != cur.UID {
			t.Errorf("ControllerRevision %s controlled by %+v, want DaemonSet %s (uid %s)", r.Name, ref, cur.Name, cur.UID)
		}
		hashes[r.Revision] = r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	}
	hash := plan.ComputeHash(&cur.Spec.Template, cur.Status.CollisionCount)
	if len(revs.Items) != 2 || hashes[2] != hash || hashes[1] == "" || hashes[1] == hash {
		t.Errorf("ControllerRevisions by revision and hash: %v; want revisions 1 and 2, 2 with the current hash %s", hashes, hash)
	}

	for _, reason := range []string{controller.SuccessfulCreateReason, controller.SuccessfulDeleteReason} {
		e.waitFor(30*time.Second, fmt.Sprintf("a %s event from %s", reason, controller.ComponentName), func(ctx context.Context) (bool, string, error) {
			evs, err := e.events(ctx, cur, reason)
			if err != nil {
				return false, "", err
			}
			var from []string
			for _, ev := range evs {
				if ev.Source.Component == controller.ComponentName && ev.InvolvedObject.UID == cur.UID {
					return true, "", nil
				}
				from = append(from, ev.Source.Component)
			}
			return false, fmt.Sprintf("%d events with reason %s, from %v", len(evs), reason, from), nil
		})
	}

	t.Run("refused outside its roles", func(t *testing.T) {
		// Writes are dry runs: authorization comes first, so a refusal
		// looks the same, and a wrong grant changes nothing. For the same
		// reason an object need not exist: a wrong grant shows as NotFound.
		dry := []string{metav1.DryRunAll}
		for _, tc := range []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"list Secrets in every namespace", func(ctx context.Context) error {
				_, err := probe.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
				return err
			}},
			{"list Secrets in its own namespace", func(ctx context.Context) error {
				_, err := probe.CoreV1().Secrets(sa.Namespace).List(ctx, metav1.ListOptions{})
				return err
			}},
			{"list ConfigMaps in kube-system", func(ctx context.Context) error {
				_, err := probe.CoreV1().ConfigMaps(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
				return err
			}},
			{"get ConfigMap kube-system/kube-root-ca.crt", func(ctx context.Context) error {
				_, err := probe.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
				return err
			}},
			{"delete a Node", func(ctx context.Context) error {
				return probe.CoreV1().Nodes().Delete(ctx, nodes[1], metav1.DeleteOptions{DryRun: dry})
			}},
			{"label a Node", func(ctx context.Context) error {
				_, err := probe.CoreV1().Nodes().Patch(ctx, nodes[1], types.MergePatchType,
					[]byte(`{"metadata":{"labels":{"it.dsbench.dev/touched":"true"}}}`), metav1.PatchOptions{DryRun: dry})
				return err
			}},
			{"create a ClusterRole", func(ctx context.Context) error {
				_, err := probe.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
					ObjectMeta: metav1.ObjectMeta{Name: "it-serviceaccount-escalation"},
					Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
				}, metav1.CreateOptions{DryRun: dry})
				return err
			}},
			{"bind itself to cluster-admin", func(ctx context.Context) error {
				_, err := probe.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "it-serviceaccount-escalation"},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
					Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
				}, metav1.CreateOptions{DryRun: dry})
				return err
			}},
			{"patch a Deployment", func(ctx context.Context) error {
				_, err := probe.AppsV1().Deployments(ns).Patch(ctx, "agent", types.MergePatchType,
					[]byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{DryRun: dry})
				return err
			}},
			{"update a DaemonSet's spec", func(ctx context.Context) error {
				d := cur.DeepCopy()
				d.Spec.Template.Spec.Containers[0].Image = "example.com/agent:hijacked"
				_, err := probe.AppsV1().DaemonSets(ns).Update(ctx, d, metav1.UpdateOptions{DryRun: dry})
				return err
			}},
			{"delete a DaemonSet", func(ctx context.Context) error {
				return probe.AppsV1().DaemonSets(ns).Delete(ctx, cur.Name, metav1.DeleteOptions{DryRun: dry})
			}},
			{"list Events", func(ctx context.Context) error {
				_, err := probe.CoreV1().Events("").List(ctx, metav1.ListOptions{})
				return err
			}},
			{"delete its own Lease", func(ctx context.Context) error {
				return probe.CoordinationV1().Leases(leaseNS).Delete(ctx, leaseName, metav1.DeleteOptions{DryRun: dry})
			}},
			{"get a Lease in kube-system", func(ctx context.Context) error {
				_, err := probe.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "kube-controller-manager", metav1.GetOptions{})
				return err
			}},
			{"create a Lease in kube-system", func(ctx context.Context) error {
				_, err := probe.CoordinationV1().Leases(metav1.NamespaceSystem).Create(ctx, &coordinationv1.Lease{
					ObjectMeta: metav1.ObjectMeta{Name: leaseName}}, metav1.CreateOptions{DryRun: dry})
				return err
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.call(t.Context())
				switch {
				case !apierrors.IsForbidden(err):
					t.Errorf("got %v, want Forbidden", err)
				case !strings.Contains(err.Error(), fmt.Sprintf("User %q", user)):
					t.Errorf("refused, but not as %s: %v", user, err)
				}
			})
		}
	})

	e.stopController()
	if h := leaseHolder(t, e, leaseNS, leaseName); h != "" {
		t.Errorf("Lease %s/%s still held by %q after the controller stopped, want released", leaseNS, leaseName, h)
	}
	if r := refused.list(); len(r) > 0 {
		t.Errorf("the API server refused %d requests of the controller as %s, first %q", len(r), user, r[:min(len(r), 20)])
	}
}

// deployOne is the one T among deploy/'s objects.
func deployOne[T runtime.Object](t *testing.T, objs []runtime.Object) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want exactly one %T in deploy/, found %d", zero, len(found))
	}
	return found[0]
}

// deployLease is the Lease the binary elects itself through when run as
// deploy/deployment.yaml runs it: --leader-elect-resource-name, in
// --leader-elect-resource-namespace or else $POD_NAMESPACE, which the
// Deployment must set to its own namespace.
func deployLease(t *testing.T, dep *appsv1.Deployment) (ns, name string) {
	t.Helper()
	if len(dep.Spec.Template.Spec.Containers) == 0 {
		t.Fatalf("Deployment %s has no container", dep.Name)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	flag := func(name string) string {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				return v
			}
		}
		return ""
	}
	name = flag("leader-elect-resource-name")
	if name == "" {
		t.Fatalf("Deployment %s does not set --leader-elect-resource-name: this test would not know its Lease", dep.Name)
	}
	if ns = flag("leader-elect-resource-namespace"); ns != "" {
		return ns, name
	}
	i := slices.IndexFunc(c.Env, func(v corev1.EnvVar) bool { return v.Name == "POD_NAMESPACE" })
	if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Fatalf("Deployment %s sets neither --leader-elect-resource-namespace nor POD_NAMESPACE from metadata.namespace", dep.Name)
	}
	return dep.Namespace, name
}

// deployObject is one object of deploy/ that applyDeploy creates and deletes.
type deployObject struct {
	what           string
	create, remove func(context.Context) error
}

// deployObjectOf says how to apply obj; rank orders the creates (the
// deletes go in reverse). ok is false for a kind applyDeploy leaves out.
func deployObjectOf(client kubernetes.Interface, obj runtime.Object) (d deployObject, rank int, ok bool) {
	var create metav1.CreateOptions
	var remove metav1.DeleteOptions
	switch o := obj.(type) {
	case *corev1.Namespace:
		api := client.CoreV1().Namespaces()
		return deployObject{"Namespace " + o.Name,
			func(ctx context.Context) error { _, err := api.Create(ctx, o.DeepCopy(), create); return err },
			func(ctx context.Context) error { return api.Delete(ctx, o.Name, remove) }}, 0, true
	case *corev1.ServiceAccount:
		api := client.CoreV1().ServiceAccounts(o.Namespace)
		return deployObject{"ServiceAccount " + o.Namespace + "/" + o.Name,
			func(ctx context.Context) error { _, err := api.Create(ctx, o.DeepCopy(), create); return err },
			func(ctx context.Context) error { return api.Delete(ctx, o.Name, remove) }}, 1, true
	case *rbacv1.ClusterRole:
		api := client.RbacV1().ClusterRoles()
		return deployObject{"ClusterRole " + o.Name,
			func(ctx context.Context) error { _, err := api.Create(ctx, o.DeepCopy(), create); return err },
			func(ctx context.Context) error { return api.Delete(ctx, o.Name, remove) }}, 2, true
	case *rbacv1.Role:
		api := client.RbacV1().Roles(o.Namespace)
		return deployObject{"Role " + o.Namespace + "/" + o.Name,
			func(ctx context.Context) error { _, err := api.Create(ctx, o.DeepCopy(), create); return err },
			func(ctx context.Context) error { return api.Delete(ctx, o.Name, remove) }}, 2, true
	case *rbacv1.ClusterRoleBinding:
		api := client.RbacV1().ClusterRoleBindings()
		return deployObject{"ClusterRoleBinding " + o.Name,
			func(ctx context.Context) error { _, err := api.Create(ctx, o.DeepCopy(), create); return err },
			func(ctx context.Context) error { return api.Delete(ctx, o.Name, remove) }}, 3, true
	case *rbacv1.RoleBinding:
		api := client.RbacV1().RoleBindings(o.Namespace)
		return deployObject{"RoleBinding " + o.Namespace + "/" + o.Name,
			func(ctx context.Context) error { _, err := api.Create(ctx, o.DeepCopy(), create); return err },
			func(ctx context.Context) error { return api.Delete(ctx, o.Name, remove) }}, 3, true
	}
	return deployObject{}, 0, false
}

// applyDeploy creates deploy/'s Namespace, ServiceAccount, roles and
// bindings under their own names, after deleting any a crashed run left,
// and deletes them on cleanup. The Deployment is left out: the test runs
// the controller in-process instead. Any other kind fails the test, so that
// a new manifest in deploy/ is not silently skipped.
func applyDeploy(t *testing.T, client kubernetes.Interface, objs []runtime.Object) {
	t.Helper()
	type ranked struct {
		deployObject
		rank int
	}
	var todo []ranked
	var namespaces []string
	for _, obj := range objs {
		if _, ok := obj.(*appsv1.Deployment); ok {
			continue
		}
		d, rank, ok := deployObjectOf(client, obj)
		if !ok {
			t.Fatalf("deploy/ has a %T, which this test does not apply: teach applyDeploy", obj)
		}
		todo = append(todo, ranked{d, rank})
		if n, ok := obj.(*corev1.Namespace); ok {
			namespaces = append(namespaces, n.Name)
		}
	}
	slices.SortStableFunc(todo, func(a, b ranked) int { return a.rank - b.rank })
	remove := func(ctx context.Context) error {
		var errs []error
		for _, d := range slices.Backward(todo) {
			if err := ignoreNotFound(d.remove(ctx)); err != nil {
				errs = append(errs, fmt.Errorf("deleting %s: %w", d.what, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		// A namespace takes a while to go; it cannot be created again before.
		err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			for _, ns := range namespaces {
				if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for namespaces %v to go: %w", namespaces, err)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), cleanupTimeout)
	defer cancel()
	if err := remove(ctx); err != nil {
		t.Fatalf("removing what a previous run left of deploy/: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := remove(ctx); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	for _, d := range todo {
		if err := d.create(ctx); err != nil {
			t.Fatalf("creating %s from deploy/: %v", d.what, err)
		}
	}
}

// neededAccess is every access controller/rbac.go lists, one verb each: the
// cluster-wide ones across all namespaces, leader election's in the Lease's
// namespace. So a test asking them of deploy/'s roles fails when the code
// and deploy/ disagree.
func neededAccess(leaseNS string) []authorizationv1.ResourceAttributes {
	var out []authorizationv1.ResourceAttributes
	add := func(ns string, perms []controller.Permission) {
		for _, p := range perms {
			resource, sub, _ := strings.Cut(p.Resource, "/")
			for _, v := range p.Verbs {
				out = append(out, authorizationv1.ResourceAttributes{Namespace: ns, Verb: v, Group: p.Group, Resource: resource, Subresource: sub})
			}
		}
	}
	add("", controller.RequiredClusterPermissions)
	// --secure-metrics, which deploy/deployment.yaml turns on, asks these.
	add("", controller.DelegatedAuthPermissions)
	add(leaseNS, controller.LeaderElectionPermissions)
	return out
}

func describeAccess(a authorizationv1.ResourceAttributes) string {
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	where := "cluster-wide"
	if a.Namespace != "" {
		where = "in " + a.Namespace
	}
	return fmt.Sprintf("%s %q/%s %s", a.Verb, a.Group, resource, where)
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// leaseHolder reads the Lease with the admin client; "" means nobody holds it.
func leaseHolder(t *testing.T, e *env, ns, name string) string {
	t.Helper()
	l, err := e.client.CoordinationV1().Leases(ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading Lease %s/%s: %v", ns, name, err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// eligibleNodes lists, sorted, the nodes of pool where ds must run, worked
// out from the nodes as they are now: the template's nodeSelector matches,
// and the template's or the default daemon tolerations tolerate every
// NoSchedule and NoExecute taint. (The template sets no affinity.)
func (e *env) eligibleNodes(pool string, ds *appsv1.DaemonSet) []string {
	e.t.Helper()
	list, err := e.client.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{LabelSelector: kwok.PoolLabel + "=" + pool})
	if err != nil {
		e.t.Fatal(err)
	}
	spec := ds.Spec.Template.Spec
	if spec.Affinity != nil {
		e.t.Fatalf("eligibleNodes does not evaluate affinity, and DaemonSet %s has %+v", ds.Name, spec.Affinity)
	}
	tolerations := slices.Concat(spec.Tolerations, defaultTolerations(spec.HostNetwork))
	selector := labels.SelectorFromSet(spec.NodeSelector)
	var out []string
	for _, n := range list.Items {
		if !selector.Matches(labels.Set(n.Labels)) {
			continue
		}
		tolerated := func(taint corev1.Taint) bool {
			return taint.Effect == corev1.TaintEffectPreferNoSchedule || slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool {
				return tol.ToleratesTaint(klog.Background(), &taint, false)
			})
		}
		if !slices.ContainsFunc(n.Spec.Taints, func(taint corev1.Taint) bool { return !tolerated(taint) }) {
			out = append(out, n.Name)
		}
	}
	sort.Strings(out)
	return out
}

// startLeaderElected runs the controller in-process with clients from cfg,
// as the binary does with --leader-elect: it syncs only while it holds the
// Lease ns/name, with the binary's default timings, a client of its own for
// the Lease, and on stop its workers end before the Lease is released. The
// binary's loop (runLeaderElected) is in package main, out of reach of this
// package; this is client-go's elector configured as it configures it.
// refused is only read, to say why the controller does not start.
func (e *env) startLeaderElected(cfg *rest.Config, ns, name, id string, refused *refusals) {
	t := e.t
	t.Helper()
	if _, busy := controllerRunning.LoadOrStore(e.cluster.Kubeconfig(), true); busy {
		t.Fatalf("a controller already runs against cluster %s", e.cluster.Name())
	}
	ctrlCfg := rest.CopyConfig(cfg)
	ctrlCfg.QPS, ctrlCfg.Burst = -1, 0
	ctrlCfg.ContentType = runtime.ContentTypeProtobuf // as the binary's default
	ctrlCfg.UserAgent = controller.ComponentName + "/" + id
	client, err := kubernetes.NewForConfig(ctrlCfg)
	if err != nil {
		t.Fatal(err)
	}
	leCfg := rest.CopyConfig(ctrlCfg)
	leCfg.UserAgent += "/leader-election"
	leClient, err := kubernetes.NewForConfig(leCfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.NewController(controller.Config{Client: client, Workers: 4, BindMode: plan.BindScheduler})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, name, leClient.CoreV1(), leClient.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopWorkers := context.WithCancel(context.Background())
	leCtx, stopElector := context.WithCancel(context.Background())
	started, ran, electorDone := make(chan struct{}), make(chan error, 1), make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				close(started)
				ctx, cancel := context.WithCancel(lctx)
				defer cancel()
				defer context.AfterFunc(runCtx, cancel)()
				err := c.Run(ctx)
				if err == nil && runCtx.Err() == nil {
					err = fmt.Errorf("lost the Lease %s/%s while running", ns, name)
				}
				ran <- err
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		stopWorkers()
		stopElector()
		controllerRunning.Delete(e.cluster.Kubeconfig())
		t.Fatal(err)
	}
	go func() {
		defer close(electorDone)
		le.Run(leCtx)
	}()
	e.ctrl = c
	var once sync.Once
	e.stopController = func() {
		once.Do(func() {
			stopWorkers()
			select {
			case <-started:
				select {
				case err := <-ran:
					if err != nil {
						t.Errorf("controller Run: %v", err)
					}
				case <-time.After(30 * time.Second):
					t.Errorf("controller did not stop within 30s of cancel")
				}
			default:
			}
			stopElector() // releases the Lease
			select {
			case <-electorDone:
			case <-time.After(30 * time.Second):
				t.Errorf("leader election did not stop within 30s of cancel")
			}
			controllerRunning.Delete(e.cluster.Kubeconfig())
		})
	}
	e.waitFor(convergeTimeout, fmt.Sprintf("controller leading through Lease %s/%s with caches synced", ns, name), func(context.Context) (bool, string, error) {
		return c.HasSynced(), fmt.Sprintf("leader %q, requests refused so far %q", le.GetLeader(), refused.list()), nil
	})
}

// refusals records the requests that the API server answered with 403
// Forbidden, from clients whose config it wraps.
type refusals struct {
	mu   sync.Mutex
	seen []string
}

func (r *refusals) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			r.mu.Lock()
			r.seen = append(r.seen, req.Method+" "+req.URL.RequestURI())
			r.mu.Unlock()
		}
		return resp, err
	})
}

func (r *refusals) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
