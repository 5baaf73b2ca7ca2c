package controller

// Permission is one RBAC grant the controller needs: verbs on a resource
// (with "/subresource" when it applies) of an API group ("" is core).
type Permission struct {
	Group    string
	Resource string
	Verbs    []string
}

// RequiredClusterPermissions lists every API call the controller makes on
// cluster-wide resources. deploy/clusterrole.yaml must grant all of it; a
// test checks that, and the sync tests check that every call recorded by the
// fake client is listed here, so the list cannot drift from the code.
var RequiredClusterPermissions = []Permission{
	{Group: "apps", Resource: "daemonsets", Verbs: []string{"get", "list", "watch"}},
	{Group: "apps", Resource: "daemonsets/status", Verbs: []string{"update"}},
	// Setting blockOwnerDeletion on a pod's ControllerRef needs this under
	// the OwnerReferencesPermissionEnforcement admission plugin.
	{Group: "apps", Resource: "daemonsets/finalizers", Verbs: []string{"update"}},
	{Group: "", Resource: "pods", Verbs: []string{"get", "list", "watch", "create", "delete", "patch"}},
	{Group: "", Resource: "nodes", Verbs: []string{"get", "list", "watch"}},
	{Group: "apps", Resource: "controllerrevisions", Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{Group: "", Resource: "events", Verbs: []string{"create", "patch"}},
}

// DelegatedAuthPermissions are what --secure-metrics needs to check a
// scraper's token (TokenReview) and access (SubjectAccessReview), as
// kube-controller-manager's system:auth-delegator binding grants it.
// deploy/ turns --secure-metrics on, so deploy/clusterrole.yaml grants them.
var DelegatedAuthPermissions = []Permission{
	{Group: "authentication.k8s.io", Resource: "tokenreviews", Verbs: []string{"create"}},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verbs: []string{"create"}},
}

// LeaderElectionPermissions is what the leader election needs in the
// namespace of its Lease (deploy/role.yaml).
var LeaderElectionPermissions = []Permission{
	{Group: "coordination.k8s.io", Resource: "leases", Verbs: []string{"get", "create", "update"}},
}

// allows reports whether perms grant verb on group/resource.
func allows(perms []Permission, group, resource, verb string) bool {
	for _, p := range perms {
		if p.Group != group || p.Resource != resource {
			continue
		}
		for _, v := range p.Verbs {
			if v == verb {
				return true
			}
		}
	}
	return false
}
