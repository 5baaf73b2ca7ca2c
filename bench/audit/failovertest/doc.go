// Package failovertest holds an integration test of leader election: two
// replicas of the daemonset-controller binary on a KWOK cluster whose API
// server keeps an audit log, the leader SIGKILLed mid-rollout again and
// again, and bench/audit judging from that log that no two replicas acted at
// once. It is a package of its own so that its cluster, the only one with
// the audit log on, is not brought up for bench/audit's unit and fuzz tests.
package failovertest
