package scenarios

import (
	"regexp"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The version and kind every scenario file declares.
const (
	APIVersion = "dsbench.dev/v1alpha1"
	Kind       = "Scenario"
)

// Scenario is one benchmark: a cluster shape, the DaemonSets it runs and the
// steps that act on them, repeated with a fixed seed.
type Scenario struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	// Seed drives every random choice (which nodes leave, get labels, ...).
	// The same seed gives the same sequence of actions.
	Seed int64 `json:"seed,omitempty"`
	// Repetitions is how many times the runner repeats the scenario on a fresh
	// cluster; 0 means 1. Every repetition uses the same seed.
	Repetitions int `json:"repetitions,omitempty"`
	// Hold is how long a DaemonSet must stay converged before a barrier
	// counts it converged (it reports when that stretch began); 0 means
	// DefaultHold. A controller that converges and then breaks again within
	// it has not converged.
	Hold    Duration `json:"hold,omitzero"`
	Cluster Cluster  `json:"cluster"`
	// Placeholders fill {NAME} markers in manifest files, as text, before the
	// files are parsed. Workloads may override entries.
	Placeholders map[string]string `json:"placeholders,omitempty"`
	Workloads    []Workload        `json:"workloads"`
	Steps        []Step            `json:"steps"`

	// Source is the file the scenario was loaded from.
	Source string `json:"-"`
	// pos maps a field path to where it was written, for Validate's messages.
	pos map[string]Position
	// sizesUnknown is set when pool counts did not decode, so that counts
	// cannot be checked against them.
	sizesUnknown bool
}

// Metadata names and describes a scenario.
type Metadata struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// Cluster is the shape of the fake cluster at the start of a run.
type Cluster struct {
	// Nodes is the default total node count. It may be left out; when set it
	// must equal the sum of the pool counts. Scale changes it.
	Nodes int          `json:"nodes,omitempty"`
	Pools []NodePool   `json:"pools"`
	Pods  PodBehaviour `json:"pods,omitzero"`
}

// NodePool is a set of identical fake nodes named <NamePrefix>-<index>.
type NodePool struct {
	// Name is how steps refer to the pool.
	Name string `json:"name"`
	// NamePrefix of the node names; defaults to Name.
	NamePrefix string              `json:"namePrefix,omitempty"`
	Count      int                 `json:"count"`
	Labels     map[string]string   `json:"labels,omitempty"`
	Taints     []corev1.Taint      `json:"taints,omitempty"`
	Capacity   corev1.ResourceList `json:"capacity,omitempty"`
}

// Prefix is the node name prefix (NamePrefix, or Name when that is empty).
func (p NodePool) Prefix() string {
	if p.NamePrefix != "" {
		return p.NamePrefix
	}
	return p.Name
}

// PodBehaviour is how fake pods progress. Image patterns are regular
// expressions matched against every container image of a pod.
type PodBehaviour struct {
	// ReadyDelay is the least time from binding to Ready.
	ReadyDelay Duration `json:"readyDelay,omitzero"`
	// ReadyJitter adds a uniformly random extra delay in [0, ReadyJitter).
	ReadyJitter Duration `json:"readyJitter,omitzero"`
	// DeleteDelay is how long a deleted pod lingers before it is gone.
	DeleteDelay Duration `json:"deleteDelay,omitzero"`
	// FailImages: pods with a matching image go to phase Failed.
	FailImages []string `json:"failImages,omitempty"`
	// NeverReadyImages: pods with a matching image run but never become Ready.
	NeverReadyImages []string `json:"neverReadyImages,omitempty"`
}

// FailImagesRegexp joins FailImages into one regular expression ("" if none).
func (b PodBehaviour) FailImagesRegexp() string { return joinRegexps(b.FailImages) }

// NeverReadyImagesRegexp joins NeverReadyImages into one regular expression.
func (b PodBehaviour) NeverReadyImagesRegexp() string { return joinRegexps(b.NeverReadyImages) }

func joinRegexps(res []string) string {
	if len(res) == 0 {
		return ""
	}
	if len(res) == 1 {
		return res[0]
	}
	parts := make([]string, len(res))
	for i, re := range res {
		parts[i] = "(?:" + re + ")"
	}
	return strings.Join(parts, "|")
}

// Matches reports whether the image fails and whether it never becomes ready
// under b. Invalid patterns (rejected by Validate) match nothing.
func (b PodBehaviour) Matches(image string) (fails, neverReady bool) {
	match := func(res []string) bool {
		for _, s := range res {
			if re, err := regexp.Compile(s); err == nil && re.MatchString(image) {
				return true
			}
		}
		return false
	}
	return match(b.FailImages), match(b.NeverReadyImages)
}

// Workload is a source of DaemonSets: a manifest file or an inline object.
type Workload struct {
	// File is a path to a manifest, relative to the scenario file. It may hold
	// several YAML documents; documents that are not DaemonSets (for example
	// ServiceAccounts) land in Objects.
	File string `json:"file,omitempty"`
	// Inline is a DaemonSet written in the scenario itself.
	Inline *appsv1.DaemonSet `json:"inline,omitempty"`
	// Placeholders override the scenario's placeholders for this file.
	Placeholders map[string]string `json:"placeholders,omitempty"`
	// Namespace, when set, replaces the namespace of every DaemonSet (and of
	// every namespaced object) from this workload, so that the same manifest
	// can run twice.
	Namespace string `json:"namespace,omitempty"`

	// DaemonSets are filled by Load: apps/v1, namespace set, selector
	// defaulted for legacy versions. Never mutate them; the runner should
	// create deep copies.
	DaemonSets []*appsv1.DaemonSet `json:"-"`
	// Objects are the other documents of the file, in file order. The runner
	// creates them before the DaemonSets.
	Objects []*unstructured.Unstructured `json:"-"`
	// docPaths[i] is the field path of DaemonSets[i] (for messages).
	docPaths []string
}

// Duration is a time.Duration written as a Go duration string ("1m30s").
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// Step is one action of a scenario. Exactly one of the action fields is set;
// Kind names it. Name, Rate, Duration and Expect apply to any action.
type Step struct {
	Name string `json:"name,omitempty"`
	// Rate spreads the step's individual actions (one per node, pod or
	// DaemonSet) at this many per second. Zero means all at once.
	Rate float64 `json:"rate,omitempty"`
	// Duration spreads the step's actions evenly over this time.
	Duration Duration `json:"duration,omitzero"`
	// Expect lists the violations this step is expected to cause.
	Expect []Expectation `json:"expect,omitempty"`

	// Node actions.
	Nodes        *NodesStep  `json:"nodes,omitempty"`
	Labels       *LabelsStep `json:"labels,omitempty"`
	Taints       *TaintsStep `json:"taints,omitempty"`
	Cordon       *NodeTarget `json:"cordon,omitempty"`
	Uncordon     *NodeTarget `json:"uncordon,omitempty"`
	Evict        *EvictStep  `json:"evict,omitempty"`
	MarkNotReady *NodeTarget `json:"markNotReady,omitempty"`
	MarkReady    *NodeTarget `json:"markReady,omitempty"`
	// DaemonSet actions.
	Create   *CreateStep   `json:"create,omitempty"`
	Delete   *DeleteStep   `json:"delete,omitempty"`
	Update   *UpdateStep   `json:"update,omitempty"`
	Strategy *StrategyStep `json:"strategy,omitempty"`
	Rollback *RollbackStep `json:"rollback,omitempty"`
	// Pod actions.
	Pods *PodsStep `json:"pods,omitempty"`
	// Controller process.
	Controller *ControllerStep `json:"controller,omitempty"`
	// Fault injects a measured fault (see FaultStep).
	Fault *FaultStep `json:"fault,omitempty"`
	// Flow.
	Pause         *Duration `json:"pause,omitempty"`
	WaitConverged *WaitStep `json:"waitConverged,omitempty"`
	Parallel      [][]Step  `json:"parallel,omitempty"`

	// Index numbers every step of the scenario in document order, nested
	// steps included (set by Load and SetDefaults). Select uses it.
	Index int `json:"-"`
	// Path is the step's field path, e.g. steps[4].parallel[1][0].
	Path string `json:"-"`
}

// StepKind names the action of a step; it is the YAML key that holds it.
type StepKind string

// The step kinds.
const (
	KindNodes         StepKind = "nodes"
	KindLabels        StepKind = "labels"
	KindTaints        StepKind = "taints"
	KindCordon        StepKind = "cordon"
	KindUncordon      StepKind = "uncordon"
	KindEvict         StepKind = "evict"
	KindMarkNotReady  StepKind = "markNotReady"
	KindMarkReady     StepKind = "markReady"
	KindCreate        StepKind = "create"
	KindDelete        StepKind = "delete"
	KindUpdate        StepKind = "update"
	KindStrategy      StepKind = "strategy"
	KindRollback      StepKind = "rollback"
	KindPods          StepKind = "pods"
	KindController    StepKind = "controller"
	KindFault         StepKind = "fault"
	KindPause         StepKind = "pause"
	KindWaitConverged StepKind = "waitConverged"
	KindParallel      StepKind = "parallel"
)

// Kinds returns the step kinds that are set, in declaration order. A valid
// step has exactly one.
func (s *Step) Kinds() []StepKind {
	var out []StepKind
	add := func(set bool, k StepKind) {
		if set {
			out = append(out, k)
		}
	}
	add(s.Nodes != nil, KindNodes)
	add(s.Labels != nil, KindLabels)
	add(s.Taints != nil, KindTaints)
	add(s.Cordon != nil, KindCordon)
	add(s.Uncordon != nil, KindUncordon)
	add(s.Evict != nil, KindEvict)
	add(s.MarkNotReady != nil, KindMarkNotReady)
	add(s.MarkReady != nil, KindMarkReady)
	add(s.Create != nil, KindCreate)
	add(s.Delete != nil, KindDelete)
	add(s.Update != nil, KindUpdate)
	add(s.Strategy != nil, KindStrategy)
	add(s.Rollback != nil, KindRollback)
	add(s.Pods != nil, KindPods)
	add(s.Controller != nil, KindController)
	add(s.Fault != nil, KindFault)
	add(s.Pause != nil, KindPause)
	add(s.WaitConverged != nil, KindWaitConverged)
	add(s.Parallel != nil, KindParallel)
	return out
}

// Kind is the step's action, or "" when none or several are set.
func (s *Step) Kind() StepKind {
	if ks := s.Kinds(); len(ks) == 1 {
		return ks[0]
	}
	return ""
}

// Target is the node set of a node or pod step, or nil for other kinds.
func (s *Step) Target() *NodeTarget {
	switch {
	case s.Nodes != nil:
		return &s.Nodes.NodeTarget
	case s.Labels != nil:
		return &s.Labels.NodeTarget
	case s.Taints != nil:
		return &s.Taints.NodeTarget
	case s.Cordon != nil:
		return s.Cordon
	case s.Uncordon != nil:
		return s.Uncordon
	case s.Evict != nil:
		return &s.Evict.NodeTarget
	case s.MarkNotReady != nil:
		return s.MarkNotReady
	case s.MarkReady != nil:
		return s.MarkReady
	case s.Pods != nil:
		return &s.Pods.NodeTarget
	}
	return nil
}

// Paced reports whether Rate and Duration apply to the step: it acts on
// many nodes, pods or DaemonSets one by one.
func (s *Step) Paced() bool { return s.Target() != nil || s.Create != nil }

// Offset is when the i-th of n individual actions of the step starts,
// relative to the step's start: i/Rate, or i*Duration/n, or 0.
func (s *Step) Offset(i, n int) time.Duration {
	switch {
	case i <= 0 || n <= 0:
		return 0
	case s.Rate > 0:
		return time.Duration(float64(i) / s.Rate * float64(time.Second))
	case s.Duration.Duration > 0:
		return time.Duration(int64(s.Duration.Duration) / int64(n) * int64(i))
	}
	return 0
}

// NodeTarget picks nodes: those of Pool (all pools when empty) whose labels
// match Selector, then Count of them or a Fraction of them, chosen with
// Select. Exactly one of Count and Fraction is set.
type NodeTarget struct {
	Pool string `json:"pool,omitempty"`
	// Selector is a label selector in kubectl syntax ("disk=ssd,!gpu").
	Selector string  `json:"selector,omitempty"`
	Count    int     `json:"count,omitempty"`
	Fraction float64 `json:"fraction,omitempty"`
}

// Resolve turns the target into a number of items out of size candidates:
// Count, or Fraction*size rounded to nearest (at least 1 when size > 0),
// never more than size.
func (t NodeTarget) Resolve(size int) int {
	n := t.Count
	if t.Fraction > 0 {
		n = max(1, int(float64(size)*t.Fraction+0.5))
	}
	return max(0, min(n, size))
}

// NodeAction is what a nodes step does.
type NodeAction string

// Node actions.
const (
	// NodeJoin adds Count nodes (or Fraction of the pool's current size) to
	// Pool, with new indices.
	NodeJoin NodeAction = "join"
	// NodeLeave deletes the chosen nodes.
	NodeLeave NodeAction = "leave"
	// NodeReplace deletes the chosen nodes and adds as many new ones to the
	// pools they were in.
	NodeReplace NodeAction = "replace"
)

// NodesStep adds, removes or replaces nodes.
type NodesStep struct {
	Action     NodeAction `json:"action"`
	NodeTarget `json:",inline"`
}

// LabelsStep sets (adds or changes) and removes labels on the chosen nodes.
type LabelsStep struct {
	NodeTarget `json:",inline"`
	Set        map[string]string `json:"set,omitempty"`
	Remove     []string          `json:"remove,omitempty"`
}

// TaintsStep adds taints (replacing one with the same key and effect, which
// changes its value) and removes taints (by key, and effect when given).
type TaintsStep struct {
	NodeTarget `json:",inline"`
	Add        []corev1.Taint `json:"add,omitempty"`
	Remove     []corev1.Taint `json:"remove,omitempty"`
}

// DefaultEvictTaintKey is the NoExecute taint an evict step adds by default.
const DefaultEvictTaintKey = "dsbench.dev/evict"

// EvictStep adds a NoExecute taint to the chosen nodes, which evicts pods
// that do not tolerate it.
type EvictStep struct {
	NodeTarget `json:",inline"`
	// Taint defaults to dsbench.dev/evict:NoExecute; its effect must be
	// NoExecute.
	Taint *corev1.Taint `json:"taint,omitempty"`
}

// CreateStep creates DaemonSets (all workloads when the list is empty).
type CreateStep struct {
	DaemonSets []string `json:"daemonSets,omitempty"`
}

// Cascade is how a delete treats the DaemonSet's pods.
type Cascade string

// Cascade modes, as kubectl delete --cascade.
const (
	CascadeBackground Cascade = "background"
	CascadeForeground Cascade = "foreground"
	CascadeOrphan     Cascade = "orphan"
)

// DeleteStep deletes a DaemonSet.
type DeleteStep struct {
	DaemonSet string  `json:"daemonSet"`
	Cascade   Cascade `json:"cascade,omitempty"`
}

// UpdateStep changes the pod template, which starts a rollout. Image and Env
// apply to Container (which may be left out when there is one container);
// Patch is a strategic merge patch of the whole DaemonSet, applied last.
type UpdateStep struct {
	DaemonSet string            `json:"daemonSet"`
	Container string            `json:"container,omitempty"`
	Image     string            `json:"image,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Patch     map[string]any    `json:"patch,omitempty"`
}

// StrategyStep changes the update strategy and minReadySeconds.
type StrategyStep struct {
	DaemonSet       string                             `json:"daemonSet"`
	Type            appsv1.DaemonSetUpdateStrategyType `json:"type,omitempty"`
	MaxUnavailable  *intstr.IntOrString                `json:"maxUnavailable,omitempty"`
	MaxSurge        *intstr.IntOrString                `json:"maxSurge,omitempty"`
	MinReadySeconds *int32                             `json:"minReadySeconds,omitempty"`
}

// RollbackStep rolls a DaemonSet back, as kubectl rollout undo does.
type RollbackStep struct {
	DaemonSet string `json:"daemonSet"`
	// ToRevision is a ControllerRevision number; 0 means the previous one.
	ToRevision int64 `json:"toRevision,omitempty"`
}

// PodAction is what a pods step does.
type PodAction string

// Pod actions.
const (
	PodDelete PodAction = "delete"
	// PodFail sets the pod's phase to Failed, as a crashed pod would be.
	PodFail PodAction = "fail"
	// PodUnready sets the pod's Ready condition to False, as a readiness
	// probe that keeps failing would; the pod stays Running and is never
	// made ready again (a controller replaces it).
	PodUnready PodAction = "unready"
)

// PodsStep deletes, fails or unreadies daemon pods: those of DaemonSet (all DaemonSets
// when empty) on the nodes of Pool matching Selector; Count or Fraction of
// those pods.
type PodsStep struct {
	Action     PodAction `json:"action"`
	DaemonSet  string    `json:"daemonSet,omitempty"`
	NodeTarget `json:",inline"`
}

// ControllerAction is what a controller step does to the controller process.
type ControllerAction string

// Controller actions.
const (
	// ControllerKill stops the controller at once (SIGKILL); it stays down.
	ControllerKill ControllerAction = "kill"
	// ControllerStart starts a killed controller.
	ControllerStart ControllerAction = "start"
	// ControllerRestart kills the controller and starts it after Downtime.
	ControllerRestart ControllerAction = "restart"
)

// ControllerStep kills or restarts the DaemonSet controller under test.
type ControllerStep struct {
	Action   ControllerAction `json:"action"`
	Downtime Duration         `json:"downtime,omitzero"`
}

// FaultStep injects one fault, which the runner measures as such: when it
// began and ended, how many times it struck, the controller's API calls
// meanwhile, and how long the DaemonSets took to converge once it ended.
// Exactly one of its fields is set.
type FaultStep struct {
	KillStorm          *KillStorm          `json:"killStorm,omitempty"`
	RejectCreates      *RejectCreates      `json:"rejectCreates,omitempty"`
	APIServerRestart   *APIServerRestart   `json:"apiServerRestart,omitempty"`
	SlowAPI            *SlowAPI            `json:"slowAPI,omitempty"`
	ConflictingWriters *ConflictingWriters `json:"conflictingWriters,omitempty"`
	WriteTimeouts      *WriteTimeouts      `json:"writeTimeouts,omitempty"`
}

// FaultKind names the fault of a fault step; it is the YAML key that holds it.
type FaultKind string

// The fault kinds.
const (
	FaultKillStorm          FaultKind = "killStorm"
	FaultRejectCreates      FaultKind = "rejectCreates"
	FaultAPIServerRestart   FaultKind = "apiServerRestart"
	FaultSlowAPI            FaultKind = "slowAPI"
	FaultConflictingWriters FaultKind = "conflictingWriters"
	FaultWriteTimeouts      FaultKind = "writeTimeouts"
)

// Kinds returns the fault kinds that are set; a valid step has exactly one.
func (f *FaultStep) Kinds() []FaultKind {
	var out []FaultKind
	if f.KillStorm != nil {
		out = append(out, FaultKillStorm)
	}
	if f.RejectCreates != nil {
		out = append(out, FaultRejectCreates)
	}
	if f.APIServerRestart != nil {
		out = append(out, FaultAPIServerRestart)
	}
	if f.SlowAPI != nil {
		out = append(out, FaultSlowAPI)
	}
	if f.ConflictingWriters != nil {
		out = append(out, FaultConflictingWriters)
	}
	if f.WriteTimeouts != nil {
		out = append(out, FaultWriteTimeouts)
	}
	return out
}

// Kind is the fault, or "" when none or several are set.
func (f *FaultStep) Kind() FaultKind {
	if ks := f.Kinds(); len(ks) == 1 {
		return ks[0]
	}
	return ""
}

// DurationRange is a span that random durations are drawn from, uniformly.
type DurationRange struct {
	Min Duration `json:"min"`
	Max Duration `json:"max"`
}

// KillStorm SIGKILLs the controller Kills times. Before each kill it runs
// for a time drawn from Uptime, and after it stays down for a time drawn
// from Downtime; the draws come from the scenario's seed and the step.
type KillStorm struct {
	Kills    int           `json:"kills"`
	Uptime   DurationRange `json:"uptime"`
	Downtime DurationRange `json:"downtime"`
}

// RejectCreates makes the API server refuse pod creates beyond Pods pods in
// Namespace (a ResourceQuota) for For, then lifts the quota. Pods is a
// count, or a percentage of the scenario's nodes at its start (after
// --nodes scaling), so that the share refused stays the same at any size.
// With
// MaxCallsPerMinute set, a controller that sends more API calls per minute
// than that while the quota holds is a HotLoop violation.
type RejectCreates struct {
	// Namespace defaults to the namespace of the scenario's DaemonSets when
	// they share one.
	Namespace         string             `json:"namespace,omitempty"`
	Pods              intstr.IntOrString `json:"pods"`
	For               Duration           `json:"for"`
	MaxCallsPerMinute float64            `json:"maxCallsPerMinute,omitempty"`
}

// APIServerRestart kills the local KWOK cluster's kube-apiserver and starts
// it again after Downtime. With Compact, etcd is first compacted to its
// current revision, so that watches resuming from before the restart get
// "resource version too old" and must list again (the controller's and the
// harness's alike). It needs a local cluster (not --kubeconfig).
type APIServerRestart struct {
	Downtime Duration `json:"downtime,omitzero"`
	Compact  bool     `json:"compact,omitempty"`
}

// SlowAPI delays the controller's API requests for For: each write (POST,
// PUT, PATCH, DELETE) by WriteLatency, each read (GET: a get, a list, the
// start of a watch) by ReadLatency. The controller of a scenario with a
// slowAPI fault reaches the API server through the harness's proxy for the
// whole run; the harness's own watches and steps never do.
type SlowAPI struct {
	WriteLatency Duration `json:"writeLatency,omitzero"`
	ReadLatency  Duration `json:"readLatency,omitzero"`
	For          Duration `json:"for"`
}

// WriteTimeouts answers one in Every of the controller's pod creates and
// pod deletes for For as kube-apiserver does when its request deadline
// passes while the handler still runs: 504, reason Timeout. The write is
// applied all the same, LandAfter after that answer, as the abandoned
// handler would. A controller that takes the answer for a refusal and
// writes again puts a second pod on the node. Like slowAPI, it puts the
// harness's proxy in front of the controller for the whole run.
type WriteTimeouts struct {
	Every     int      `json:"every"`
	LandAfter Duration `json:"landAfter,omitzero"`
	For       Duration `json:"for"`
}

// ConflictingWriters plays other clients writing DaemonSet during a
// rollout, for For: every StatusEvery one writes a bogus status (no pod
// ready) through the status subresource, and every ApplyEvery, from the
// start, one changes the template as a user would, alternately with a
// server-side apply (kubectl apply --server-side) and a read-modify-write
// update (kubectl edit), each setting WriterEnv of Container to a new value.
// The DaemonSet must end with the last value written: otherwise an update
// was lost.
type ConflictingWriters struct {
	DaemonSet string `json:"daemonSet"`
	// Container may be left out when the template has one container.
	Container   string   `json:"container,omitempty"`
	For         Duration `json:"for"`
	StatusEvery Duration `json:"statusEvery"`
	ApplyEvery  Duration `json:"applyEvery"`
}

// DefaultWaitTimeout is a waitConverged timeout that was left out.
const DefaultWaitTimeout = 10 * time.Minute

// WaitStep blocks until the DaemonSets (all created ones when empty) have
// converged: the oracle's eligible nodes each run one up-to-date, available
// pod and no other node runs one. It times out after Timeout plus
// TimeoutPerNode for every node of the cluster.
type WaitStep struct {
	Timeout        Duration `json:"timeout,omitzero"`
	TimeoutPerNode Duration `json:"timeoutPerNode,omitzero"`
	DaemonSets     []string `json:"daemonSets,omitempty"`
}

// EffectiveTimeout is Timeout + nodes*TimeoutPerNode.
func (w WaitStep) EffectiveTimeout(nodes int) time.Duration {
	return w.Timeout.Duration + time.Duration(nodes)*w.TimeoutPerNode.Duration
}

// ViolationKind names a kind of problem the runner's oracle reports.
type ViolationKind string

// The violations a step may expect.
const (
	// NotConverged: a waitConverged barrier timed out.
	NotConverged ViolationKind = "NotConverged"
	// MissingPod: an eligible node has no daemon pod.
	MissingPod ViolationKind = "MissingPod"
	// UnexpectedPod: a node that must not run the DaemonSet runs its pod.
	UnexpectedPod ViolationKind = "UnexpectedPod"
	// DuplicatePod: a node runs more than one pod of the DaemonSet.
	DuplicatePod ViolationKind = "DuplicatePod"
	// MaxUnavailableExceeded: a rollout took more pods down than allowed.
	MaxUnavailableExceeded ViolationKind = "MaxUnavailableExceeded"
	// MaxSurgeExceeded: a rollout ran more surge pods than allowed.
	MaxSurgeExceeded ViolationKind = "MaxSurgeExceeded"
	// StaleRevision: a pod of an old revision was created well after the
	// template changed.
	StaleRevision ViolationKind = "StaleRevision"
	// StatusMismatch: the DaemonSet status disagrees with the oracle.
	StatusMismatch ViolationKind = "StatusMismatch"
	// StepFailed: the step's own API calls failed.
	StepFailed ViolationKind = "StepFailed"
	// UnrequestedDisruption: a healthy pod of a must-run node was deleted
	// while nothing asked for it.
	UnrequestedDisruption ViolationKind = "UnrequestedDisruption"
	// RolloutStalled: a rollout with room in its budget made no progress.
	RolloutStalled ViolationKind = "RolloutStalled"
	// HotLoop: while a fault refused its writes, the controller sent more
	// API calls per minute than the fault step allows.
	HotLoop ViolationKind = "HotLoop"
)

// ViolationKinds lists every violation kind.
func ViolationKinds() []ViolationKind {
	return []ViolationKind{NotConverged, MissingPod, UnexpectedPod, DuplicatePod,
		MaxUnavailableExceeded, MaxSurgeExceeded, StaleRevision, StatusMismatch, StepFailed,
		UnrequestedDisruption, RolloutStalled, HotLoop}
}

// Expectation is a violation a step is meant to cause. It covers the time
// from the start of its step to the end of the next waitConverged step in
// the same step list (the end of the scenario when there is none). An
// expected violation does not fail the run; one that does not happen does,
// unless Optional is set.
type Expectation struct {
	Violation ViolationKind `json:"violation"`
	// DaemonSet limits the expectation to one DaemonSet.
	DaemonSet string `json:"daemonSet,omitempty"`
	Optional  bool   `json:"optional,omitempty"`
}
