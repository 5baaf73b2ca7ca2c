// Package audit reads a kube-apiserver audit log and checks that replicas of
// the DaemonSet controller never act at the same time: every write of a
// replica to pods, daemonsets or controllerrevisions must fall in one of its
// own leadership terms, which come from its own writes to the
// leader-election Lease (Check says exactly how, and why the bound is
// LeaseDuration). Replicas are told apart by the identity in their user
// agent, "daemonset-controller/<identity>".
//
// It is pure: Decode turns JSON lines into Events, Check turns Events into
// a Report of terms, handovers, per-replica counts and violations as data.
// Only ReadFile touches the file system, and nothing calls time.Now.
//
//	log, err := audit.ReadFile(cluster.AuditLog()) // before cluster.Down
//	rep, err := audit.Check(audit.Config{LeaseNamespace: ns}, log.Events)
//	if !rep.OK() { t.Errorf("replicas overlapped:\n%s", rep) }
//
// kwok.ClusterConfig.Audit turns the log on with a policy (kwok.AuditPolicy)
// that records exactly the requests Check reads.
package audit
