package failovertest

// The pure parts of the failover test: what one instant of the DaemonSet's
// pods must satisfy, how far a rollout is, what a replica's log and the
// audit log say about who acted. They take values and return values, so
// that the table tests below check them without a cluster.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/dsbench/dsbench/bench/audit"
	"github.com/dsbench/dsbench/kwok/kwoktest"
)

// live: neither being deleted nor finished. A node's daemon pod is one of
// its live pods.
func live(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// instantProblems checks one state of the DaemonSet's pods (the namespace
// holds no others) against what a RollingUpdate with maxSurge 0 allows at
// every instant, whoever leads: no node runs two live pods, and, once armed
// (after the first convergence), at most maxUnavailable nodes lack a live
// Ready pod. Two leaders acting at once would each create a pod on a node
// that has none, or each delete one old pod. The problems are sorted.
func instantProblems(pods []*corev1.Pod, nodes []string, maxUnavailable int, armed bool) []string {
	liveOn := map[string][]string{}
	readyOn := map[string]bool{}
	for _, p := range pods {
		if !live(p) {
			continue
		}
		n := kwoktest.PodNode(p)
		liveOn[n] = append(liveOn[n], p.Name)
		if kwoktest.PodReady(p) {
			readyOn[n] = true
		}
	}
	var problems []string
	for n, names := range liveOn {
		if len(names) > 1 {
			slices.Sort(names)
			problems = append(problems, fmt.Sprintf("node %s runs %d live pods %v", n, len(names), names))
		}
	}
	if armed {
		var unavailable []string
		for _, n := range nodes {
			if !readyOn[n] {
				unavailable = append(unavailable, n)
			}
		}
		if len(unavailable) > maxUnavailable {
			problems = append(problems, fmt.Sprintf("%d nodes without a live Ready pod %v, more than maxUnavailable %d", len(unavailable), unavailable, maxUnavailable))
		}
	}
	slices.Sort(problems)
	return problems
}

// rolloutState says how far the pods are from the end of a rollout to
// image: every node runs exactly one live, Ready pod of image, no other pod
// lingers, and no pod runs elsewhere. updated counts the nodes that run a
// live Ready pod of image; problems lists what still differs, sorted, and is
// empty at the end.
func rolloutState(pods []corev1.Pod, nodes []string, image string) (updated int, problems []string) {
	want := map[string]bool{}
	for _, n := range nodes {
		want[n] = true
	}
	perNode := map[string]int{}
	done := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		n := kwoktest.PodNode(p)
		switch {
		case !want[n]:
			problems = append(problems, fmt.Sprintf("pod %s on node %q, not one of the test's", p.Name, n))
			continue
		case !live(p):
			problems = append(problems, fmt.Sprintf("pod %s on %s is %s, being deleted %v", p.Name, n, p.Status.Phase, p.DeletionTimestamp != nil))
			continue
		}
		perNode[n]++
		img := ""
		if len(p.Spec.Containers) > 0 {
			img = p.Spec.Containers[0].Image
		}
		switch {
		case img != image:
			problems = append(problems, fmt.Sprintf("pod %s on %s runs %s", p.Name, n, img))
		case !kwoktest.PodReady(p):
			problems = append(problems, fmt.Sprintf("pod %s on %s is not Ready", p.Name, n))
		default:
			done[n] = true
		}
	}
	for _, n := range nodes {
		if done[n] {
			updated++
		}
		if perNode[n] != 1 {
			problems = append(problems, fmt.Sprintf("node %s runs %d live pods", n, perNode[n]))
		}
	}
	slices.Sort(problems)
	return updated, problems
}

// The controller's log lines (cmd/daemonset-controller/run.go) that tell
// which identity a process leads as, and that a standby has seen the Lease.
var (
	startedLeadingRE = regexp.MustCompile(`"Started leading" identity="([^"]+)"`)
	standingByRE     = regexp.MustCompile(`"Standing by" leader="([^"]+)"`)
)

// ledAs is the identity in the log's "Started leading" line, "" if it has
// none. A process leads at most once: losing the Lease ends it.
func ledAs(log []byte) string {
	if m := startedLeadingRE.FindSubmatch(log); m != nil {
		return string(m[1])
	}
	return ""
}

// standsBy says whether the log shows the process standing by for a leader.
func standsBy(log []byte) bool { return standingByRE.Match(log) }

// identityOf is the replica identity in a controller request's user agent
// ("daemonset-controller/<identity>[/leader-election]"), "" for others.
func identityOf(userAgent string) string {
	rest, ok := strings.CutPrefix(userAgent, audit.DefaultUserAgentPrefix)
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/ "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// podWritesByIdentity counts each replica's successful pod creates,
// updates, patches and deletes (no subresource): the writes that move a
// rollout.
func podWritesByIdentity(events []audit.Event) map[string]int {
	out := map[string]int{}
	for _, ev := range events {
		if ev.Stage != audit.StageResponseComplete || ev.ObjectRef == nil || ev.ObjectRef.Resource != "pods" || ev.ObjectRef.Subresource != "" {
			continue
		}
		if c := ev.Code(); c < 200 || c > 299 {
			continue
		}
		switch ev.Verb {
		case "create", "update", "patch", "delete":
		default:
			continue
		}
		if id := identityOf(ev.UserAgent); id != "" {
			out[id]++
		}
	}
	return out
}

// since keeps the events the API server received at or after t: those of
// this run, in a cluster whose log holds every earlier run's too.
func since(events []audit.Event, t time.Time) []audit.Event {
	var out []audit.Event
	for _, ev := range events {
		if !ev.RequestReceivedTimestamp.Before(t) {
			out = append(out, ev)
		}
	}
	return out
}

// takeoverSlack is what takeoverBound allows beyond client-go's own timing:
// the acquiring poll's two requests (a GET, then the UPDATE whose receipt
// the audit log shows) and timers firing late on a loaded 2-core machine.
const takeoverSlack = time.Second

// takeoverBound is the longest a standby may take, after a killed leader's
// last renewal, to acquire the Lease.
//
// It is not LeaseDuration + RetryPeriod. client-go's standby polls the
// Lease every RetryPeriod stretched by a random factor of up to
// 1+JitterFactor (2.2 × RetryPeriod at most), and it counts LeaseDuration
// from the poll at which it last saw the record change, not from the
// renewal. After the last renewal it may take one stretched period to see
// it, LeaseDuration to hold it expired, and one more stretched period until
// the poll that acquires: LeaseDuration + 2 × 2.2 × RetryPeriod. The killed
// leader never released the Lease, so a takeover before the record it last
// wrote can have expired (up to a second before LeaseDuration after the last
// renewal, see audit.Check) would be an error of the election
// (Handover.BeforeExpiry).
func takeoverBound(leaseDuration, retryPeriod time.Duration) time.Duration {
	stretched := time.Duration((1 + leaderelection.JitterFactor) * float64(retryPeriod))
	return leaseDuration + 2*stretched + takeoverSlack
}

// ---------------------------------------------------------------------------
// Tests of the pure parts, without a cluster.

// pod builds a daemon pod on node: "ready" or "pending", image v1 or v2,
// bound or only pinned, being deleted or not.
func pod(name, node, image string, ready, bound, deleting bool) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name = name
	p.Spec.Containers = []corev1.Container{{Name: "agent", Image: image}}
	if bound {
		p.Spec.NodeName = node
	}
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
	p.Status.Phase = corev1.PodPending
	if ready {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestInstantProblems(t *testing.T) {
	nodes := []string{"n0", "n1", "n2"}
	for _, tt := range []struct {
		name  string
		pods  []*corev1.Pod
		armed bool
		want  []string
	}{
		{
			name: "converged",
			pods: []*corev1.Pod{pod("a", "n0", "v1", true, true, false), pod("b", "n1", "v1", true, true, false), pod("c", "n2", "v1", true, true, false)},
		},
		{
			name: "one node between its old and new pod",
			pods: []*corev1.Pod{
				pod("a", "n0", "v1", true, true, true), pod("a2", "n0", "v2", false, false, false),
				pod("b", "n1", "v1", true, true, false), pod("c", "n2", "v1", true, true, false),
			},
			armed: true,
		},
		{
			name: "two live pods on a node, one of them only pinned",
			pods: []*corev1.Pod{
				pod("a", "n0", "v2", true, true, false), pod("a2", "n0", "v2", false, false, false),
				pod("b", "n1", "v1", true, true, false), pod("c", "n2", "v1", true, true, false),
			},
			armed: true,
			want:  []string{"node n0 runs 2 live pods [a a2]"},
		},
		{
			name: "two nodes down at maxUnavailable 1",
			pods: []*corev1.Pod{
				pod("a", "n0", "v1", true, true, true), pod("b2", "n1", "v2", false, true, false), pod("c", "n2", "v1", true, true, false),
			},
			armed: true,
			want:  []string{"2 nodes without a live Ready pod [n0 n1], more than maxUnavailable 1"},
		},
		{
			name: "unavailability before the first convergence is no problem",
			pods: []*corev1.Pod{pod("a", "n0", "v1", false, true, false)},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := instantProblems(tt.pods, nodes, 1, tt.armed)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRolloutState(t *testing.T) {
	nodes := []string{"n0", "n1"}
	for _, tt := range []struct {
		name        string
		pods        []*corev1.Pod
		wantUpdated int
		want        []string
	}{
		{
			name:        "done",
			pods:        []*corev1.Pod{pod("a", "n0", "v2", true, true, false), pod("b", "n1", "v2", true, true, false)},
			wantUpdated: 2,
		},
		{
			name: "midway",
			pods: []*corev1.Pod{
				pod("a", "n0", "v2", true, true, false), pod("b", "n1", "v1", true, true, true), pod("b2", "n1", "v2", false, false, false),
			},
			wantUpdated: 1,
			want:        []string{"pod b on n1 is Running, being deleted true", "pod b2 on n1 is not Ready"},
		},
		{
			name:        "a node without a pod, another with two, a stranger",
			pods:        []*corev1.Pod{pod("a", "n0", "v2", true, true, false), pod("a2", "n0", "v2", true, true, false), pod("x", "elsewhere", "v2", true, true, false)},
			wantUpdated: 1,
			want:        []string{"node n0 runs 2 live pods", "node n1 runs 0 live pods", `pod x on node "elsewhere", not one of the test's`},
		},
		{
			name:        "old image",
			pods:        []*corev1.Pod{pod("a", "n0", "v1", true, true, false), pod("b", "n1", "v2", true, true, false)},
			wantUpdated: 1,
			want:        []string{"pod a on n0 runs v1"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var pods []corev1.Pod
			for _, p := range tt.pods {
				pods = append(pods, *p)
			}
			updated, got := rolloutState(pods, nodes, "v2")
			if updated != tt.wantUpdated {
				t.Errorf("updated = %d, want %d", updated, tt.wantUpdated)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// The lines as klog's text format writes the controller's logger.Info calls.
func TestReplicaLog(t *testing.T) {
	leader := []byte(`I0102 03:04:05.000001  4242 run.go:101] "Serving" endpoint="metrics" address="127.0.0.1:40001" tls=false
I0102 03:04:05.100000  4242 leaderelection.go:257] "Attempting to acquire leader lease..." lock="dsbench-failover/l"
I0102 03:04:05.200000  4242 run.go:264] "Started leading" identity="host-1_0a1b2c3d" lease="dsbench-failover/l"
`)
	standby := []byte(`I0102 03:04:06.000000  4243 run.go:276] "Standing by" leader="host-1_0a1b2c3d"
`)
	if got := ledAs(leader); got != "host-1_0a1b2c3d" {
		t.Errorf("ledAs(leader) = %q", got)
	}
	if got := ledAs(standby); got != "" {
		t.Errorf("ledAs(standby) = %q, want none: the leader it names is another", got)
	}
	if standsBy(leader) || !standsBy(standby) {
		t.Errorf("standsBy(leader) = %v, standsBy(standby) = %v", standsBy(leader), standsBy(standby))
	}
}

func TestPodWritesByIdentity(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(sec int, ua, verb, resource, sub string, code int) audit.Event {
		e := audit.Event{Stage: audit.StageResponseComplete, Verb: verb, UserAgent: ua,
			ObjectRef: &audit.ObjectRef{Resource: resource, Subresource: sub, Namespace: "ns"}, RequestReceivedTimestamp: t0.Add(time.Duration(sec) * time.Second)}
		e.ResponseStatus = &struct {
			Code int `json:"code"`
		}{code}
		return e
	}
	events := []audit.Event{
		ev(0, "daemonset-controller/old_00000000", "create", "pods", "", 201), // an earlier run's
		ev(1, "daemonset-controller/a_11111111", "create", "pods", "", 201),
		ev(2, "daemonset-controller/a_11111111", "delete", "pods", "", 200),
		ev(3, "daemonset-controller/a_11111111", "create", "pods", "", 409),
		ev(4, "daemonset-controller/a_11111111/leader-election", "update", "leases", "", 200),
		ev(5, "daemonset-controller/b_22222222", "update", "daemonsets", "status", 200),
		ev(6, "daemonset-controller/b_22222222", "patch", "pods", "", 200),
		ev(7, "kube-scheduler/v1.36.4", "create", "pods", "binding", 201),
		ev(8, "kwok/v0.8.0", "delete", "pods", "", 200),
	}
	got := podWritesByIdentity(since(events, t0.Add(time.Second)))
	want := map[string]int{"a_11111111": 2, "b_22222222": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestTakeoverBound(t *testing.T) {
	// 4 s + 2 × 2.2 × 500 ms + 1 s.
	if got, want := takeoverBound(4*time.Second, 500*time.Millisecond), 7200*time.Millisecond; got != want {
		t.Errorf("takeoverBound = %v, want %v", got, want)
	}
}
