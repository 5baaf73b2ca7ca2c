package bench

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/bench/oracle"
)

// A journal records, in order and with their times, every input that
// reached a run's oracle.Checker through the Core, so that the verdict can be
// replayed without a cluster (Replay). It is JSON Lines, gzip-compressed: a
// header (JournalHeader), then one journalLine per input, the last a finish.
//
// Barriers are not recorded: AddBarrier and the barrier checks only read the
// World and write the barriers' own state, never an episode, the clock or
// the World, so they change no violation (see oracle/barrier.go).
//
// Objects are trimmed to the fields the oracle reads (trimNode, trimPod,
// trimDaemonSet). API timestamps keep whole seconds, which is all the API
// server stores.

// JournalFormat names the format in every header.
const JournalFormat = "dsbench-oracle-journal"

// JournalVersion is the format's version; Replay refuses newer ones.
const JournalVersion = 1

// JournalHeader is a journal's first line.
type JournalHeader struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Scenario is the scenario's name; Variant what ran: "correct" or a
	// broken variant of our controller (make mutants), else the controller.
	Scenario   string `json:"scenario"`
	Variant    string `json:"variant"`
	Controller string `json:"controller,omitempty"`
	// Origin is "live" for a run against a cluster, else what made it.
	Origin string `json:"origin,omitempty"`
	Nodes  int    `json:"nodes,omitempty"`
	// Start is the time of the first input; every line's t counts from it.
	Start time.Time `json:"start"`
	// Oracle is the Checker's configuration (durations in nanoseconds).
	Oracle oracle.Config `json:"oracle"`
	// Violations are what the live oracle reported at Finish, in its order.
	Violations []JournalViolation `json:"violations"`
}

// JournalViolation is one violation as a journal's header keeps it.
type JournalViolation struct {
	Kind      oracle.Kind `json:"kind"`
	DaemonSet string      `json:"daemonSet"`
	Node      string      `json:"node,omitempty"`
	Pod       string      `json:"pod,omitempty"`
	// StartMs is the violation's start in milliseconds after the header's
	// Start, truncated.
	StartMs int64 `json:"startMs"`
	// Expected: the scenario declared it (the Core's windows, which the
	// journal does not replay).
	Expected bool `json:"expected,omitempty"`
}

// The operations of a journal line, one per Checker input.
const (
	opApply             = "apply"              // Checker.Apply: kind and one of node, pod, daemonSet
	opAdvance           = "advance"            // Checker.Advance(t)
	opRequestDeletion   = "request-deletion"   // Checker.RequestDeletion(podKey)
	opControllerStopped = "controller-stopped" // Checker.ControllerStopped()
	opControllerStarted = "controller-started" // Checker.ControllerStarted(t)
	opFinish            = "finish"             // Checker.Finish(t); the last line
)

// journalLine is one input. T is nanoseconds after the header's Start; the
// inputs that take no time (request-deletion, controller-stopped) have none.
type journalLine struct {
	T         *int64            `json:"t,omitempty"`
	Op        string            `json:"op"`
	Kind      oracle.EventKind  `json:"kind,omitempty"`
	Node      *corev1.Node      `json:"node,omitempty"`
	Pod       *corev1.Pod       `json:"pod,omitempty"`
	DaemonSet *appsv1.DaemonSet `json:"daemonSet,omitempty"`
	// Hash is the revision hash the live oracle computed for the
	// DaemonSet: Replay checks that trimming kept the whole template.
	Hash   string `json:"hash,omitempty"`
	PodKey string `json:"podKey,omitempty"`
	// Relisted is the event's: it came from a relist, not the watch.
	Relisted bool `json:"relisted,omitempty"`
}

// violationOffset is how a header states a start: milliseconds after start.
func violationOffset(t, start time.Time) int64 { return t.Sub(start).Milliseconds() }

// JournalRecorder writes a journal while a run plays. The inputs go to a
// temporary file beside Path as they come, and Close puts the header, which
// holds the run's violations, in front (two gzip members, which gzip
// readers read as one stream). Feed it from the Core's goroutine. A nil
// recorder records nothing.
type JournalRecorder struct {
	path   string
	header JournalHeader
	body   *os.File
	buf    *bufio.Writer
	zw     *gzip.Writer
	enc    *json.Encoder
	begun  bool // header.Start is set
	ended  bool // finish was recorded
	err    error
}

// NewJournalRecorder starts a journal that Close writes to path, with h as
// its header (Format, Version, Start and Violations are filled in).
func NewJournalRecorder(path string, h JournalHeader) (*JournalRecorder, error) {
	body, err := os.CreateTemp(filepath.Dir(path), ".journal-*")
	if err != nil {
		return nil, fmt.Errorf("starting journal %s: %w", path, err)
	}
	h.Format, h.Version = JournalFormat, JournalVersion
	r := &JournalRecorder{path: path, header: h, body: body, buf: bufio.NewWriterSize(body, 64<<10)}
	r.zw = gzip.NewWriter(r.buf)
	r.enc = json.NewEncoder(r.zw)
	return r, nil
}

func (r *JournalRecorder) write(l journalLine, t time.Time, timed bool) {
	if r.err != nil || r.ended {
		return
	}
	if timed {
		if !r.begun {
			r.header.Start, r.begun = t, true
		}
		off := int64(t.Sub(r.header.Start))
		l.T = &off
	}
	if err := r.enc.Encode(l); err != nil {
		r.err = fmt.Errorf("writing journal %s: %w", r.path, err)
	}
}

func (r *JournalRecorder) apply(ev oracle.Event) {
	if r == nil {
		return
	}
	l := journalLine{Op: opApply, Kind: ev.Kind, Relisted: ev.Relisted}
	switch o := ev.Object.(type) {
	case *corev1.Node:
		l.Node = trimNode(o)
	case *corev1.Pod:
		l.Pod = trimPod(o)
	case *appsv1.DaemonSet:
		l.DaemonSet, l.Hash = trimDaemonSet(o), oracle.CurrentHash(o)
	default:
		// The Watcher sends nothing else; the Checker would reject it.
		return
	}
	r.write(l, ev.Time, true)
}

func (r *JournalRecorder) advance(t time.Time) {
	if r != nil {
		r.write(journalLine{Op: opAdvance}, t, true)
	}
}

func (r *JournalRecorder) requestDeletion(podKey string) {
	if r != nil {
		r.write(journalLine{Op: opRequestDeletion, PodKey: podKey}, time.Time{}, false)
	}
}

func (r *JournalRecorder) controllerStopped() {
	if r != nil {
		r.write(journalLine{Op: opControllerStopped}, time.Time{}, false)
	}
}

func (r *JournalRecorder) controllerStarted(t time.Time) {
	if r != nil {
		r.write(journalLine{Op: opControllerStarted}, t, true)
	}
}

// finish records Checker.Finish(t) and what it reported.
func (r *JournalRecorder) finish(t time.Time, vs []oracle.Violation, expected []bool) {
	if r == nil {
		return
	}
	r.write(journalLine{Op: opFinish}, t, true)
	r.ended = true
	r.header.Violations = make([]JournalViolation, 0, len(vs))
	for i, v := range vs {
		r.header.Violations = append(r.header.Violations, JournalViolation{Kind: v.Kind, DaemonSet: v.DaemonSet, Node: v.Node, Pod: v.Pod,
			StartMs: violationOffset(v.Start, r.header.Start), Expected: expected[i]})
	}
}

// Close writes the journal to its path. A run that ended before the
// oracle's Finish (it failed during setup) leaves no journal: it has no
// verdict to replay.
func (r *JournalRecorder) Close() error {
	if r == nil {
		return nil
	}
	defer os.Remove(r.body.Name())
	err := errors.Join(r.err, r.zw.Close(), r.buf.Flush())
	if err := errors.Join(err, r.body.Close()); err != nil {
		return fmt.Errorf("writing journal %s: %w", r.path, err)
	}
	if !r.ended {
		return nil
	}
	if err := r.assemble(); err != nil {
		return fmt.Errorf("writing journal %s: %w", r.path, err)
	}
	return nil
}

// assemble writes the header member, then the body member, to a temporary
// file and renames it to the path.
func (r *JournalRecorder) assemble() error {
	out, err := os.CreateTemp(filepath.Dir(r.path), ".journal-*")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name()) // after the rename, a no-op
	zw := gzip.NewWriter(out)
	err = json.NewEncoder(zw).Encode(r.header)
	err = errors.Join(err, zw.Close())
	body, openErr := os.Open(r.body.Name())
	if openErr == nil {
		_, copyErr := io.Copy(out, body)
		err = errors.Join(err, copyErr, body.Close())
	}
	if err := errors.Join(err, openErr, out.Close()); err != nil {
		return err
	}
	return os.Rename(out.Name(), r.path)
}

// trimNode keeps what the oracle (and the Core) read of a node: identity,
// resourceVersion and timestamps, labels, taints, schedulability and the
// Ready condition's status.
func trimNode(n *corev1.Node) *corev1.Node {
	out := &corev1.Node{ObjectMeta: trimMeta(n.ObjectMeta)}
	out.Labels = n.Labels
	out.Spec.Taints, out.Spec.Unschedulable = n.Spec.Taints, n.Spec.Unschedulable
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out
}

// trimPod keeps what the oracle (and the Core) read of a pod: identity,
// resourceVersion and timestamps, labels, owner references, its target node
// (nodeName, or the pinning node affinity), phase and the Ready condition.
func trimPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: trimMeta(p.ObjectMeta)}
	out.Labels, out.OwnerReferences = p.Labels, p.OwnerReferences
	out.Spec.NodeName = p.Spec.NodeName
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		out.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution}}
	}
	out.Status.Phase = p.Status.Phase
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime}}
		}
	}
	return out
}

// trimDaemonSet keeps the whole spec (the revision hash covers the whole
// template), the status but its conditions, generation and the template
// generation annotation, the only one the oracle reads.
func trimDaemonSet(ds *appsv1.DaemonSet) *appsv1.DaemonSet {
	out := &appsv1.DaemonSet{ObjectMeta: trimMeta(ds.ObjectMeta), Spec: ds.Spec, Status: ds.Status}
	out.Generation = ds.Generation
	out.Status.Conditions = nil
	if v, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]; ok {
		out.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: v}
	}
	return out
}

func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp}
}
