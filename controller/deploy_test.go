package controller

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// deployObjects decodes every document of every deploy/*.yaml into a typed
// object of the client-go scheme, strictly: unknown fields and duplicate
// keys fail the test.
func deployObjects(t *testing.T) []runtime.Object {
	t.Helper()
	files, err := filepath.Glob("../deploy/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no deploy/*.yaml found (err %v)", err)
	}
	var objs []runtime.Object
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(raw, []byte("\n---")) {
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			where := fmt.Sprintf("%s document %d", filepath.Base(file), i+1)
			js, err := yaml.YAMLToJSONStrict(doc)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(js, nil, nil)
			if err != nil {
				t.Fatalf("%s: decoding: %v", where, err)
			}
			// Decode again strictly into the same type to catch typos.
			typed := obj.DeepCopyObject()
			if err := yaml.UnmarshalStrict(doc, typed); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			objs = append(objs, obj)
		}
	}
	return objs
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func only[T runtime.Object](t *testing.T, objs []runtime.Object) T {
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

// named returns the one T in objs called name.
func named[T interface {
	runtime.Object
	GetName() string
}](t *testing.T, objs []runtime.Object, name string) T {
	t.Helper()
	for _, o := range objs {
		if v, ok := o.(T); ok && v.GetName() == name {
			return v
		}
	}
	var zero T
	t.Fatalf("no %T named %s in deploy/", zero, name)
	return zero
}

// rulesGrant reports whether rules grant verb on group/resource.
func rulesGrant(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// checkLeastPrivilege fails for any rule using wildcards or granting more
// than perms lists.
func checkLeastPrivilege(t *testing.T, what string, rules []rbacv1.PolicyRule, perms []Permission) {
	t.Helper()
	for _, r := range rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("%s: unexpected resourceNames/nonResourceURLs in %+v", what, r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if g == "*" || res == "*" || v == "*" {
						t.Errorf("%s: wildcard in %+v", what, r)
					} else if !allows(perms, g, res, v) {
						t.Errorf("%s grants %s on %s/%s, which the controller never uses", what, v, g, res)
					}
				}
			}
		}
	}
	for _, p := range perms {
		for _, v := range p.Verbs {
			if !rulesGrant(rules, p.Group, p.Resource, v) {
				t.Errorf("%s does not grant %s on %q/%s, which the controller uses", what, v, p.Group, p.Resource)
			}
		}
	}
}

func TestDeployManifests(t *testing.T) {
	objs := deployObjects(t)
	sa := only[*corev1.ServiceAccount](t, objs)
	ns := only[*corev1.Namespace](t, objs)
	cr := named[*rbacv1.ClusterRole](t, objs, "dsbench-daemonset-controller")
	reader := named[*rbacv1.ClusterRole](t, objs, "dsbench-metrics-reader")
	crb := only[*rbacv1.ClusterRoleBinding](t, objs)
	role := only[*rbacv1.Role](t, objs)
	rb := only[*rbacv1.RoleBinding](t, objs)
	dep := only[*appsv1.Deployment](t, objs)

	t.Run("namespaces", func(t *testing.T) {
		for _, o := range []struct {
			kind, ns string
		}{{"ServiceAccount", sa.Namespace}, {"Role", role.Namespace}, {"RoleBinding", rb.Namespace}, {"Deployment", dep.Namespace}} {
			if o.ns != ns.Name {
				t.Errorf("%s is in namespace %q, want %q", o.kind, o.ns, ns.Name)
			}
		}
	})

	t.Run("ClusterRole covers exactly what the controller calls", func(t *testing.T) {
		// With the reviews of --secure-metrics, which the Deployment turns on.
		perms := slices.Concat(RequiredClusterPermissions, DelegatedAuthPermissions)
		checkLeastPrivilege(t, "ClusterRole "+cr.Name, cr.Rules, perms)
	})
	t.Run("the metrics reader may get /metrics and nothing else", func(t *testing.T) {
		want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
		if diff := cmp.Diff(want, reader.Rules); diff != "" {
			t.Errorf("ClusterRole %s rules (-want +got):\n%s", reader.Name, diff)
		}
	})
	t.Run("Role covers leader election in its namespace", func(t *testing.T) {
		checkLeastPrivilege(t, "Role "+role.Name, role.Rules, LeaderElectionPermissions)
	})

	t.Run("bindings", func(t *testing.T) {
		wantSubject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}
		if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != cr.Name || !slices.Contains(crb.Subjects, wantSubject) {
			t.Errorf("ClusterRoleBinding %+v does not bind ClusterRole %s to %+v", crb, cr.Name, wantSubject)
		}
		if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || !slices.Contains(rb.Subjects, wantSubject) {
			t.Errorf("RoleBinding %+v does not bind Role %s to %+v", rb, role.Name, wantSubject)
		}
	})

	t.Run("Deployment", func(t *testing.T) {
		spec := dep.Spec.Template.Spec
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
			t.Errorf("replicas = %v, want 2", dep.Spec.Replicas)
		}
		if spec.ServiceAccountName != sa.Name {
			t.Errorf("serviceAccountName = %q, want %q", spec.ServiceAccountName, sa.Name)
		}
		if len(spec.Containers) != 1 {
			t.Fatalf("want one container, got %d", len(spec.Containers))
		}
		c := spec.Containers[0]
		args := strings.Join(c.Args, " ")
		if strings.Contains(args, "--leader-elect=false") {
			t.Error("leader election is off with 2 replicas")
		}
		// One port, all TLS: metrics behind the reviews, probes always allowed.
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if len(ports) != 1 || ports["https"] != 8443 {
			t.Errorf("ports = %v, want https 8443 alone", ports)
		}
		for _, want := range []string{"--secure-metrics=true", "--metrics-bind-address=:8443", "--health-probe-bind-address=0"} {
			if !slices.Contains(c.Args, want) {
				t.Errorf("args %q lack %s", args, want)
			}
		}
		if strings.Contains(args, "--authorization-always-allow-paths") {
			t.Errorf("args %q change the always-allowed paths: the kubelet probes /healthz and /readyz without a token", args)
		}
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "https" ||
				p.probe.HTTPGet.Scheme != corev1.URISchemeHTTPS {
				t.Errorf("%s probe = %+v, want GET %s on port https over HTTPS", p.name, p.probe, p.path)
			}
		}
		if a := dep.Spec.Template.Annotations; a["prometheus.io/scheme"] != "https" || a["prometheus.io/port"] != "8443" {
			t.Errorf("scrape annotations %v, want https on 8443", a)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("resources = %+v, want cpu/memory requests and a memory limit", c.Resources)
		}
		checkGoMemLimit(t, c)
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("container securityContext = %+v, want read-only, no escalation, all capabilities dropped", sc)
		}
		if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Errorf("pod securityContext = %+v, want runAsNonRoot", psc)
		}
	})
}

// checkGoMemLimit: the controller sets the Go runtime's soft memory limit
// to 80 to 95 % of the container's memory limit, which it reads from its
// cgroup (--go-memory-limit-ratio), so that the collector works harder
// before the kernel kills it; no GOMEMLIMIT in env overrides that.
func checkGoMemLimit(t *testing.T, c corev1.Container) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			t.Errorf("env GOMEMLIMIT = %q overrides --go-memory-limit-ratio: a fixed value drifts from the memory limit", e.Value)
		}
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Errorf("no memory limit: --go-memory-limit-ratio would find none to take a fraction of")
	}
	var ratio string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--go-memory-limit-ratio="); ok {
			ratio = v
		}
	}
	r, err := strconv.ParseFloat(ratio, 64)
	if err != nil || r < 0.8 || r > 0.95 {
		t.Errorf("--go-memory-limit-ratio=%q, want 0.80 to 0.95 written out in args", ratio)
	}
}
