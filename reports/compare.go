package reports

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Row compares one metric of one case between side A (reference) and side B.
type Row struct {
	Case       Case
	Controller string // controller of both sides in Compare; "" in CompareControllers
	Metric     Metric
	SampleComparison
	// Paired is the per-repetition analysis of interleaved controllers
	// (CompareControllers only); nil otherwise.
	Paired *Paired
	// Ceiling is upstream/floor, paired, in the floor comparison's rows
	// when upstream ran too; nil otherwise. It bounds upstream/ours.
	Ceiling *Paired
}

// Comparison is a table of rows, renderable as markdown.
type Comparison struct {
	Title          string
	ALabel, BLabel string // e.g. "upstream" and "ours", or "old" and "new"
	// Note, when set, says what the comparison is, before the method.
	Note    string
	Options Options
	Rows    []Row
}

// CompareControllers compares upstream (A) with ours (B) for every case in r.
func CompareControllers(r *Report, opt Options) Comparison {
	return compareControllers(r, opt, Comparison{Title: "ours vs upstream", ALabel: ControllerUpstream, BLabel: ControllerOurs}, "")
}

// FloorNote says what the ours/floor comparison measures.
const FloorNote = "The floor is the harness itself creating and deleting the pods the oracle asks for, bound to their nodes, " +
	"paced only by its calls in flight: no scheduler, no status, no revisions, no informers. " +
	"It is a lower bound for this cluster on this machine, not a competitor: ours/floor is how many times that bound ours takes."

// FloorSchedulerNote replaces FloorNote when the floor let kube-scheduler
// bind its pods (dsbench run --floor-bind=scheduler).
const FloorSchedulerNote = "The floor is the harness itself creating and deleting the pods the oracle asks for, paced only by its calls in flight: no status, no revisions, no informers. " +
	"This floor ran with --floor-bind=scheduler: its pods carry the node-affinity pin and kube-scheduler binds them, as it binds ours's and upstream's. " +
	"It is a lower bound, on this cluster and machine, for a controller that lets kube-scheduler bind its pods, not a competitor: ours/floor is how many times that bound ours takes."

// FloorSchedulerCeilingNote follows CeilingNote when the floor let
// kube-scheduler bind.
const FloorSchedulerCeilingNote = "With this floor the bound holds for the controllers that let kube-scheduler bind (ours, upstream), not for ours-direct."

// FloorSchedulerDirectNote replaces FloorDirectNote when the floor let
// kube-scheduler bind.
const FloorSchedulerDirectNote = "This floor lets kube-scheduler bind its pods and ours-direct binds by spec.nodeName: ours-direct/floor below 1 is what skipping the scheduler saves, not a controller beating the cluster."

// FloorBindsByScheduler reports whether the report's floor let
// kube-scheduler bind its pods.
func FloorBindsByScheduler(r *Report) bool {
	for _, c := range r.Params.Controllers {
		if c.Name == ControllerFloor {
			return slices.Contains(c.Args, "--floor-bind=scheduler")
		}
	}
	return false
}

// FloorWatches reports whether the report's floor held our controller's
// informers (dsbench run --floor-watch).
func FloorWatches(r *Report) bool {
	for _, c := range r.Params.Controllers {
		if c.Name == ControllerFloor {
			return slices.Contains(c.Args, "--floor-watch")
		}
	}
	return false
}

// FloorWatchNote takes the place of "no informers" in the floor's note when
// the floor held them.
const FloorWatchNote = "This floor ran with --floor-watch: it also held the informers our controller holds (DaemonSets, revisions, pods, nodes), " +
	"in a process of its own whose CPU is the floor's, so it pays for reading the cluster as every controller does."

// floorNote is note as the report's floor ran: with FloorWatchNote when it
// held informers.
func floorNote(r *Report, note string) string {
	if !FloorWatches(r) {
		return note
	}
	return strings.Replace(note, ", no informers. ", ". "+FloorWatchNote+" ", 1)
}

// CeilingNote says what the upstream/floor column of the floor comparison
// means.
const CeilingNote = "Paired upstream/floor is how many times the floor upstream takes, over the same pairs of repetitions: " +
	"it is the most any controller could beat upstream by here, since upstream/ours = (upstream/floor) ÷ (ours/floor) and ours/floor is at least 1 " +
	"unless ours beats the harness's own pacing. A target on upstream/ours above it cannot be met on this cluster and machine."

// FloorDirectNote says why ours-direct is compared with the floor too.
const FloorDirectNote = "The floor binds its pods by spec.nodeName, as ours-direct does: ours-direct/floor compares the same binding, " +
	"where ours/floor also counts kube-scheduler's binding of each pod (its CPU on the same machine, and a write per pod)."

// CompareFloor compares the floor (A) with ours (B) for every case the floor
// ran; it has no rows when it never did.
func CompareFloor(r *Report, opt Options) Comparison {
	note := FloorNote
	if FloorBindsByScheduler(r) {
		note = FloorSchedulerNote
	}
	return compareFloor(r, opt, Comparison{Title: "ours vs the floor", ALabel: ControllerFloor, BLabel: ControllerOurs, Note: floorNote(r, note)})
}

// CompareFloorDirect compares the floor (A) with ours-direct (B) for every
// case both ran; it has no rows when they never did.
func CompareFloorDirect(r *Report, opt Options) Comparison {
	note := strings.ReplaceAll(FloorNote, "ours/floor", "ours-direct/floor") + " " + FloorDirectNote
	if FloorBindsByScheduler(r) {
		note = strings.ReplaceAll(FloorSchedulerNote, "ours/floor", "ours-direct/floor") + " " + FloorSchedulerDirectNote
	}
	c := compareFloor(r, opt, Comparison{Title: "ours-direct vs the floor", ALabel: ControllerFloor, BLabel: ControllerOursDirect, Note: floorNote(r, note)})
	groups := Groups(r)
	c.Rows = slices.DeleteFunc(c.Rows, func(row Row) bool { return findGroup(groups, row.Case, ControllerOursDirect) == nil })
	return c
}

// compareFloor fills c, whose A is the floor, for every case the floor ran,
// with upstream/floor beside each row when upstream ran too.
// The floor's pacing trials are left out (FloorTrials).
func compareFloor(r *Report, opt Options, c Comparison) Comparison {
	trials, unfinished := FloorTrials(r)
	r = withoutFloorTrials(r, trials)
	c = compareControllers(r, opt, c, ControllerFloor)
	groups := Groups(r)
	for i := range c.Rows {
		row := &c.Rows[i]
		floor, upstream := findGroup(groups, row.Case, ControllerFloor), findGroup(groups, row.Case, ControllerUpstream)
		if floor == nil || upstream == nil {
			continue
		}
		if sf, su := floor.Lookup(row.Metric.Key), upstream.Lookup(row.Metric.Key); sf != nil && su != nil {
			p := PairSamples(sf, su, opt.Confidence)
			row.Ceiling = &p
		}
	}
	if c.ceiling() {
		c.Note += " " + CeilingNote
		if FloorBindsByScheduler(r) {
			c.Note += " " + FloorSchedulerCeilingNote
		}
	}
	if note := FloorTrialsNote(trials, unfinished, "these rows, and of their pairs"); len(c.Rows) > 0 && note != "" {
		c.Note += " " + note
	}
	return c
}

// DirectNote says what the ours-direct/ours comparison measures.
const DirectNote = "ours-direct is our controller started with --bind-mode=direct: it sets spec.nodeName when it creates a pod, " +
	"so kube-scheduler never sees the pod and writes no binding; ours pins each pod to its node with node affinity and kube-scheduler binds it, as upstream's does. " +
	"ours-direct/ours is what skipping the scheduler changes in these measurements; what it saves kube-scheduler and the API server (a binding write per pod) is the cluster's and shows in no row. " +
	"It is informational: the gate judges ours alone, and what direct binding gives up (the scheduler's resource, port and volume checks, priorities and preemption) " +
	"does not show in these numbers (README.md, The controller)."

// CompareDirect compares ours (A) with ours-direct (B) for every case
// ours-direct ran; it has no rows when it never did.
func CompareDirect(r *Report, opt Options) Comparison {
	return compareControllers(r, opt, Comparison{Title: "ours-direct vs ours", ALabel: ControllerOurs, BLabel: ControllerOursDirect, Note: DirectNote}, ControllerOursDirect)
}

// ExternalNote says what the external controller's numbers are.
const ExternalNote = "external is a DaemonSet controller that was already running against the cluster (dsbench run --kubeconfig FILE --controller external): " +
	"the harness did not start it and knows neither its binary nor its settings. " +
	"Its times and invariants are measured as ours's are, from the harness's own watches; its CPU, memory and API requests are not, so those rows are absent. " +
	"It runs alone, so the ours column is empty unless runs of ours were added to this report; the gate does not apply to it (the baseline holds ours and upstream)."

// CompareExternal compares ours (A) with the external controller (B) for
// every case the external controller ran; it has no rows when it never did.
func CompareExternal(r *Report, opt Options) Comparison {
	return compareControllers(r, opt, Comparison{Title: "the external controller", ALabel: ControllerOurs, BLabel: ControllerExternal, Note: ExternalNote}, ControllerExternal)
}

// ExternalParams is how the report's parameters describe the external
// controller.
const ExternalParams = "not started by the harness: a controller already running against the cluster; its binary, settings, CPU, memory and API requests are unknown"

// compareControllers fills c with B against A per case, with the paired
// analysis; onlyWith, when set, skips the cases that controller never ran.
func compareControllers(r *Report, opt Options, c Comparison, onlyWith string) Comparison {
	c.Options = opt
	groups := Groups(r)
	for _, cs := range cases(groups) {
		a := findGroup(groups, cs, c.ALabel)
		b := findGroup(groups, cs, c.BLabel)
		if onlyWith != "" && findGroup(groups, cs, onlyWith) == nil {
			continue
		}
		rows := compareGroups(cs, "", a, b, opt)
		for i := range rows {
			var sa, sb *Series
			if a != nil {
				sa = a.Lookup(rows[i].Metric.Key)
			}
			if b != nil {
				sb = b.Lookup(rows[i].Metric.Key)
			}
			p := PairSamples(sa, sb, opt.Confidence)
			rows[i].Paired = &p
		}
		c.Rows = append(c.Rows, rows...)
	}
	return c
}

// Compare compares report a (A, old) with report b (B, new), per case and
// controller, with DefaultOptions. It is what `dsbench compare` prints.
func Compare(a, b *Report) Comparison { return CompareWith(a, b, DefaultOptions()) }

// CompareWith is Compare with explicit options.
func CompareWith(a, b *Report, opt Options) Comparison {
	c := Comparison{Title: "new vs old", ALabel: "old", BLabel: "new", Options: opt}
	if a.Versions.GitCommit != "" || b.Versions.GitCommit != "" {
		c.Title = fmt.Sprintf("new (%s, %s) vs old (%s, %s)", shortCommit(b.Versions.GitCommit), b.GeneratedAt.UTC().Format(time.RFC3339),
			shortCommit(a.Versions.GitCommit), a.GeneratedAt.UTC().Format(time.RFC3339))
	}
	ga, gb := Groups(a), Groups(b)
	type key struct {
		c          Case
		controller string
	}
	var keys []key
	seen := map[key]bool{}
	for _, g := range append(ga, gb...) {
		k := key{g.Case, g.Controller}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		c.Rows = append(c.Rows, compareGroups(k.c, k.controller, findGroup(ga, k.c, k.controller), findGroup(gb, k.c, k.controller), opt)...)
	}
	return c
}

func compareGroups(cs Case, controller string, a, b *Group, opt Options) []Row {
	var rows []Row
	for _, m := range unionMetrics(a, b) {
		av, bv := seriesValues(a, m.Key), seriesValues(b, m.Key)
		rng := seriesRand(opt.Seed, cs.String()+"|"+controller+"|"+m.Key)
		rows = append(rows, Row{Case: cs, Controller: controller, Metric: m, SampleComparison: CompareSamples(av, bv, rng, opt)})
	}
	return rows
}

// seriesRand gives each compared series its own PCG stream, so a row's CI
// does not depend on which other rows were computed before it.
func seriesRand(seed uint64, key string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(key))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

func seriesValues(g *Group, key string) []float64 {
	if g == nil {
		return nil
	}
	if s := g.Lookup(key); s != nil {
		return s.Values
	}
	return nil
}

func cases(groups []Group) []Case {
	var out []Case
	seen := map[Case]bool{}
	for _, g := range groups {
		if !seen[g.Case] {
			seen[g.Case] = true
			out = append(out, g.Case)
		}
	}
	return out
}

func findGroup(groups []Group, cs Case, controller string) *Group {
	for i := range groups {
		if groups[i].Case == cs && groups[i].Controller == controller {
			return &groups[i]
		}
	}
	return nil
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// Markdown renders the comparison as one table per case (and controller).
func (c Comparison) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", c.Title)
	if c.Note != "" {
		fmt.Fprintf(&b, "%s\n\n", c.Note)
	}
	fmt.Fprintf(&b, "%s\n", c.MethodNote())
	tables := c.tables()
	for _, t := range tables {
		b.WriteString(t.markdown("###"))
	}
	if len(tables) == 0 {
		b.WriteString("No metrics to compare.\n")
	}
	return b.String()
}

// MethodNote explains the columns of the comparison tables in one paragraph.
func (c Comparison) MethodNote() string {
	note := fmt.Sprintf("Median over repetitions with a %s confidence interval from order statistics; "+
		"%s/%s is the ratio of medians with a %s percentile-bootstrap interval (%d resamples, seed %d); "+
		"p is the two-sided Mann-Whitney U test; Δ is `~` when p ≥ %g or no test is possible. Lower is better unless marked ↑.",
		pct(c.Options.Confidence), c.BLabel, c.ALabel, pct(c.Options.Confidence), c.Options.Resamples, c.Options.Seed, c.Options.Alpha)
	if c.paired() {
		note += fmt.Sprintf(" The runs are interleaved pairs (repetition i of each controller back to back, alternating which goes first), "+
			"so each pair's ratio is free of the machine's drift: paired is the geometric mean of the per-pair ratios %s/%s with a %s t interval "+
			"of their logs, and p(pairs) the exact two-sided Wilcoxon signed-rank test of those logs (with 5 pairs no p is below 0.0625).",
			c.BLabel, c.ALabel, pct(c.Options.Confidence))
	}
	return note + "\n"
}

// tables groups the rows by case (and controller), one table each.
func (c Comparison) tables() []table {
	var out []table
	for start := 0; start < len(c.Rows); {
		end := start
		for end < len(c.Rows) && c.Rows[end].Case == c.Rows[start].Case && c.Rows[end].Controller == c.Rows[start].Controller {
			end++
		}
		title := c.Rows[start].Case.String()
		if ctl := c.Rows[start].Controller; ctl != "" {
			title += " — " + ctl
		}
		out = append(out, c.table(title, c.Rows[start:end]))
		start = end
	}
	return out
}

// ceiling says whether the rows carry upstream/floor.
func (c Comparison) ceiling() bool {
	for _, r := range c.Rows {
		if r.Ceiling != nil {
			return true
		}
	}
	return false
}

// paired says whether the rows carry the paired analysis.
func (c Comparison) paired() bool {
	for _, r := range c.Rows {
		if r.Paired != nil {
			return true
		}
	}
	return false
}

func (c Comparison) table(title string, rows []Row) table {
	t := table{
		Title: title,
		Header: []string{"metric", "unit", c.ALabel + " median [CI]", "n", c.BLabel + " median [CI]", "n",
			c.BLabel + "/" + c.ALabel + " [CI]", "p", "Δ"},
		Right: []bool{false, false, true, true, true, true, true, true, true},
	}
	paired := c.paired()
	if paired {
		t.Header = append(t.Header, "paired "+c.BLabel+"/"+c.ALabel+" [CI]", "p(pairs)")
		t.Right = append(t.Right, true, true)
	}
	ceiling := c.ceiling()
	if ceiling {
		t.Header = append(t.Header, "paired "+ControllerUpstream+"/"+c.ALabel+" [CI]")
		t.Right = append(t.Right, true)
	}
	notes := newFootnotes()
	for _, r := range rows {
		label := r.Metric.Label
		if r.Metric.HigherIsBetter {
			label += " ↑"
		}
		t.Rows = append(t.Rows, []string{
			label, unitLabel(r.Metric),
			fmtMedianCI(r.Metric, r.A), fmt.Sprint(r.A.N), fmtMedianCI(r.Metric, r.B), fmt.Sprint(r.B.N),
			fmtRatioCI(r.SampleComparison), fmtP(r.SampleComparison), r.Verdict() + notes.refs(r.Warnings),
		})
		if paired {
			row := &t.Rows[len(t.Rows)-1]
			pp, pv := "—", "—"
			if r.Paired != nil {
				pp = fmtPaired(*r.Paired)
				if r.Paired.Tested {
					pv = fmt.Sprintf("%.3f", r.Paired.P)
				}
			}
			*row = append(*row, pp, pv)
		}
		if ceiling {
			row := &t.Rows[len(t.Rows)-1]
			cell := "—"
			if r.Ceiling != nil {
				cell = fmtPaired(*r.Ceiling)
			}
			*row = append(*row, cell)
		}
	}
	t.Notes = notes.texts
	return t
}

// footnotes numbers distinct warnings within one table.
type footnotes struct {
	index map[string]int
	texts []string
}

func newFootnotes() *footnotes { return &footnotes{index: map[string]int{}} }

func (f *footnotes) refs(ws []string) string {
	var parts []string
	for _, w := range ws {
		i, ok := f.index[w]
		if !ok {
			f.texts = append(f.texts, w)
			i = len(f.texts)
			f.index[w] = i
		}
		parts = append(parts, fmt.Sprint(i))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ",") + ")"
}
