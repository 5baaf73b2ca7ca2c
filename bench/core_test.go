package bench

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata (core scripts, scripted journals)")

// TestCoreScripts plays the scripts in testdata/core against a Core, in the
// manner of etcd raft's interaction tests. A script is a list of blocks
// separated by blank lines: a command line, optional input lines, "----",
// and the output the command must print. Lines starting with # are
// comments. Times are seconds after a fixed t0, printed as +Ns. Commands:
//
//	init daemonsets=app,... [hold=1s] [grace=10s] [stall-after=20s]
//	     [stall-lag=0s] [status-lag=0s] [stop-at-violation]
//	    a Core for a scenario with these DaemonSets (namespace default).
//	    grace is DefaultGrace's shape (the reacting kinds; never
//	    DuplicatePods or Overunavailable); the oracle otherwise runs with
//	    the runner's lags, but without RolloutStalled or StatusMismatch
//	    unless stall-lag or status-lag enables them.
//	step-start t=N name=S [expect=Kind[/ds][?],...]   (? marks optional)
//	created ds=NAME | deleted ds=NAME
//	ack t=N name=S kind=K [gen=ds:G,...] [absent=ds] [nodes-absent=n,...]
//	    [nodes-settled=n,...] [skipped=n,...]
//	events
//	    N add|update|delete node NAME [notready] [taint=key:Effect] [cordoned]
//	    N add|update|delete ds NAME [gen=G] [maxUnavailable=M]
//	    N add|update|delete pod NAME ds=D node=N [gen=G] [ready] [terminating] [failed]
//	    (each event is stamped N; arrived=M says when the Core got it;
//	    rv=R gives its resourceVersion, by default one more than the last)
//	advance t=N [queued]     one Tick; queued: events still wait
//	wait [ds=NAME,...]       one poll of waitConverged
//	wait-timeout name=S timeout=D deadline=N [ds=NAME,...]
//	close-expectations t=N
//	request-deletion pod=NAME   the harness deletes the pod
//	controller-stopped | controller-started t=N
//	status                   the live display's line
//	finish t=N               the reports.Run, compactly
//
// events, advance and ack also print the barriers that completed and the
// violations that the oracle reported since the last command.
func TestCoreScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "core", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/core: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScript(t, file)
		})
	}
}

// block is one command of a script and its expected output.
type block struct {
	line    int // of the command
	cmd     string
	args    map[string]string
	input   []string
	comment []string // comment lines before the command, kept by -update
	want    string
}

func parseScript(t *testing.T, file string) []block {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []block
	var cur *block
	var comments []string
	inOutput := false
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "":
			continue
		case cur == nil && strings.HasPrefix(line, "#"):
			comments = append(comments, line)
		case cur == nil:
			fields := strings.Fields(line)
			blocks = append(blocks, block{line: n, cmd: fields[0], args: parseArgs(fields[1:]), comment: comments})
			cur, comments, inOutput = &blocks[len(blocks)-1], nil, false
		case !inOutput && line == "----":
			inOutput = true
		case !inOutput:
			cur.input = append(cur.input, strings.TrimSpace(line))
		case strings.TrimSpace(line) == "":
			cur = nil
		default:
			cur.want += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// parseArgs reads key=value words; a bare word is a flag with value "".
func parseArgs(words []string) map[string]string {
	args := map[string]string{}
	for _, w := range words {
		k, v, _ := strings.Cut(w, "=")
		args[k] = v
	}
	return args
}

func runScript(t *testing.T, file string) {
	blocks := parseScript(t, file)
	d := &driver{t: t, file: file, dss: map[string]*appsv1.DaemonSet{}, created: map[string]time.Time{},
		done: map[oracle.BarrierID]bool{}, reported: map[string]bool{}}
	var out strings.Builder
	for i := range blocks {
		b := &blocks[i]
		d.line = b.line
		got := d.run(b)
		if got != "" && !strings.HasSuffix(got, "\n") {
			got += "\n"
		}
		if !*update && got != b.want {
			t.Errorf("%s:%d: %s (-want +got):\n%s", file, b.line, b.cmd, cmp.Diff(b.want, got))
		}
		for _, c := range b.comment {
			out.WriteString(c + "\n")
		}
		out.WriteString(b.cmd)
		keys := make([]string, 0, len(b.args))
		for k := range b.args {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if b.args[k] == "" {
				out.WriteString(" " + k)
			} else {
				out.WriteString(" " + k + "=" + b.args[k])
			}
		}
		out.WriteString("\n")
		for _, in := range b.input {
			out.WriteString("  " + in + "\n")
		}
		out.WriteString("----\n" + got + "\n")
	}
	if *update {
		if err := os.WriteFile(file, []byte(strings.TrimSuffix(out.String(), "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var scriptT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// driver plays one script.
type driver struct {
	t    *testing.T
	file string
	line int
	core *Core
	sc   *scenarios.Scenario
	rv   int
	// dss are the DaemonSets as last written, by name; created is when each
	// object was first added, by kind/name.
	dss     map[string]*appsv1.DaemonSet
	created map[string]time.Time
	// done and reported are what the trace already printed.
	done     map[oracle.BarrierID]bool
	reported map[string]bool
}

func (d *driver) fatalf(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("%s:%d: %s", d.file, d.line, fmt.Sprintf(format, args...))
}

// at parses seconds after t0.
func (d *driver) at(s string) time.Time {
	d.t.Helper()
	sec, err := strconv.ParseFloat(s, 64)
	if err != nil {
		d.fatalf("bad time %q: %v", s, err)
	}
	return scriptT0.Add(time.Duration(sec * float64(time.Second)))
}

func (d *driver) dur(s string) time.Duration {
	d.t.Helper()
	v, err := time.ParseDuration(s)
	if err != nil {
		d.fatalf("bad duration %q: %v", s, err)
	}
	return v
}

func rel(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "+" + strconv.FormatFloat(t.Sub(scriptT0).Seconds(), 'f', -1, 64) + "s"
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (d *driver) run(b *block) string {
	if b.cmd != "init" && d.core == nil {
		d.fatalf("%s before init", b.cmd)
	}
	a := b.args
	switch b.cmd {
	case "init":
		return d.init(a)
	case "step-start":
		st := &scenarios.Step{Name: a["name"]}
		for _, e := range list(a["expect"]) {
			exp := scenarios.Expectation{}
			if strings.HasSuffix(e, "?") {
				e, exp.Optional = strings.TrimSuffix(e, "?"), true
			}
			kind, ds, _ := strings.Cut(e, "/")
			exp.Violation, exp.DaemonSet = scenarios.ViolationKind(kind), ds
			st.Expect = append(st.Expect, exp)
		}
		d.core.StepStarted(st, d.at(a["t"]))
		return fmt.Sprintf("windows: %d", len(d.core.windows))
	case "created":
		d.core.DaemonSetCreated("default/" + a["ds"])
		return "ok"
	case "deleted":
		d.core.DaemonSetDeleted("default/" + a["ds"])
		return "ok"
	case "ack":
		vis := visibility{}
		var all []oracle.Visibility
		for _, g := range list(a["gen"]) {
			name, gen, _ := strings.Cut(g, ":")
			n, _ := strconv.ParseInt(gen, 10, 64)
			vis["default/"+name] = oracle.GenerationObserved("default/"+name, n)
		}
		if ds := a["absent"]; ds != "" {
			vis["default/"+ds] = oracle.DaemonSetAbsent("default/" + ds)
		}
		if ns := list(a["nodes-absent"]); ns != nil {
			all = append(all, oracle.NodesAbsent(ns...))
		}
		if ns := list(a["nodes-settled"]); ns != nil {
			all = append(all, oracle.NodesSettled(ns...))
		}
		if len(all) > 0 {
			vis[""] = oracle.AllOf(all...)
		}
		keys := d.core.StepAcked(a["name"], a["kind"], d.at(a["t"]), d.at(a["t"]), vis, list(a["skipped"]))
		if len(keys) == 0 {
			keys = []string{"none"}
		}
		return "barriers: " + strings.Join(keys, " ") + "\n" + d.trace()
	case "events":
		var out strings.Builder
		for _, in := range b.input {
			if msg := d.event(in); msg != "" {
				out.WriteString(msg + "\n")
			}
		}
		return out.String() + d.trace()
	case "advance":
		_, queued := a["queued"]
		r := d.core.Tick(d.at(a["t"]), !queued)
		var out strings.Builder
		for _, k := range r.Nudge {
			fmt.Fprintf(&out, "nudge %s\n", k)
		}
		if r.Stop != "" {
			fmt.Fprintf(&out, "stop: %s\n", r.Stop)
		}
		fmt.Fprintf(&out, "oracle at %s\n", rel(d.core.checker.Now()))
		return out.String() + d.trace()
	case "wait":
		if d.core.WaitDone(list(a["ds"])) {
			return "done\n" + d.records()
		}
		var waiting []string
		for _, pb := range d.core.pending {
			waiting = append(waiting, fmt.Sprintf("%s/%s", d.core.steps[pb.step].name, pb.ds))
		}
		return "waiting: " + strings.Join(waiting, " ") + "\n" + d.records()
	case "wait-timeout":
		n := len(d.core.violations)
		d.core.WaitTimedOut(a["name"], list(a["ds"]), d.dur(a["timeout"]), d.at(a["deadline"]))
		var out strings.Builder
		for _, v := range d.core.violations[n:] {
			out.WriteString(violationLine(v) + "\n")
		}
		return out.String() + d.records()
	case "request-deletion":
		d.core.RequestDeletion("default/" + a["pod"])
		return "ok"
	case "controller-stopped":
		d.core.ControllerStopped()
		return "ok"
	case "controller-started":
		d.core.ControllerStarted(d.at(a["t"]))
		return "ok"
	case "status":
		return d.core.Status()
	case "close-expectations":
		d.core.CloseExpectations(d.at(a["t"]))
		return "ok"
	case "finish":
		return describeRun(d.core.Finish(reports.Run{Scenario: "script"}, FinishInput{Now: d.at(a["t"])}))
	}
	d.fatalf("unknown command %q", b.cmd)
	return ""
}

func (d *driver) init(a map[string]string) string {
	d.sc = &scenarios.Scenario{}
	w := scenarios.Workload{}
	for _, name := range list(a["daemonsets"]) {
		w.DaemonSets = append(w.DaemonSets, newScriptDS(name, 1, 1))
	}
	d.sc.Workloads = []scenarios.Workload{w}
	if h := a["hold"]; h != "" {
		d.sc.Hold.Duration = d.dur(h)
	}
	grace := 0 * time.Second
	if g := a["grace"]; g != "" {
		grace = d.dur(g)
	}
	conf := oracleConfig(map[oracle.Kind]time.Duration{
		oracle.MissingPod: grace, oracle.PodOnIneligibleNode: grace, oracle.PodOnDeletedNode: grace, oracle.OrphanPod: grace,
	})
	conf.StallAfter, conf.StatusLag = 0, 0
	if v := a["stall-lag"]; v != "" {
		conf.StallAfter = d.dur(v)
	}
	if v := a["status-lag"]; v != "" {
		conf.StatusLag = d.dur(v)
	}
	var stallAfter time.Duration
	if v := a["stall-after"]; v != "" {
		stallAfter = d.dur(v)
	}
	_, stop := a["stop-at-violation"]
	d.core = NewCore(CoreConfig{Scenario: d.sc, Oracle: conf, PodStallAfter: stallAfter, StopAtViolation: stop})
	return "ok"
}

// newScriptDS is DaemonSet name in namespace default at generation gen,
// whose template's image is pause:<gen>, so that each generation is a new
// revision.
func newScriptDS(name string, gen int64, maxUnavailable int32) *appsv1.DaemonSet {
	mu, zero := intstr.FromInt32(maxUnavailable), intstr.FromInt32(0)
	return &appsv1.DaemonSet{
		TypeMeta: metav1.TypeMeta{Kind: "DaemonSet", APIVersion: "apps/v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("ds-" + name), Generation: gen,
			Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: strconv.FormatInt(gen, 10)}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause:" + strconv.FormatInt(gen, 10)}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &mu, MaxSurge: &zero},
			},
		},
	}
}

// event parses and observes one event line; it returns what went wrong, if
// anything.
func (d *driver) event(line string) string {
	f := strings.Fields(line)
	if len(f) < 4 {
		d.fatalf("event %q: want <t> <add|update|delete> <node|pod|ds> <name> [attrs]", line)
	}
	stamp := d.at(f[0])
	kind := map[string]oracle.EventKind{"add": oracle.Added, "update": oracle.Modified, "delete": oracle.Deleted}[f[1]]
	if kind == "" {
		d.fatalf("event %q: unknown action %q", line, f[1])
	}
	a := parseArgs(f[4:])
	arrived := stamp
	if v := a["arrived"]; v != "" {
		arrived = d.at(v)
	}
	d.rv++
	rv := d.rv
	if v := a["rv"]; v != "" {
		// etcd's order where the watches deliver in another one.
		rv, _ = strconv.Atoi(v)
		d.rv = max(d.rv, rv)
	}
	meta := func(key string) metav1.ObjectMeta {
		if _, ok := d.created[key]; !ok {
			d.created[key] = stamp
		}
		return metav1.ObjectMeta{ResourceVersion: strconv.Itoa(rv), CreationTimestamp: metav1.NewTime(d.created[key])}
	}
	var obj runtime.Object
	name := f[3]
	switch f[2] {
	case "node":
		n := &corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: meta("node/" + name)}
		n.Name, n.UID, n.Labels = name, types.UID("node-"+name), map[string]string{"kubernetes.io/hostname": name}
		status := corev1.ConditionTrue
		if _, ok := a["notready"]; ok {
			status = corev1.ConditionFalse
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
		if taint := a["taint"]; taint != "" {
			key, effect, _ := strings.Cut(taint, ":")
			n.Spec.Taints = []corev1.Taint{{Key: key, Effect: corev1.TaintEffect(effect)}}
		}
		_, n.Spec.Unschedulable = a["cordoned"]
		obj = n
	case "ds":
		gen, mu := int64(1), int32(1)
		if v := a["gen"]; v != "" {
			gen, _ = strconv.ParseInt(v, 10, 64)
		}
		if v := a["maxUnavailable"]; v != "" {
			m, _ := strconv.Atoi(v)
			mu = int32(m)
		}
		ds := newScriptDS(name, gen, mu)
		m := meta("ds/" + name)
		ds.ResourceVersion, ds.CreationTimestamp = m.ResourceVersion, m.CreationTimestamp
		d.dss[name] = ds
		obj = ds
	case "pod":
		ds := d.dss[a["ds"]]
		if ds == nil {
			d.fatalf("event %q: no DaemonSet %q added yet", line, a["ds"])
		}
		rev := ds
		if v := a["gen"]; v != "" {
			gen, _ := strconv.ParseInt(v, 10, 64)
			rev = newScriptDS(ds.Name, gen, 1)
		}
		yes := true
		p := &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}, ObjectMeta: meta("pod/" + name)}
		p.Namespace, p.Name, p.UID = "default", name, types.UID("pod-"+name)
		p.Labels = map[string]string{"app": ds.Name, appsv1.DefaultDaemonSetUniqueLabelKey: oracle.CurrentHash(rev)}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes, BlockOwnerDeletion: &yes}}
		p.Spec.NodeName = a["node"]
		p.Status.Phase = corev1.PodPending
		if _, ok := a["ready"]; ok {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(stamp)}}
		}
		if _, ok := a["failed"]; ok {
			p.Status.Phase = corev1.PodFailed
		}
		if _, ok := a["terminating"]; ok {
			now := metav1.NewTime(stamp)
			p.DeletionTimestamp = &now
		}
		obj = p
	default:
		d.fatalf("event %q: unknown object %q", line, f[2])
	}
	rejected := d.core.applyErrs
	d.core.Observe(oracle.Event{Time: stamp, Kind: kind, Object: obj}, arrived)
	if d.core.applyErrs > rejected {
		return fmt.Sprintf("rejected: %s", line)
	}
	return ""
}

// trace prints the barriers that completed and the violations the oracle
// reported since it last looked.
func (d *driver) trace() string {
	var out strings.Builder
	for _, rec := range d.core.steps {
		for _, id := range rec.barriers {
			if d.done[id] {
				continue
			}
			if conv, ok := d.core.checker.ConvergedAt(id); ok {
				d.done[id] = true
				fmt.Fprintf(&out, "barrier %s %s converged at %s (%s %s)\n", conv.Barrier, conv.DaemonSet, rel(conv.At), conv.Event.Kind, conv.Event.Object)
			}
		}
	}
	for _, v := range d.core.checker.Violations() {
		key := fmt.Sprintf("%s %s %s %s", v.Kind, v.DaemonSet, v.Node, rel(v.Start))
		if !d.reported[key] {
			d.reported[key] = true
			fmt.Fprintf(&out, "violation %s\n", strings.Join(slices.DeleteFunc([]string{string(v.Kind), v.DaemonSet, v.Node, "since", rel(v.Start)}, func(s string) bool { return s == "" }), " "))
		}
	}
	return out.String()
}

// records prints the step records.
func (d *driver) records() string {
	var out strings.Builder
	for _, rec := range d.core.steps {
		fmt.Fprintf(&out, "step %s: acked %s", rec.name, rel(rec.start))
		switch {
		case rec.timedOut:
			fmt.Fprintf(&out, ", timed out (expected %v)", rec.timeoutExpected)
		case !rec.at.IsZero():
			fmt.Fprintf(&out, ", converged at %s", rel(rec.at))
		}
		out.WriteString("\n")
	}
	return out.String()
}

func violationLine(v reports.Violation) string {
	s := fmt.Sprintf("violation %s", v.Kind)
	if v.DaemonSet != "" {
		s += " " + v.DaemonSet
	}
	if v.Node != "" {
		s += " " + v.Node
	}
	s += fmt.Sprintf(" at %s for %gs expected=%v", rel(v.Start), v.Seconds, v.Expected)
	if v.Detail != "" {
		s += ": " + v.Detail
	}
	return s
}

// describeRun prints what the Core put in the run, one fact a line.
func describeRun(r reports.Run) string {
	var out strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	for _, s := range r.Steps {
		line := fmt.Sprintf("step %s (%s) at %s: converged=%v in %gs", s.Name, s.Kind, rel(s.Start), s.Converged, s.Seconds)
		if s.PodsExistSeconds != nil {
			line += fmt.Sprintf(" (pods exist in %gs)", *s.PodsExistSeconds)
		}
		if e := s.CompletingEvent; e != nil {
			line += fmt.Sprintf(" on %s %s", e.Reason, e.Object)
		}
		if len(s.SkippedNodes) > 0 {
			line += " skipped " + strings.Join(s.SkippedNodes, ",")
		}
		if s.ExpectedNotConverged {
			line += " (timeout expected)"
		}
		p("%s", line)
	}
	for _, v := range r.Violations {
		p("%s", violationLine(v))
	}
	for _, ro := range r.Rollouts {
		p("rollout %s step=%q outcome=%s complete=%v %gs nodes=%d", ro.DaemonSet, ro.Step, ro.Outcome, ro.Complete, ro.Seconds, len(ro.Nodes))
	}
	for _, av := range r.Availability {
		p("availability %s step=%q peak=%d allowed=%d cluster=%d expected=%v", av.DaemonSet, av.Step, av.PeakUnavailable, av.AllowedUnavailable, av.ClusterMade, av.Expected)
	}
	for i, j := range r.NodeJoins {
		p("node join %s %gs, eligible at %s after %gs", j.Node, j.Seconds, rel(j.Start), r.NodeEligible[i].Seconds)
	}
	if r.NodeJoinsEnded > 0 {
		p("node joins ended before measured %d", r.NodeJoinsEnded)
	}
	for _, j := range r.NodeJoinsUnmeasured {
		p("node join unmeasured %s %s eligible=%v pod=%v ready=%v", j.DaemonSet, j.Node, j.Eligible, j.PodCreated, j.PodReady)
	}
	for _, g := range r.PodGCWaits {
		p("pod GC wait %s %gs", g.Node, g.Seconds)
	}
	if r.PodsCreated > 0 {
		p("pods created %d", r.PodsCreated)
	}
	for _, s := range r.SimulatorStalls {
		p("simulator stall %s on %s since %s for %gs nudged=%v open=%v", s.Pod, s.Node, rel(s.Start), s.Seconds, s.Nudged, s.Open)
	}
	for _, tl := range r.Timelines {
		last := tl.Points[len(tl.Points)-1]
		p("timeline %s: %d points, last at %s desired=%d current=%d ready=%d updated=%d", tl.DaemonSet, len(tl.Points), rel(last.Time),
			last.Desired, last.Current, last.Ready, last.Updated)
	}
	if h := r.Harness; h != nil {
		p("harness: events=%d lag p50=%gs p99=%gs max=%gs clamped=%d rejected=%d limited=%v", h.Events, h.LagP50, h.LagP99, h.LagMax, h.Clamped, h.Rejected, h.Limited)
	}
	c := r.Coverage
	p("coverage: pods %d/%d observed whole, node Ready flaps %d, watch gaps %d", c.PodsObserved, c.PodsExpected, c.NodeReadyFlaps, len(c.WatchGaps))
	return out.String()
}
