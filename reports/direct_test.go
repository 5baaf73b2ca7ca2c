package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// withDirect returns a deep copy of r with an ours-direct run beside each
// run of ours: the same run, its times and CPU scaled by factor plus 2 % a
// repetition (so that the paired ratios are not all alike).
func withDirect(r *Report, factor float64) *Report {
	data, err := marshalJSON(r)
	if err != nil {
		panic(err)
	}
	// Two deep copies: the report, and the runs to turn into ours-direct's.
	var cp, extra Report
	if err := json.Unmarshal(data, &cp); err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, &extra); err != nil {
		panic(err)
	}
	for _, c := range extra.Params.Controllers {
		if c.Name == ControllerOurs {
			c.Name = ControllerOursDirect
			c.Args = append(c.Args, "--bind-mode=direct")
			cp.Params.Controllers = append(cp.Params.Controllers, c)
		}
	}
	for _, d := range extra.Runs {
		if d.Controller != ControllerOurs {
			continue
		}
		d.Controller = ControllerOursDirect
		f := factor + 0.02*float64(d.Repetition)
		for j := range d.Steps {
			d.Steps[j].Seconds *= f
		}
		for j := range d.Rollouts {
			d.Rollouts[j].Seconds *= f
			for k := range d.Rollouts[j].Nodes {
				d.Rollouts[j].Nodes[k].Seconds *= f
			}
		}
		for j := range d.NodeJoins {
			d.NodeJoins[j].Seconds *= f
		}
		d.Resources.CPUSeconds *= f
		cp.Runs = append(cp.Runs, d)
	}
	return &cp
}

// ours-direct gets its own comparison with ours, paired when interleaved;
// the ours/upstream and ours/floor comparisons do not change because it
// ran, and without it there is no such section.
func TestCompareDirect(t *testing.T) {
	r := newReport([]float64{20, 22, 21, 19, 20}, []float64{30, 31, 29, 33, 30})
	for i, v := range []float64{10, 11, 10, 9, 10} {
		r.Runs = append(r.Runs, newRun("s", ControllerFloor, i, v))
	}
	r.Params.Interleaved = true
	before, floorBefore := CompareControllers(r, DefaultOptions()).Markdown(), CompareFloor(r, DefaultOptions()).Markdown()
	if rows := CompareDirect(r, DefaultOptions()).Rows; len(rows) != 0 {
		t.Fatalf("ours-direct comparison without ours-direct runs has %d rows", len(rows))
	}
	if md := analyze(r, nil, DefaultOptions()).markdown(); strings.Contains(md, "ours-direct") {
		t.Errorf("report.md without ours-direct runs mentions it:\n%s", md)
	}
	for i, v := range []float64{10, 12, 11, 9, 10} {
		r.Runs = append(r.Runs, newRun("s", ControllerOursDirect, i, v))
	}
	if err := Validate(r); err != nil {
		t.Fatalf("a report with ours-direct runs does not validate: %v", err)
	}
	if CompareControllers(r, DefaultOptions()).Markdown() != before {
		t.Error("ours-direct's runs changed the ours/upstream comparison")
	}
	if CompareFloor(r, DefaultOptions()).Markdown() != floorBefore {
		t.Error("ours-direct's runs changed the ours/floor comparison")
	}
	var order []string
	for _, g := range Groups(r) {
		order = append(order, g.Controller)
	}
	if want := []string{ControllerUpstream, ControllerOurs, ControllerOursDirect, ControllerFloor}; !slices.Equal(order, want) {
		t.Errorf("groups in order %v, want %v", order, want)
	}
	c := CompareDirect(r, DefaultOptions())
	if c.ALabel != ControllerOurs || c.BLabel != ControllerOursDirect {
		t.Errorf("sides %s (A) and %s (B), want ours and ours-direct", c.ALabel, c.BLabel)
	}
	conv := pairedConvergeRow(t, c.Rows, 5)
	if conv.Ratio < 0.45 || conv.Ratio > 0.55 {
		t.Errorf("ours-direct/ours convergence ratio %.2f, want about 0.5", conv.Ratio)
	}
	md := analyze(r, nil, DefaultOptions()).markdown()
	for _, want := range []string{"## ours vs upstream", "## ours vs the floor", "## ours-direct vs ours", DirectNote, "ours-direct/ours [CI]", "paired ours-direct/ours"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if i, j := strings.Index(md, "## ours vs the floor"), strings.Index(md, "## ours-direct vs ours"); i > j {
		t.Errorf("the ours-direct section comes before the floor's")
	}
	// The summary gives it columns of its own, beside ours.
	sum := Summary(r)
	for _, want := range []string{"ours-direct", "ours-direct/ours"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

// The gate judges ours alone: ours-direct's broken invariants and its
// slowness are not failures, a baseline has no entry for it and does not
// miss one.
func TestGateIgnoresOursDirect(t *testing.T) {
	base := []float64{10.0, 10.4, 9.8, 10.1, 10.6, 9.9, 10.2, 10.3}
	r := newReport(base, nil)
	for i, v := range scaled(base, 0.5) {
		r.Runs = append(r.Runs, newRun("s", ControllerOursDirect, i, v))
	}
	b := NewBaseline(r, 1.25)
	for _, e := range b.Entries {
		if e.Controller != ControllerOurs {
			t.Errorf("baseline entry for %s %s: want ours alone", e.Controller, e.Metric)
		}
	}
	// ours-direct twice as slow as in the baseline's run and broken.
	cur := newReport(base, nil)
	for i, v := range scaled(base, 2) {
		run := newRun("s", ControllerOursDirect, i, v)
		if i == 0 {
			run.Violations = []Violation{{Kind: "DuplicatePods", Start: run.Start, Detail: "two pods"}}
		}
		cur.Runs = append(cur.Runs, run)
	}
	g := Gate(cur, b)
	if !g.Pass {
		t.Errorf("gate failed on ours-direct: %v", g.Failures)
	}
	if !slices.ContainsFunc(g.Warnings, func(w string) bool { return strings.HasPrefix(w, ControllerOursDirect+" ") }) {
		t.Errorf("ours-direct's broken invariant is not even a warning: %v", g.Warnings)
	}
	if Holds(CheckInvariants(cur), ControllerOursDirect) {
		t.Error("ours-direct's duplicate pods went unnoticed by the invariant check")
	}
}

// Rendered with ours-direct, every output has it: report.md its section,
// report.html its section and its boxes and curves in the figures, bench.txt
// its benchmarks. The golden holds the section and the summary.
func TestGoldenDirect(t *testing.T) {
	r, _ := readTestdata(t)
	r = withDirect(r, 0.8)
	if err := Validate(r); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Render(dir, r, nil); err != nil {
		t.Fatalf("Render: %v", err)
	}
	t.Run("compare", func(t *testing.T) {
		checkGolden(t, "direct.md.golden", []byte(CompareDirect(r, DefaultOptions()).Markdown()))
	})
	t.Run("summary", func(t *testing.T) {
		checkGolden(t, "summary-direct.txt.golden", []byte(Summary(r)))
	})
	for file, want := range map[string]string{
		MarkdownFile: "## ours-direct vs ours",
		HTMLFile:     "<h2>ours-direct vs ours</h2>",
		BenchFile:    "/controller=ours-direct/",
	} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %q (%v)", file, want, err)
		}
	}
	a := analyze(r, nil, DefaultOptions())
	figs, err := a.figures()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := analyze(mustRead(t), nil, DefaultOptions()).figures()
	if err != nil {
		t.Fatal(err)
	}
	// One more timeline per case (ours-direct's first good run), the same
	// boxes and CDFs, which now draw three controllers.
	timelines := func(fs []figure) int {
		n := 0
		for _, f := range fs {
			if f.Kind == figureTimeline {
				n++
			}
		}
		return n
	}
	if len(figs)-timelines(figs) != len(plain)-timelines(plain) || timelines(figs) <= timelines(plain) {
		t.Errorf("%d figures (%d timelines) with ours-direct, %d (%d) without", len(figs), timelines(figs), len(plain), timelines(plain))
	}
	for _, f := range figs {
		if f.Kind == figureCDF && !strings.Contains(f.Caption, "ours-direct inside ours's") {
			t.Errorf("CDF %q: caption %q does not say where ours-direct shows", f.Title, f.Caption)
		}
	}
}

func mustRead(t *testing.T) *Report {
	t.Helper()
	r, _ := readTestdata(t)
	return r
}
