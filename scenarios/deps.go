package scenarios

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Dependencies are objects the workloads need but do not define. The API
// server rejects a pod whose namespace or service account is missing, so the
// runner creates these (empty) before the workloads.
type Dependencies struct {
	// Namespaces used by DaemonSets and objects, sorted; the runner creates
	// the ones that do not exist.
	Namespaces []string
	// ServiceAccounts named by pod templates (serviceAccountName) that no
	// workload object defines, sorted.
	ServiceAccounts []types.NamespacedName
}

// Dependencies lists what the workloads need but do not define.
func (s *Scenario) Dependencies() Dependencies {
	var deps Dependencies
	namespaces := map[string]bool{}
	defined := map[types.NamespacedName]bool{}
	for _, w := range s.Workloads {
		for _, obj := range w.Objects {
			if ns := obj.GetNamespace(); ns != "" {
				namespaces[ns] = true
			}
			if obj.GetKind() == "ServiceAccount" {
				ns := cmp.Or(obj.GetNamespace(), metav1.NamespaceDefault)
				defined[types.NamespacedName{Namespace: ns, Name: obj.GetName()}] = true
				namespaces[ns] = true
			}
		}
	}
	needed := map[types.NamespacedName]bool{}
	for _, ds := range s.DaemonSets() {
		ns := cmp.Or(ds.Namespace, metav1.NamespaceDefault)
		namespaces[ns] = true
		spec := ds.Spec.Template.Spec
		name := cmp.Or(spec.ServiceAccountName, spec.DeprecatedServiceAccount)
		if name == "" || name == "default" {
			continue // every namespace gets a default service account
		}
		if sa := (types.NamespacedName{Namespace: ns, Name: name}); !defined[sa] {
			needed[sa] = true
		}
	}
	for ns := range namespaces {
		deps.Namespaces = append(deps.Namespaces, ns)
	}
	slices.Sort(deps.Namespaces)
	for sa := range needed {
		deps.ServiceAccounts = append(deps.ServiceAccounts, sa)
	}
	slices.SortFunc(deps.ServiceAccounts, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return deps
}
