package reports

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// SchemaVersion identifies the layout of report.json. Bump it (v2) on any change
// that an old reader would misread; adding optional fields keeps v1.
const SchemaVersion = "dsbench.report/v1"

// Controller names used in Run.Controller and Params.Controllers.
const (
	ControllerOurs = "ours"
	// ControllerOursDirect is our controller binding its pods itself
	// (--bind-mode=direct) instead of leaving them to kube-scheduler: a
	// column beside ours, informational (the gate judges ours alone).
	ControllerOursDirect = "ours-direct"
	ControllerUpstream   = "upstream"
	// ControllerFloor is the harness doing the controller's work itself: a
	// lower bound for the cluster, not a competitor (see README.md).
	ControllerFloor = "floor"
	// ControllerExternal is a DaemonSet controller that was already running
	// against the cluster (--kubeconfig), which the harness did not start:
	// its invariants and times are measured, its CPU, memory and API
	// requests are not (zero and absent).
	ControllerExternal = "external"
)

// Run outcomes.
const (
	OutcomeOK     = "ok"
	OutcomeFailed = "failed"
)

// ErrSchemaVersion is returned by Read and ReadBaseline for a file written
// with another schema version; callers may branch on it to explain the mismatch.
var ErrSchemaVersion = errors.New("unsupported schema version")

// Report is the content of report.json: everything measured in one invocation
// of the runner. Every other output (report.md, report.html, bench.txt) is
// rendered from it alone. Field meanings are documented in README.md.
type Report struct {
	SchemaVersion string    `json:"schemaVersion"`
	GeneratedAt   time.Time `json:"generatedAt"`
	Params        Params    `json:"params"`
	Versions      Versions  `json:"versions"`
	Machine       Machine   `json:"machine"`
	Runs          []Run     `json:"runs"`
	// Warmups are runs played before the measured ones, on a cluster whose
	// nodes had just been created: the first run after that is slower for
	// whichever controller plays it (at 5000 nodes, 197 s to create 15,000
	// pods against 127 s two runs later). Their invariants are judged as
	// any run's; they are left out of the statistics.
	Warmups []Run `json:"warmups,omitempty"`
}

// Params are the run parameters the runner was invoked with.
type Params struct {
	Scenarios   []string `json:"scenarios"`
	Nodes       int      `json:"nodes"`
	Repetitions int      `json:"repetitions"`
	Seed        int64    `json:"seed"`
	// Interleaved is true when repetitions of the controllers alternate
	// (ours, upstream, ours, ...) so that drift hits both sides alike.
	Interleaved bool `json:"interleaved"`
	// OrderSeed drew the order of each pair of interleaved repetitions
	// (0: the controllers as listed, then reversed); the runs are listed in
	// the order played.
	OrderSeed          uint64             `json:"orderSeed,omitempty"`
	StepTimeoutSeconds float64            `json:"stepTimeoutSeconds,omitempty"`
	Controllers        []ControllerParams `json:"controllers"`
	// Harness are the client settings of the harness's own watches and writes.
	Harness ClientParams `json:"harness"`
	// PerScenario is what each scenario ran with, resolved: never 0 nodes
	// or repetitions, whatever the flags left to the scenario.
	PerScenario []ScenarioParams `json:"perScenario,omitempty"`
	// Kwok is the simulator's setup (absent against a cluster not ours).
	Kwok *KwokParams `json:"kwok,omitempty"`
}

// ScenarioParams is one scenario as it ran.
type ScenarioParams struct {
	Name        string  `json:"name"`
	Source      string  `json:"source,omitempty"`
	Seed        int64   `json:"seed"`
	Nodes       int     `json:"nodes"`
	Repetitions int     `json:"repetitions"`
	HoldSeconds float64 `json:"holdSeconds"`
	// Pods are kwok's pod stages for it: start delay and jitter, delete
	// delay, and the images that fail or never become Ready.
	Pods PodStages `json:"pods"`
	// Oracle is what the oracle allowed: the graces that remain (latency a
	// kind may last before it is reported; never an excuse for a wrong
	// action, which counts at once) and the lag bounds of its causal rules.
	Oracle *OracleParams `json:"oracle,omitempty"`
	// APIProxy: the controller reached the API server through the harness's
	// proxy for the whole run, as it does in a scenario with a slowAPI or
	// writeTimeouts fault (one more hop, HTTP/1.1 on loopback instead of
	// HTTP/2).
	APIProxy bool `json:"apiProxy,omitempty"`
}

// OracleParams are the oracle's tolerances for one scenario.
type OracleParams struct {
	// GraceSeconds per violation kind; kinds not listed have none.
	GraceSeconds          map[string]float64 `json:"graceSeconds"`
	CacheLagSeconds       float64            `json:"cacheLagSeconds"`
	LimitLagSeconds       float64            `json:"limitLagSeconds"`
	StaleCreateLagSeconds float64            `json:"staleCreateLagSeconds"`
	StallAfterSeconds     float64            `json:"stallAfterSeconds"`
	StatusLagSeconds      float64            `json:"statusLagSeconds"`
}

// PodStages are kwok's pod-stage settings of a scenario.
type PodStages struct {
	ReadyDelaySeconds  float64  `json:"readyDelaySeconds"`
	ReadyJitterSeconds float64  `json:"readyJitterSeconds"`
	DeleteDelaySeconds float64  `json:"deleteDelaySeconds"`
	FailImages         []string `json:"failImages,omitempty"`
	NeverReadyImages   []string `json:"neverReadyImages,omitempty"`
}

// KwokParams is the simulator's setup.
type KwokParams struct {
	Cluster     string `json:"cluster"`
	Parallelism int    `json:"parallelism"` // kwok controller workers per stage kind
	// LogLevel is kwok's --v when it was set ("" for kwok's INFO); DEBUG
	// costs kwok CPU, so times from such a run are not comparable.
	LogLevel string `json:"logLevel,omitempty"`
	// Watch is the kwok controller: "relist" (v0.8.0 as released) or
	// "resume" (patched to resume its watches); "" in reports older than
	// the choice, which ran "relist".
	Watch string `json:"watch,omitempty"`
}

// ControllerParams are the settings one controller under test ran with.
type ControllerParams struct {
	Name    string  `json:"name"` // ControllerOurs, ControllerOursDirect, ControllerUpstream, ControllerFloor or ControllerExternal
	Binary  string  `json:"binary,omitempty"`
	QPS     float64 `json:"qps"`
	Burst   int     `json:"burst"`
	Workers int     `json:"workers"` // concurrent DaemonSet syncs
	// BurstReplicas caps pod creations per sync (upstream's burstReplicas).
	BurstReplicas int `json:"burstReplicas,omitempty"`
	// Args are its full command line (ports and kubeconfig as placeholders).
	Args []string `json:"args,omitempty"`
	// Env is what its environment had on top of the harness's (NAME=VALUE),
	// such as GOGC or GOMEMLIMIT.
	Env []string `json:"env,omitempty"`
	// BinarySHA256 identifies the binary exactly.
	BinarySHA256 string `json:"binarySHA256,omitempty"`
}

// ClientParams are client-side rate limits.
type ClientParams struct {
	QPS   float64 `json:"qps"`
	Burst int     `json:"burst"`
}

// Versions identify what was measured.
type Versions struct {
	Go         string `json:"go"`
	Kubernetes string `json:"kubernetes"`
	Kwok       string `json:"kwok"`
	GitCommit  string `json:"gitCommit"`
	GitDirty   bool   `json:"gitDirty"`
}

// Machine describes the host the runs executed on.
type Machine struct {
	Cores       int    `json:"cores"`
	CPUModel    string `json:"cpuModel,omitempty"`
	MemoryBytes int64  `json:"memoryBytes"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	Kernel      string `json:"kernel,omitempty"`
}

// Run is one repetition of one scenario against one controller.
type Run struct {
	Scenario   string    `json:"scenario"`
	Controller string    `json:"controller"`
	Repetition int       `json:"repetition"` // 0-based
	Nodes      int       `json:"nodes"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Outcome    string    `json:"outcome"`
	Error      string    `json:"error,omitempty"`
	// ControllerArgs are this run's own settings where they differ from run
	// to run (the floor's pacing, chosen per repetition).
	ControllerArgs []string `json:"controllerArgs,omitempty"`

	Steps     []Step        `json:"steps"`
	Rollouts  []Rollout     `json:"rollouts,omitempty"`
	NodeJoins []NodeLatency `json:"nodeJoins,omitempty"`
	// NodeEligible: per joined node, seconds from its Added event to its
	// becoming eligible (Ready, not-ready taint lifted): the cluster's share
	// of a join, which NodeJoins leaves out.
	NodeEligible []NodeLatency `json:"nodeEligible,omitempty"`
	// NodeJoinsEnded counts joins whose node or DaemonSet went away before
	// the node's pod was Ready: nothing left to measure.
	NodeJoinsEnded int `json:"nodeJoinsEnded,omitempty"`
	// NodeJoinsUnmeasured are the joins the run ended without measuring
	// while node and DaemonSet were still there: the join latencies leave
	// them out, so the report makes them a finding.
	NodeJoinsUnmeasured []UnmeasuredJoin `json:"nodeJoinsUnmeasured,omitempty"`
	// PodGCWaits: per deleted node, seconds from its deletion until the pod
	// garbage collector had removed the bound pods left on it. The cluster's
	// share of a convergence that waits for them, not the controller's.
	PodGCWaits []NodeLatency `json:"podGCWaits,omitempty"`
	// Repairs split the return of each node's pod that a pods step
	// deleted into the cluster's and the controller's shares, as
	// Rollout.Replacements do for a rollout.
	Repairs      []Repair       `json:"repairs,omitempty"`
	Violations   []Violation    `json:"violations,omitempty"`
	Availability []Availability `json:"availability,omitempty"`
	// APIRequests counts the requests the controller under test sent, by
	// lower-case verb (get, list, watch, create, update, patch, delete).
	APIRequests map[string]int64 `json:"apiRequests"`
	// PodsCreated counts the DaemonSet pods that appeared during the run
	// (from its first step on, as the harness's watch saw them): what API
	// requests and CPU are given per pod against.
	PodsCreated int64      `json:"podsCreated,omitempty"`
	Resources   Resources  `json:"resources"`
	Coverage    Coverage   `json:"coverage"`
	Timelines   []Timeline `json:"timelines,omitempty"`
	// SimulatorStalls are pods kwok left Pending on a Ready node past the
	// harness's bound; the harness nudged each (see bench/stalls.go).
	SimulatorStalls []SimulatorStall `json:"simulatorStalls,omitempty"`
	// ClusterRestarts are the cluster's own components (not the controller
	// under test) that exited during the run and that the harness started
	// again, as a supervisor would.
	ClusterRestarts []ClusterRestart `json:"clusterRestarts,omitempty"`
	// Faults are the faults the scenario's fault steps injected, judged.
	Faults []Fault `json:"faults,omitempty"`
	// Harness is the harness's own health in this run: how far its oracle
	// trailed the watch events. Absent in reports written before it existed.
	Harness *Harness `json:"harness,omitempty"`
	// Extra carries further scalar measurements (for example kwok's own
	// pod throughput); they are summarized and compared like the built-in ones.
	Extra []ExtraMetric `json:"extra,omitempty"`
	// Profiles are the pprof profiles a profiled run took (--profile);
	// absent otherwise. Its times include the profilers' sampling, and its
	// controller's CPU the wait for the last window (at most 10 s idle).
	Profiles *Profiles `json:"profiles,omitempty"`
}

// Profiles are a run's pprof profiles: every process's CPU in back-to-back
// windows (<run>-<process>-cpu-NNN.pb.gz; `go tool pprof` merges the files
// it is given) and its heap when the steps began and ended
// (-heap-start, -heap-end; alloc_space of end minus start is what the run
// allocated), the harness's CPU in one file.
type Profiles struct {
	// Dir holds the files, relative to the report's folder when it is
	// inside it.
	Dir   string   `json:"dir"`
	Files []string `json:"files,omitempty"`
	// Errors are the processes that could not be profiled, or not every
	// time, with the first reason (a restarting process, a cluster that does
	// not serve its profiles).
	Errors []string `json:"errors,omitempty"`
}

// ClusterRestart is one component of the cluster found dead during a run.
type ClusterRestart struct {
	Component string `json:"component"`
	// At is when the harness found it gone (within a second of its exit).
	At time.Time `json:"at"`
	// Error is why starting it again failed; "" when it runs again.
	Error string `json:"error,omitempty"`
}

// Fault is one fault step as it happened.
type Fault struct {
	Step  string    `json:"step"`
	Kind  string    `json:"kind"` // the scenario's fault kind, e.g. "killStorm"
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Injected counts the blows: kills of a storm, 1 for a held quota.
	Injected int `json:"injected"`
	// APIRequests the controller sent between Start and End; -1 when they
	// could not be read.
	APIRequests    int64   `json:"apiRequests"`
	CallsPerMinute float64 `json:"callsPerMinute"`
	// MaxCallsPerMinute is the step's bound (0: none).
	MaxCallsPerMinute float64 `json:"maxCallsPerMinute,omitempty"`
	// StatusError is where the DaemonSets' status still disagreed with the
	// oracle at the end of a fault that refused creates ("" when it agreed).
	StatusError string `json:"statusError,omitempty"`
	// WriteLatencySeconds and ReadLatencySeconds are what a slowAPI fault
	// added to each of the controller's writes and reads; DelayedRequests
	// counts the requests it held back.
	WriteLatencySeconds float64 `json:"writeLatencySeconds,omitempty"`
	ReadLatencySeconds  float64 `json:"readLatencySeconds,omitempty"`
	DelayedRequests     int64   `json:"delayedRequests,omitempty"`
	// A writeTimeouts fault counts in Injected the pod writes it answered
	// Timeout; LandedWrites of them were applied LandAfterSeconds after
	// that answer, LandFailures were not (refused when they arrived);
	// LandFailuresBy splits those by method and why ("DELETE 404",
	// "POST no answer", "POST not sent").
	LandAfterSeconds float64          `json:"landAfterSeconds,omitempty"`
	LandedWrites     int64            `json:"landedWrites,omitempty"`
	LandFailures     int64            `json:"landFailures,omitempty"`
	LandFailuresBy   map[string]int64 `json:"landFailuresBy,omitempty"`
	// DaemonSet is the one conflicting writers wrote (namespace/name).
	DaemonSet string `json:"daemonSet,omitempty"`
	// StatusWrites counts their bogus status writes (Injected counts their
	// template writes).
	StatusWrites int `json:"statusWrites,omitempty"`
	// LastValue is what their last template write set the writers'
	// variable to, and LastGeneration the generation it made: the template
	// the DaemonSet must converge on.
	LastValue      string `json:"lastValue,omitempty"`
	LastGeneration int64  `json:"lastGeneration,omitempty"`
	// LostUpdate says how the DaemonSet lost that template once the writers
	// stopped ("" when it kept it); the run has a StepFailed violation then.
	LostUpdate string `json:"lostUpdate,omitempty"`
	// Recovered: a barrier converged after End. RecoverySeconds runs from
	// End to the first such convergence (0 when every barrier had
	// converged by End).
	Recovered       bool    `json:"recovered"`
	RecoverySeconds float64 `json:"recoverySeconds"`
	// Violations counts the unexpected violations that started between
	// Start and the recovery (the end of the run when it never came).
	Violations int `json:"violations"`
}

// Survived says the fault left nothing wrong behind: the DaemonSets
// converged afterwards, no unexpected violation began meanwhile, no update
// was lost and the status stayed right.
func (f Fault) Survived() bool {
	return f.Recovered && f.Violations == 0 && f.LostUpdate == "" && f.StatusError == ""
}

// Step is one scenario step and how long the cluster took to converge after it.
type Step struct {
	Name  string    `json:"name"`
	Kind  string    `json:"kind"`  // scenario step kind, e.g. "create", "update", "add-nodes", "taint"
	Start time.Time `json:"start"` // when the harness applied the step; also the step marker
	// Converged is false when the step timed out; Seconds then is the time waited.
	Converged bool    `json:"converged"`
	Seconds   float64 `json:"seconds"`
	// PodsExistSeconds runs from Start to the first moment every node that
	// must run a pod of the step's DaemonSets had one of the current
	// template, Ready or not: for a create, the controller's own work,
	// without the scheduler's and kwok's share of readiness. Set only for
	// a converged create or update step.
	PodsExistSeconds *float64 `json:"podsExistSeconds,omitempty"`
	// CompletingEvent is the observation that made the oracle declare convergence.
	CompletingEvent *Event `json:"completingEvent,omitempty"`
	// SkippedNodes were chosen by the step but deleted by a concurrent leave
	// or replace before the step reached them.
	SkippedNodes []string `json:"skippedNodes,omitempty"`
	// ExpectedNotConverged: the step timed out inside a window where the
	// scenario declared NotConverged (a rollout that is meant to stall).
	ExpectedNotConverged bool `json:"expectedNotConverged,omitempty"`
}

// Interrupted says whether the rollout ended without converging because
// something else ended it first (a newer template, a rollback, a strategy
// change or a delete), which is no failure of the controller.
func (ro Rollout) Interrupted() bool {
	return !ro.Complete && ro.Outcome != "" && ro.Outcome != "converged"
}

// Event is one observation by the harness.
type Event struct {
	Time   time.Time `json:"time"`
	Reason string    `json:"reason"` // e.g. "PodReady", "PodDeleted", "NodeReady"
	Object string    `json:"object"` // "namespace/name", or the node name
	Node   string    `json:"node,omitempty"`
}

// Rollout is the end-to-end latency of one DaemonSet update and its per-node latencies.
type Rollout struct {
	Step      string `json:"step"`
	DaemonSet string `json:"daemonSet"` // namespace/name
	Complete  bool   `json:"complete"`
	// Outcome is how the rollout ended: "converged", "superseded" (another
	// template or a rollback came first), "abandoned" (the strategy stopped
	// being RollingUpdate) or "deleted"; empty when it was still going at
	// the end of the run.
	Outcome string `json:"outcome,omitempty"`
	// Seconds: update written → every node that must run the pod runs a Ready
	// pod of the new revision.
	Seconds float64 `json:"seconds"`
	// Nodes: update written → that node runs a Ready pod of the new revision.
	Nodes []NodeLatency `json:"nodes,omitempty"`
	// Replacements split the latency of each node whose old pod was deleted
	// and gone before its new pod was created (a replacement without surge)
	// into the cluster's and the controller's shares.
	Replacements []Replacement `json:"replacements,omitempty"`
}

// Replacement is one node's pod replaced in a rollout, in three parts:
// Deleting (old pod terminating → gone: kwok or the kubelet finalizing),
// Recreating (gone → the new pod seen: the controller) and Starting (new pod
// seen → available: the scheduler, kwok or the kubelet, readiness and
// minReadySeconds).
type Replacement struct {
	Node       string  `json:"node"`
	Deleting   float64 `json:"deletingSeconds"`
	Recreating float64 `json:"recreatingSeconds"`
	Starting   float64 `json:"startingSeconds"`
}

// Repair is one node's pod deleted by a pods step (Step, its key as the
// step metrics name it) and replaced: Deleting runs from the deletion to
// the pod's end, Recreating to an active pod seen on the node again (the
// controller), Starting to that pod available.
type Repair struct {
	Step string `json:"step"`
	Replacement
}

// NodeLatency is a latency observed for one node.
type NodeLatency struct {
	Node    string  `json:"node"`
	Seconds float64 `json:"seconds"`
	// Start is when the latency began (for a node join, when the node
	// became eligible); zero where it was not recorded.
	Start time.Time `json:"start,omitzero"`
}

// UnmeasuredJoin is a joined node without a latency: what the oracle saw
// of it by the run's end.
type UnmeasuredJoin struct {
	DaemonSet string `json:"daemonSet"`
	Node      string `json:"node"`
	// Eligible: the node became must-run for the DaemonSet. PodCreated: a
	// pod of the DaemonSet was seen on it. PodReady: one was Ready.
	Eligible   bool `json:"eligible"`
	PodCreated bool `json:"podCreated"`
	PodReady   bool `json:"podReady"`
}

// Violation is an interval during which an invariant checked by the oracle did not hold.
type Violation struct {
	DaemonSet string    `json:"daemonSet"`
	Node      string    `json:"node,omitempty"`
	Kind      string    `json:"kind"` // e.g. "missing-pod", "extra-pod", "duplicate-pod", "over-unavailable"
	Start     time.Time `json:"start"`
	Seconds   float64   `json:"seconds"`
	// Expected violations are ones the scenario provokes on purpose (and declares).
	Expected bool   `json:"expected"`
	Detail   string `json:"detail,omitempty"`
}

// Availability compares the peak number of unavailable daemon pods during a
// rollout with what the update strategy allowed.
type Availability struct {
	DaemonSet          string `json:"daemonSet"`
	Step               string `json:"step,omitempty"`
	PeakUnavailable    int    `json:"peakUnavailable"`
	AllowedUnavailable int    `json:"allowedUnavailable"`
	// ClusterMade is how many of the peak's nodes the cluster disrupted
	// (a pod failed or turned unready, the harness deleted it), not the
	// controller; AllowedUnavailable then includes the level the oracle
	// excused for them.
	ClusterMade int `json:"clusterMade,omitempty"`
	// Expected: the scenario itself took pods down during this rollout and
	// declared that more than the allowance may be unavailable.
	Expected bool `json:"expected,omitempty"`
}

// Resources used by the controller process under test.
type Resources struct {
	CPUSeconds   float64 `json:"cpuSeconds"`
	PeakRSSBytes int64   `json:"peakRSSBytes"`
}

// Coverage says how complete the harness's observations were; a report with
// gaps is not trusted (see the invariants in README.md).
type Coverage struct {
	PodsExpected     int        `json:"podsExpected"`
	PodsObserved     int        `json:"podsObserved"`
	ObservedFraction float64    `json:"observedFraction"` // PodsObserved / PodsExpected, 1 when none expected
	NodeReadyFlaps   int        `json:"nodeReadyFlaps"`
	WatchGaps        []WatchGap `json:"watchGaps,omitempty"`
}

// SimulatorStall is a pod the simulator did not start, or did not finalize,
// in time.
type SimulatorStall struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
	// Terminating: the pod waited to be finalized after its deletion, not
	// to start.
	Terminating bool      `json:"terminating,omitempty"`
	Start       time.Time `json:"start"`   // bound and Pending (or terminating) since
	Seconds     float64   `json:"seconds"` // until it started or went, or the run ended
	Nudged      bool      `json:"nudged"`
	Open        bool      `json:"open,omitempty"` // still waiting when the run ended
}

// Harness measures the harness itself. Each watch event is stamped once,
// when it arrives; Lag is from that stamp to the oracle applying it.
type Harness struct {
	Events int `json:"events"`
	// Lag percentiles and maximum, in seconds (nearest rank).
	LagP50 float64 `json:"lagP50"`
	LagP99 float64 `json:"lagP99"`
	LagMax float64 `json:"lagMax"`
	// Clamped counts events older than the oracle's clock when applied,
	// judged at the oracle's time instead of their own.
	Clamped int `json:"clamped"`
	// Rejected counts events the oracle could not apply (never expected).
	Rejected int `json:"rejected,omitempty"`
	// Retracted counts over-unavailability or over-surge episodes the
	// oracle withdrew because the node change that ended them came first in
	// etcd's order (the streams delivered it after the pod change).
	Retracted int `json:"retracted,omitempty"`
	// Relists counts the watches that had to start over (see WatchGaps).
	Relists int `json:"relists"`
	// CPUSeconds is the harness process's CPU over the run (getrusage).
	CPUSeconds float64 `json:"cpuSeconds"`
	// Limited marks a run whose oracle trailed the events by more than
	// HarnessLagLimit at p99: its latencies include the harness's own delay.
	Limited bool `json:"limited"`
}

// HarnessLagLimit is the p99 lag above which a run is harness-limited.
const HarnessLagLimit = 0.1

// WatchGap is an interval during which a watch was down, so events may be missing.
type WatchGap struct {
	Resource string    `json:"resource"` // e.g. "pods", "nodes"
	Start    time.Time `json:"start"`
	Seconds  float64   `json:"seconds"`
	Reason   string    `json:"reason,omitempty"`
	// DuringFault names the fault step that broke the watches (an API
	// server restart): the gap is expected, and still reported.
	DuringFault string `json:"duringFault,omitempty"`
}

// Timeline is the harness's own count of a DaemonSet's pods over time
// (independent of the DaemonSet's status). Step markers are Run.Steps[].Start.
type Timeline struct {
	DaemonSet string          `json:"daemonSet"`
	Points    []TimelinePoint `json:"points"`
}

// TimelinePoint: Desired = nodes the oracle says must run the pod; Current =
// nodes running (any revision); Ready = nodes with a Ready pod; Updated = nodes
// with a pod of the current revision.
type TimelinePoint struct {
	Time    time.Time `json:"time"`
	Desired int       `json:"desired"`
	Current int       `json:"current"`
	Ready   int       `json:"ready"`
	Updated int       `json:"updated"`
}

// MetricKwokPodWatchReplays is the extra metric counting the times during a
// run that kube-apiserver closed kwok's pod watch as unresponsive. kwok
// v0.8.0 watches again from resourceVersion 0, so each close has it work
// through every pod again before it sees what changed: pods start late for
// a reason that is the simulator's (CheckKwokReplay).
const MetricKwokPodWatchReplays = "kwok-pod-watch-replays"

// MetricKwokPodWatchCloses is the same count with the patched kwok
// (--kwok-watch=resume), which resumes its watch from where it stopped: a
// close replays nothing, so it is a record, not a warning.
const MetricKwokPodWatchCloses = "kwok-pod-watch-closes"

// MetricAPIServerPodWatchesClosed and MetricAPIServerNodeWatchesClosed are
// the extra metrics counting the watches of pods and of nodes (any
// client's) that kube-apiserver closed as unresponsive during a run.
const (
	MetricAPIServerPodWatchesClosed  = "apiserver-pod-watches-closed"
	MetricAPIServerNodeWatchesClosed = "apiserver-node-watches-closed"
)

// ExtraMetric is an additional scalar measurement of a run.
type ExtraMetric struct {
	Name           string  `json:"name"`
	Unit           string  `json:"unit,omitempty"`
	Value          float64 `json:"value"`
	HigherIsBetter bool    `json:"higherIsBetter,omitempty"`
}

// OK reports whether the run completed and its measurements can be used.
func (r *Run) OK() bool { return r.Outcome == OutcomeOK }

// ID names the run in messages: scenario/controller#repetition.
func (r *Run) ID() string {
	return fmt.Sprintf("%s/%s#%d", r.Scenario, r.Controller, r.Repetition)
}

// Validate checks the structural rules of the schema (enumerations, finite
// non-negative durations, required fields). It does not judge the results.
func Validate(r *Report) error {
	if r == nil {
		return errors.New("validating report: nil report")
	}
	var errs []error
	if r.SchemaVersion != SchemaVersion {
		errs = append(errs, fmt.Errorf("schemaVersion %q: %w (want %q)", r.SchemaVersion, ErrSchemaVersion, SchemaVersion))
	}
	for _, set := range []struct {
		name string
		runs []Run
	}{{"runs", r.Runs}, {"warmups", r.Warmups}} {
		for i := range set.runs {
			run := &set.runs[i]
			bad := func(format string, args ...any) {
				errs = append(errs, fmt.Errorf("%s[%d] (%s): %s", set.name, i, run.ID(), fmt.Sprintf(format, args...)))
			}
			if run.Scenario == "" {
				bad("empty scenario")
			}
			switch run.Controller {
			case ControllerOurs, ControllerOursDirect, ControllerUpstream, ControllerFloor, ControllerExternal:
			default:
				bad("controller %q is none of %q, %q, %q, %q and %q", run.Controller, ControllerOurs, ControllerOursDirect, ControllerUpstream, ControllerFloor, ControllerExternal)
			}
			if run.Repetition < 0 {
				bad("negative repetition %d", run.Repetition)
			}
			if run.NodeJoinsEnded < 0 {
				bad("negative nodeJoinsEnded %d", run.NodeJoinsEnded)
			}
			for _, j := range run.NodeJoinsUnmeasured {
				if j.Node == "" {
					bad("an unmeasured node join without a node")
				}
			}
			if run.Start.IsZero() {
				bad("zero start time")
			}
			if !run.End.IsZero() && run.End.Before(run.Start) {
				bad("end %s before start %s", run.End, run.Start)
			}
			switch run.Outcome {
			case OutcomeOK:
			case OutcomeFailed:
				if run.Error == "" {
					bad("outcome failed without error")
				}
			default:
				bad("outcome %q is neither %q nor %q", run.Outcome, OutcomeOK, OutcomeFailed)
			}
			checkSeconds := func(what string, v float64) {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					bad("%s: seconds %v is not a finite non-negative number", what, v)
				}
			}
			for _, s := range run.Steps {
				checkSeconds("step "+s.Name, s.Seconds)
			}
			checkNodes := func(what string, nodes []NodeLatency) {
				for _, n := range nodes {
					checkSeconds(what+" "+n.Node, n.Seconds)
				}
			}
			for _, ro := range run.Rollouts {
				checkSeconds("rollout "+ro.DaemonSet, ro.Seconds)
				checkNodes("rollout node", ro.Nodes)
				for _, r := range ro.Replacements {
					checkSeconds("replacement deleting "+r.Node, r.Deleting)
					checkSeconds("replacement recreating "+r.Node, r.Recreating)
					checkSeconds("replacement starting "+r.Node, r.Starting)
				}
			}
			checkNodes("node join", run.NodeJoins)
			checkNodes("node eligible", run.NodeEligible)
			checkNodes("pod GC wait", run.PodGCWaits)
			for _, v := range run.Violations {
				checkSeconds("violation "+v.Kind, v.Seconds)
			}
			for _, g := range run.Coverage.WatchGaps {
				checkSeconds("watch gap "+g.Resource, g.Seconds)
			}
			checkSeconds("cpu", run.Resources.CPUSeconds)
			if f := run.Coverage.ObservedFraction; math.IsNaN(f) || f < 0 || f > 1 {
				bad("coverage.observedFraction %v outside [0, 1]", f)
			}
			for _, r := range run.ClusterRestarts {
				if r.Component == "" {
					bad("clusterRestarts: a restart without a component")
				}
			}
			for _, e := range run.Extra {
				if e.Name == "" || math.IsNaN(e.Value) || math.IsInf(e.Value, 0) {
					bad("extra metric %q: empty name or non-finite value", e.Name)
				}
			}
		}
	}
	return errors.Join(errs...)
}
