// Package oracle decides on its own which nodes must run each DaemonSet's pod
// and checks the controller under test against that, from a stream of watch
// events: convergence, invariant violations with their durations, rollout and
// node-join timings.
//
// It is a second, independent implementation on purpose: it imports neither the
// controller's planner nor k8s.io/component-helpers, and it never reads
// DaemonSet status except status.collisionCount (see TemplateHash). Time comes
// only from event timestamps; nothing here calls time.Now.
package oracle
