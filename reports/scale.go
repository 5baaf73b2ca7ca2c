package reports

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
)

// ScaleSchemaVersion identifies the layout of scale.json. As for report.json,
// adding optional fields keeps v1.
const ScaleSchemaVersion = "dsbench.scale/v1"

// Scale analysis defaults: where the curves are read (the 10k, 50k
// and 100k nodes), and how far beyond the largest measured node count a
// prediction may go before it is called an extrapolation.
var DefaultPredictAt = []int{10000, 50000, 100000}

const DefaultExtrapolationFactor = 20

// Fit names, in Scale.Series[].Better.
const (
	FitLinear = "linear"
	FitPower  = "power"
)

// ScaleSource is one report.json given to AnalyzeScale: Path names it in
// errors, Name (Path when empty) in scale.json, where the CLI makes it
// relative to the output folder.
type ScaleSource struct {
	Path   string
	Name   string
	Report *Report
}

func (src ScaleSource) name() string {
	if src.Name != "" {
		return src.Name
	}
	return src.Path
}

// ScaleOptions configure AnalyzeScale.
type ScaleOptions struct {
	// Confidence of the medians' intervals (see MedianConfidenceInterval).
	Confidence float64
	// PredictAt are the node counts each fit is read at.
	PredictAt []int
	// ExtrapolationFactor: a prediction beyond this many times a series'
	// largest measured node count is marked an extrapolation.
	ExtrapolationFactor float64
}

// DefaultScaleOptions are what `dsbench scale` and `dsbench report scale` use.
func DefaultScaleOptions() ScaleOptions {
	return ScaleOptions{Confidence: DefaultConfidence, PredictAt: slices.Clone(DefaultPredictAt), ExtrapolationFactor: DefaultExtrapolationFactor}
}

// Scale is the content of scale.json: cost against cluster size, per
// scenario, metric and controller, from reports made at several node counts.
// Everything in scale.md and scale.html is rendered from it.
type Scale struct {
	SchemaVersion       string            `json:"schemaVersion"`
	GeneratedAt         time.Time         `json:"generatedAt"`
	Confidence          float64           `json:"confidence"`
	PredictAt           []int             `json:"predictAt"`
	ExtrapolationFactor float64           `json:"extrapolationFactor"`
	Sources             []ScaleSourceInfo `json:"sources"`
	// Runs counts the runs per scenario, controller and node count, failed
	// ones included: what every point was made from, and what was left out.
	Runs   []ScaleRuns   `json:"runs"`
	Series []ScaleSeries `json:"series"`
	// Notes are what a reader should know about the inputs: repetitions
	// merged from several reports, reports of different commits or machines.
	Notes []string `json:"notes,omitempty"`
}

// ScaleSourceInfo identifies one input report.
type ScaleSourceInfo struct {
	Path        string    `json:"path"`
	GeneratedAt time.Time `json:"generatedAt"`
	GitCommit   string    `json:"gitCommit"`
	GitDirty    bool      `json:"gitDirty,omitempty"`
	Nodes       []int     `json:"nodes"`
	Scenarios   []string  `json:"scenarios"`
	Controllers []string  `json:"controllers"`
	RunCount    int       `json:"runCount"`
	Failed      int       `json:"failed"`
}

// ScaleRuns counts the runs of one scenario and controller at one node count.
type ScaleRuns struct {
	Scenario   string `json:"scenario"`
	Controller string `json:"controller"`
	Nodes      int    `json:"nodes"`
	Runs       int    `json:"runs"`
	// Failed runs contribute nothing; Errors are their distinct messages.
	Failed int      `json:"failed"`
	Errors []string `json:"errors,omitempty"`
	// Sources are the reports the runs came from (more than one: their
	// repetitions were merged).
	Sources []string `json:"sources"`
}

// ScaleSeries is one metric of one scenario and controller against nodes.
type ScaleSeries struct {
	Scenario   string `json:"scenario"`
	Controller string `json:"controller"`
	// Metric is the key of RunMetrics ("step:create", "cpu"), Label its
	// name in tables, Unit "s", "B" or "" (a count).
	Metric string       `json:"metric"`
	Label  string       `json:"label"`
	Unit   string       `json:"unit"`
	Points []ScalePoint `json:"points"`
	// Linear and Power are the fits of the points' medians against nodes;
	// absent, NoFit or NoPower says why.
	Linear  *LinearFit `json:"linear,omitempty"`
	Power   *PowerFit  `json:"power,omitempty"`
	NoFit   string     `json:"noFit,omitempty"`
	NoPower string     `json:"noPower,omitempty"`
	// Better is the fit with the higher R² in the metric's own units
	// (FitLinear on a tie: the simpler curve).
	Better      string            `json:"better,omitempty"`
	Predictions []ScalePrediction `json:"predictions,omitempty"`
}

// ScalePoint is a metric at one node count: the successful repetitions'
// values, summarized. Runs that failed, or succeeded without the metric (a
// step that did not converge, CPU not measured), are counted, not used.
type ScalePoint struct {
	Nodes   int       `json:"nodes"`
	Runs    int       `json:"runs"`
	Failed  int       `json:"failed"`
	Missing int       `json:"missing"`
	Values  []float64 `json:"values"`
	// Summary is absent when no value is left.
	Summary *PointSummary `json:"summary,omitempty"`
}

// PointSummary is the median of a point's values, its confidence interval
// (absent with too few values; CINote says why) and their range.
type PointSummary struct {
	Median float64   `json:"median"`
	CI     *Interval `json:"ci,omitempty"`
	CINote string    `json:"ciNote,omitempty"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
}

// Interval is a confidence interval with its actual coverage.
type Interval struct {
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Confidence float64 `json:"confidence"`
}

// LinearFit is cost = Intercept + Slope·nodes, by least squares over the
// medians, and its coefficient of determination.
type LinearFit struct {
	Intercept float64 `json:"intercept"`
	Slope     float64 `json:"slope"`
	R2        float64 `json:"r2"`
}

// PowerFit is cost = Coefficient·nodes^Exponent, by least squares of
// ln(median) on ln(nodes). R2Log is that regression's R²; R2 is the curve's
// against the medians themselves, comparable with LinearFit.R2.
type PowerFit struct {
	Coefficient float64 `json:"coefficient"`
	Exponent    float64 `json:"exponent"`
	R2Log       float64 `json:"r2Log"`
	R2          float64 `json:"r2"`
}

// At is the linear fit's cost at n nodes.
func (f LinearFit) At(n float64) float64 { return f.Intercept + f.Slope*n }

// At is the power fit's cost at n nodes.
func (f PowerFit) At(n float64) float64 { return f.Coefficient * math.Pow(n, f.Exponent) }

// ScalePrediction reads the fits at a node count. Factor is how many times
// the series' largest measured node count that is; Extrapolation marks a
// factor beyond ScaleOptions.ExtrapolationFactor.
type ScalePrediction struct {
	Nodes         int      `json:"nodes"`
	Factor        float64  `json:"factor"`
	Extrapolation bool     `json:"extrapolation"`
	Linear        *float64 `json:"linear,omitempty"`
	Power         *float64 `json:"power,omitempty"`
}

// MeasuredNodes are the node counts with at least one value.
func (s *ScaleSeries) MeasuredNodes() []int {
	var out []int
	for _, p := range s.Points {
		if p.Summary != nil {
			out = append(out, p.Nodes)
		}
	}
	return out
}

// scaleMetric says whether a metric of RunMetrics is followed across sizes:
// convergence (in all and per step), rollout times, the controller's CPU,
// memory and API requests. Counts of violations and unavailability are
// verdicts, not costs; per-verb requests and extras would multiply the
// tables for little.
func scaleMetric(key string) bool {
	switch key {
	case MetricConverge.Key, MetricRollout.Key, MetricNodeRolloutP99.Key, MetricCPU.Key, MetricRSS.Key, MetricRequests.Key:
		return true
	}
	return strings.HasPrefix(key, stepPrefix)
}

// runNodes is the node count a run played at: its own, else its scenario's
// resolved parameters, else the report's.
func runNodes(r *Report, run *Run) int {
	if run.Nodes > 0 {
		return run.Nodes
	}
	for _, p := range r.Params.PerScenario {
		if p.Name == run.Scenario && p.Nodes > 0 {
			return p.Nodes
		}
	}
	return r.Params.Nodes
}

// AnalyzeScale puts the runs of reports made at several node counts side by
// side: per scenario, metric and controller, the median of each node count
// with its confidence interval, a linear and a power-law fit, and what they
// predict at opt.PredictAt. Runs of one scenario, controller and node count
// found in several reports are merged as repetitions (and said so in
// Notes); the same run found twice (one report given twice) is an error that
// names both files, as is a report that does not validate or a run without a
// node count. It does no I/O.
func AnalyzeScale(sources []ScaleSource, now time.Time, opt ScaleOptions) (*Scale, error) {
	if len(sources) == 0 {
		return nil, errors.New("scaling analysis: no reports")
	}
	s := &Scale{SchemaVersion: ScaleSchemaVersion, GeneratedAt: now.UTC(), Confidence: opt.Confidence,
		PredictAt: slices.Clone(opt.PredictAt), ExtrapolationFactor: opt.ExtrapolationFactor}

	type caseKey struct {
		scenario, controller string
		nodes                int
	}
	type runKey struct {
		caseKey
		rep   int
		start time.Time
	}
	type valueKey struct {
		scenario, controller, metric string
		nodes                        int
	}
	seenRun := map[runKey]string{}
	counts := map[caseKey]*ScaleRuns{}
	values := map[valueKey][]float64{}
	metrics := map[string]Metric{}
	var metricOrder []Metric
	scenarioOrder := map[string]int{}
	var errs []error
	// Runs found in two reports, by (first report, second report).
	type duplicate struct {
		runs    int
		example string
	}
	dupes := map[[2]string]*duplicate{}
	var dupeOrder [][2]string
	var trialNotes []string

	for _, src := range sources {
		r := src.Report
		if r == nil {
			errs = append(errs, fmt.Errorf("%s: no report", src.Path))
			continue
		}
		if err := Validate(r); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src.Path, err))
			continue
		}
		for _, name := range r.Params.Scenarios {
			if _, ok := scenarioOrder[name]; !ok {
				scenarioOrder[name] = len(scenarioOrder)
			}
		}
		info := ScaleSourceInfo{Path: src.name(), GeneratedAt: r.GeneratedAt, GitCommit: r.Versions.GitCommit, GitDirty: r.Versions.GitDirty, RunCount: len(r.Runs)}
		trials, unfinished := FloorTrials(r)
		if note := FloorTrialsNote(trials, unfinished, "the floor's points"); note != "" {
			trialNotes = append(trialNotes, src.name()+": "+note)
		}
		for i := range r.Runs {
			run := &r.Runs[i]
			if isFloorTrial(trials, run) {
				continue
			}
			nodes := runNodes(r, run)
			if nodes <= 0 {
				errs = append(errs, fmt.Errorf("%s: run %s has no node count (nor has its scenario or the report)", src.Path, run.ID()))
				continue
			}
			if _, ok := scenarioOrder[run.Scenario]; !ok {
				scenarioOrder[run.Scenario] = len(scenarioOrder)
			}
			ck := caseKey{run.Scenario, run.Controller, nodes}
			rk := runKey{ck, run.Repetition, run.Start}
			if first, ok := seenRun[rk]; ok {
				d := dupes[[2]string{first, src.Path}]
				if d == nil {
					d = &duplicate{example: fmt.Sprintf("%s at %d nodes, started %s", run.ID(), nodes, run.Start.UTC().Format(time.RFC3339Nano))}
					dupes[[2]string{first, src.Path}] = d
					dupeOrder = append(dupeOrder, [2]string{first, src.Path})
				}
				d.runs++
				continue
			}
			seenRun[rk] = src.Path
			info.Nodes = appendUnique(info.Nodes, nodes)
			info.Scenarios = appendUnique(info.Scenarios, run.Scenario)
			info.Controllers = appendUnique(info.Controllers, run.Controller)
			c := counts[ck]
			if c == nil {
				c = &ScaleRuns{Scenario: run.Scenario, Controller: run.Controller, Nodes: nodes}
				counts[ck] = c
			}
			c.Runs++
			c.Sources = appendUnique(c.Sources, src.name())
			if !run.OK() {
				info.Failed++
				c.Failed++
				c.Errors = appendUnique(c.Errors, run.Error)
				continue
			}
			for _, mv := range RunMetrics(run) {
				if !scaleMetric(mv.Metric.Key) {
					continue
				}
				if _, ok := metrics[mv.Metric.Key]; !ok {
					metrics[mv.Metric.Key] = mv.Metric
					metricOrder = append(metricOrder, mv.Metric)
				}
				vk := valueKey{run.Scenario, run.Controller, mv.Metric.Key, nodes}
				values[vk] = append(values[vk], mv.Value)
			}
		}
		slices.Sort(info.Nodes)
		s.Sources = append(s.Sources, info)
	}
	for _, pair := range dupeOrder {
		d := dupes[pair]
		errs = append(errs, fmt.Errorf("%s and %s hold %d of the same runs (such as %s): the same report given twice?", pair[0], pair[1], d.runs, d.example))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("scaling analysis: %w", err)
	}

	for _, c := range counts {
		s.Runs = append(s.Runs, *c)
	}
	compareCase := func(aScenario, aController string, aNodes int, bScenario, bController string, bNodes int) int {
		return cmp.Or(cmp.Compare(scenarioOrder[aScenario], scenarioOrder[bScenario]),
			cmp.Compare(controllerRank(aController), controllerRank(bController)),
			cmp.Compare(aNodes, bNodes))
	}
	slices.SortFunc(s.Runs, func(a, b ScaleRuns) int {
		return compareCase(a.Scenario, a.Controller, a.Nodes, b.Scenario, b.Controller, b.Nodes)
	})
	seen := firstSeen(metricOrder)
	slices.SortStableFunc(metricOrder, func(a, b Metric) int { return compareMetrics(seen, a, b) })

	// Every controller that ran, in the reports' order (upstream, ours,
	// ours-direct, floor); a fixed list would drop any other silently.
	var controllers []string
	for _, c := range s.Runs {
		if !slices.Contains(controllers, c.Controller) {
			controllers = append(controllers, c.Controller)
		}
	}
	slices.SortStableFunc(controllers, func(a, b string) int { return cmp.Compare(controllerRank(a), controllerRank(b)) })

	for _, scenario := range inOrder(scenarioOrder) {
		for _, m := range metricOrder {
			for _, controller := range controllers {
				var points []ScalePoint
				measured := false
				for _, c := range s.Runs {
					if c.Scenario != scenario || c.Controller != controller {
						continue
					}
					xs := values[valueKey{scenario, controller, m.Key, c.Nodes}]
					measured = measured || len(xs) > 0
					points = append(points, newScalePoint(c, xs, opt.Confidence))
				}
				if !measured {
					continue
				}
				series := ScaleSeries{Scenario: scenario, Controller: controller, Metric: m.Key, Label: m.Label, Unit: m.Unit, Points: points}
				fitSeries(&series, opt)
				s.Series = append(s.Series, series)
			}
		}
	}
	s.Notes = append(scaleNotes(sources, s.Runs), trialNotes...)
	return s, nil
}

func newScalePoint(c ScaleRuns, xs []float64, confidence float64) ScalePoint {
	p := ScalePoint{Nodes: c.Nodes, Runs: c.Runs, Failed: c.Failed, Missing: c.Runs - c.Failed - len(xs), Values: slices.Clone(xs)}
	if p.Values == nil {
		p.Values = []float64{}
	}
	if len(xs) == 0 {
		return p
	}
	st := Summarize(xs, confidence)
	sum := &PointSummary{Median: st.Median, Min: st.Min, Max: st.Max}
	if st.CI.OK {
		sum.CI = &Interval{Lo: st.CI.Lo, Hi: st.CI.Hi, Confidence: st.CI.Confidence}
	} else {
		sum.CINote = st.CI.Note
	}
	p.Summary = sum
	return p
}

// fitSeries fits the medians of a series against nodes and reads the fits at
// opt.PredictAt. The fits go through the medians, one point per node count,
// so that each size weighs alike and one slow repetition does not pull the
// curve.
func fitSeries(s *ScaleSeries, opt ScaleOptions) {
	var ns, ys []float64
	for _, p := range s.Points {
		if p.Summary != nil {
			ns = append(ns, float64(p.Nodes))
			ys = append(ys, p.Summary.Median)
		}
	}
	if len(ns) < 2 {
		s.NoFit = fmt.Sprintf("measured at %d node %s: a fit needs 2", len(ns), plural(len(ns), "count", "counts"))
		return
	}
	lin := FitLine(ns, ys)
	s.Linear = &lin
	s.Better = FitLinear
	if pow, err := FitPowerLaw(ns, ys); err != nil {
		s.NoPower = err.Error()
	} else if !isFinite(pow.Coefficient) || !isFinite(pow.Exponent) {
		s.NoPower = "the power law's coefficients are not finite numbers"
	} else {
		s.Power = &pow
		if pow.R2 > lin.R2 {
			s.Better = FitPower
		}
	}
	largest := slices.Max(ns)
	for _, n := range opt.PredictAt {
		x := float64(n)
		pr := ScalePrediction{Nodes: n, Factor: x / largest}
		pr.Extrapolation = pr.Factor > opt.ExtrapolationFactor
		// A curve that overflows predicts nothing (and JSON has no infinity).
		if v := lin.At(x); isFinite(v) {
			pr.Linear = &v
		}
		if s.Power != nil {
			if v := s.Power.At(x); isFinite(v) {
				pr.Power = &v
			}
		}
		s.Predictions = append(s.Predictions, pr)
	}
}

// FitLine fits y = a + b·n by least squares (ns need two distinct values).
func FitLine(ns, ys []float64) LinearFit {
	a, b := stat.LinearRegression(ns, ys, nil, false)
	f := LinearFit{Intercept: a, Slope: b}
	f.R2 = rSquared(ys, mapSlice(ns, f.At))
	return f
}

// FitPowerLaw fits y = c·n^k by least squares of ln y on ln n; every n and y
// must be positive.
func FitPowerLaw(ns, ys []float64) (PowerFit, error) {
	lns, lys := make([]float64, len(ns)), make([]float64, len(ys))
	for i := range ns {
		if !(ns[i] > 0) || !(ys[i] > 0) {
			return PowerFit{}, fmt.Errorf("a median of %s at %s nodes: a power law needs positive values", fmtNum(ys[i]), fmtNum(ns[i]))
		}
		lns[i], lys[i] = math.Log(ns[i]), math.Log(ys[i])
	}
	lnC, k := stat.LinearRegression(lns, lys, nil, false)
	f := PowerFit{Coefficient: math.Exp(lnC), Exponent: k}
	f.R2Log = rSquared(lys, mapSlice(lns, func(x float64) float64 { return lnC + k*x }))
	f.R2 = rSquared(ys, mapSlice(ns, f.At))
	return f, nil
}

// rSquared is 1 − SSres/SStot. Values that do not vary leave it undefined
// (0/0); a curve that meets them all is still a perfect fit (1), one that
// misses them explains nothing (0).
func rSquared(ys, fitted []float64) float64 {
	r2 := stat.RSquaredFrom(fitted, ys, nil)
	if isFinite(r2) {
		return r2
	}
	for i := range ys {
		if math.Abs(ys[i]-fitted[i]) > 1e-9*math.Max(1, math.Abs(ys[i])) {
			return 0
		}
	}
	return 1
}

// scaleNotes tells what a reader must know about the inputs.
func scaleNotes(sources []ScaleSource, runs []ScaleRuns) []string {
	var notes []string
	for _, c := range runs {
		if len(c.Sources) > 1 {
			notes = append(notes, fmt.Sprintf("%s, %s, %d nodes: the runs of %d reports are merged as repetitions (%s).",
				c.Scenario, c.Controller, c.Nodes, len(c.Sources), strings.Join(c.Sources, ", ")))
		}
	}
	var commits, machines []string
	dirty := false
	for _, src := range sources {
		v := src.Report.Versions
		commits = appendUnique(commits, shortCommit(v.GitCommit))
		dirty = dirty || v.GitDirty
		m := src.Report.Machine
		machines = appendUnique(machines, fmt.Sprintf("%d cores %s", m.Cores, m.CPUModel))
	}
	if len(commits) > 1 {
		notes = append(notes, fmt.Sprintf("The reports come from %d commits (%s): the curves mix code changes with scale.", len(commits), strings.Join(commits, ", ")))
	}
	if dirty {
		notes = append(notes, "Some reports were made from a dirty tree: their commit does not say exactly what ran.")
	}
	if len(machines) > 1 {
		notes = append(notes, fmt.Sprintf("The reports come from %d machines (%s): the curves mix hardware with scale.", len(machines), strings.Join(machines, "; ")))
	}
	// Controller settings that differ between sizes change the curve too.
	settings := map[string][]string{}
	var names []string
	for _, src := range sources {
		for _, c := range src.Report.Params.Controllers {
			s := fmt.Sprintf("workers %d, qps %g, burst %d", c.Workers, c.QPS, c.Burst)
			if _, ok := settings[c.Name]; !ok {
				names = append(names, c.Name)
			}
			settings[c.Name] = appendUnique(settings[c.Name], s)
		}
	}
	for _, name := range names {
		if len(settings[name]) > 1 {
			notes = append(notes, fmt.Sprintf("%s ran with different settings in different reports: %s.", name, strings.Join(settings[name], "; ")))
		}
	}
	return notes
}

func appendUnique[T comparable](xs []T, x T) []T {
	if slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

// inOrder lists the keys of order by their values.
func inOrder(order map[string]int) []string {
	keys := make([]string, 0, len(order))
	for k := range order {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(order[a], order[b]) })
	return keys
}

func mapSlice(xs []float64, f func(float64) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
