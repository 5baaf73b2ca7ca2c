package kwok

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// AuditConfig turns kube-apiserver's audit log on, with a policy that
// records only what it takes to show which controller replica wrote what,
// and when it held the leader-election Lease.
type AuditConfig struct {
	// LeaseNamespace is the namespace of the controller's leader-election
	// Lease (daemonset-controller's --leader-elect-resource-namespace).
	// Required. Every Lease write in it is logged, so it should not be
	// kube-node-lease, where every fake node renews its own.
	LeaseNamespace string
}

func (a AuditConfig) validate() error {
	if !dnsLabel.MatchString(a.LeaseNamespace) {
		return fmt.Errorf("audit lease namespace %q: must be a DNS label", a.LeaseNamespace)
	}
	return nil
}

// AuditLogName is the audit log's file name in the cluster's LogDir, where
// kwokctl's binary runtime points kube-apiserver's --audit-log-path.
const AuditLogName = "audit.log"

// The few fields of audit.k8s.io/v1 Policy that AuditPolicy writes, so that
// rendering it does not pull in k8s.io/apiserver.
type (
	auditPolicy struct {
		APIVersion string      `json:"apiVersion"`
		Kind       string      `json:"kind"`
		OmitStages []string    `json:"omitStages"`
		Rules      []auditRule `json:"rules"`
	}
	auditRule struct {
		Level      string            `json:"level"`
		Verbs      []string          `json:"verbs,omitempty"`
		Namespaces []string          `json:"namespaces,omitempty"`
		Resources  []auditGroupRules `json:"resources,omitempty"`
	}
	auditGroupRules struct {
		Group     string   `json:"group"`
		Resources []string `json:"resources"`
	}
)

// auditWriteVerbs are the verbs of a single-object write. deletecollection
// is left out: the controller never uses it, the harness's resets do.
var auditWriteVerbs = []string{"create", "update", "patch", "delete"}

// AuditPolicy renders the audit policy: the final stage only (one event
// per request), for writes to pods, daemonsets (and their status) and
// controllerrevisions at Metadata level (no bodies), and for Leases in
// conf.LeaseNamespace at Request level: the Lease's holder and renewTime
// are what a standby judges expiry by, and a release shows only in them.
// Nothing else.
//
// Leases are matched by namespace, not by name, because a create has no
// name in its URL and a rule with resourceNames would miss the first
// acquisition. pods/status and pods/binding are left out: kwok and
// kube-scheduler write those, never the controller.
func AuditPolicy(conf AuditConfig) ([]byte, error) {
	if err := conf.validate(); err != nil {
		return nil, err
	}
	p := auditPolicy{
		APIVersion: "audit.k8s.io/v1",
		Kind:       "Policy",
		OmitStages: []string{"RequestReceived"},
		Rules: []auditRule{
			{Level: "Metadata", Verbs: auditWriteVerbs, Resources: []auditGroupRules{
				{Group: "", Resources: []string{"pods"}},
				{Group: "apps", Resources: []string{"daemonsets", "daemonsets/status", "controllerrevisions"}},
			}},
			{Level: "Request", Verbs: auditWriteVerbs, Namespaces: []string{conf.LeaseNamespace}, Resources: []auditGroupRules{
				{Group: "coordination.k8s.io", Resources: []string{"leases"}},
			}},
			{Level: "None"},
		},
	}
	data, err := yaml.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding audit policy: %w", err)
	}
	return data, nil
}
