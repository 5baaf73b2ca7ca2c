package reports

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Files of a scaling report.
const (
	ScaleJSONFile     = "scale.json"
	ScaleMarkdownFile = "scale.md"
	ScaleHTMLFile     = "scale.html"
)

// RenderScale writes the scaling report into dir (created if needed):
// scale.json, one PNG per scenario and metric, scale.md (which links the
// PNGs) and scale.html (which embeds them), each atomically.
func RenderScale(dir string, s *Scale) error {
	if err := WriteScale(dir, s); err != nil {
		return fmt.Errorf("rendering scaling report: %w", err)
	}
	figs := scaleFigures(s)
	pngs := make([][]byte, len(figs))
	for i, f := range figs {
		c, err := f.plot()
		if err != nil {
			return fmt.Errorf("rendering scaling report: %w", err)
		}
		if pngs[i], err = c.pngData(figWidth); err != nil {
			return fmt.Errorf("rendering scaling report: %w", err)
		}
		if err := writeFileAtomic(filepath.Join(dir, f.File), pngs[i]); err != nil {
			return fmt.Errorf("rendering scaling report: %w", err)
		}
	}
	page, err := scaleHTML(s, figs, pngs)
	if err != nil {
		return fmt.Errorf("rendering scaling report: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, ScaleMarkdownFile), []byte(ScaleMarkdown(s))); err != nil {
		return fmt.Errorf("rendering scaling report: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, ScaleHTMLFile), page); err != nil {
		return fmt.Errorf("rendering scaling report: %w", err)
	}
	return nil
}

// WriteScale writes s to dir/scale.json atomically, creating dir if needed.
func WriteScale(dir string, s *Scale) error {
	if s == nil {
		return fmt.Errorf("writing %s to %s: nil analysis", ScaleJSONFile, dir)
	}
	data, err := marshalJSON(s)
	if err != nil {
		return fmt.Errorf("writing %s to %s: %w", ScaleJSONFile, dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", ScaleJSONFile, err)
	}
	return writeFileAtomic(filepath.Join(dir, ScaleJSONFile), data)
}

// ReadScale reads a scale.json written by WriteScale; another schema
// version is ErrSchemaVersion.
func ReadScale(path string) (*Scale, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scaling report: %w", err)
	}
	var s Scale
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("reading scaling report %s: decoding JSON: %w", path, err)
	}
	if s.SchemaVersion != ScaleSchemaVersion {
		return nil, fmt.Errorf("reading scaling report %s: schemaVersion %q: %w (want %q)", path, s.SchemaVersion, ErrSchemaVersion, ScaleSchemaVersion)
	}
	return &s, nil
}

// scaleFigure is one scenario's metric, all controllers: a table pair in
// scale.md and one plot.
type scaleFigure struct {
	Scenario string
	Metric   string
	Label    string
	Unit     string
	Series   []*ScaleSeries // in Scale.Series order: upstream, ours, ours-direct, floor
	// File is the plot's PNG in the output folder.
	File string
}

// scaleFigures groups the series by scenario and metric (they are sorted
// that way) and names each group's PNG, distinct even where two metric
// names differ only in punctuation.
func scaleFigures(s *Scale) []scaleFigure {
	var figs []scaleFigure
	used := map[string]bool{}
	for i := range s.Series {
		se := &s.Series[i]
		if n := len(figs); n > 0 && figs[n-1].Scenario == se.Scenario && figs[n-1].Metric == se.Metric {
			figs[n-1].Series = append(figs[n-1].Series, se)
			continue
		}
		base := "scale-" + fileSlug(se.Scenario) + "-" + fileSlug(se.Metric)
		name := base + ".png"
		for k := 2; used[name]; k++ {
			name = fmt.Sprintf("%s-%d.png", base, k)
		}
		used[name] = true
		figs = append(figs, scaleFigure{Scenario: se.Scenario, Metric: se.Metric, Label: se.Label, Unit: se.Unit, Series: []*ScaleSeries{se}, File: name})
	}
	return figs
}

// fileSlug keeps lower-case letters and digits, and makes every other run
// of characters one '-'.
func fileSlug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}

const scaleMethodNote = `Each point is the median of a controller's successful repetitions at one node count, with the %s confidence interval of the median by order statistics; it needs at least %d repetitions, and with fewer the range (min to max) stands in its place. ` +
	`Failed runs, and successful runs without the metric (a step that did not converge, CPU not measured), are left out and counted. ` +
	`The fits go through the medians, one point per node count, so that each size weighs alike: linear, a + b·n by least squares, and power law, c·n^k by least squares of ln(cost) on ln(n). ` +
	`The power law's R² is that of its curve against the medians, comparable with the linear fit's; the log-log regression's own R² is in brackets. The better fit is the one with the higher R² (the line on a tie). ` +
	`With two node counts both curves pass through both points and R² is 1 by construction. ` +
	`A prediction beyond a series' largest measured node count extrapolates the curve; beyond %s× it, it is marked "extrapolation": the fits say how cost grew over the sizes measured, not that it keeps growing so.`

func scaleMethodText(s *Scale) string {
	return fmt.Sprintf(scaleMethodNote, pct(s.Confidence), MinCISamples(s.Confidence), fmtNum(s.ExtrapolationFactor))
}

func (s *Scale) paramsTable() table {
	t := table{Header: []string{"parameter", "value"}}
	add := func(k, v string) { t.Rows = append(t.Rows, []string{k, v}) }
	add("schema", s.SchemaVersion)
	add("generated", s.GeneratedAt.UTC().Format("2006-01-02T15:04:05Z07:00"))
	add("reports", fmt.Sprint(len(s.Sources)))
	var nodes []int
	var scenarios, controllers []string
	for _, c := range s.Runs {
		nodes = appendUnique(nodes, c.Nodes)
		scenarios = appendUnique(scenarios, c.Scenario)
		controllers = appendUnique(controllers, c.Controller)
	}
	slices.Sort(nodes)
	add("node counts", joinInts(nodes))
	add("scenarios", strings.Join(scenarios, ", "))
	add("controllers", strings.Join(controllers, ", "))
	add("predictions at", joinInts(s.PredictAt)+" nodes")
	var commits []string
	for _, src := range s.Sources {
		c := shortCommit(src.GitCommit)
		if c == "" {
			c = "unknown"
		}
		if src.GitDirty {
			c += " (dirty)"
		}
		commits = appendUnique(commits, c)
	}
	add("commits", strings.Join(commits, ", "))
	return t
}

func (s *Scale) sourcesTable() table {
	t := table{Header: []string{"report", "generated", "commit", "nodes", "scenarios", "controllers", "runs", "failed"},
		Right: []bool{false, false, false, true, false, false, true, true}}
	for _, src := range s.Sources {
		commit := shortCommit(src.GitCommit)
		if src.GitDirty {
			commit += " (dirty)"
		}
		t.Rows = append(t.Rows, []string{src.Path, src.GeneratedAt.UTC().Format("2006-01-02T15:04:05Z07:00"), commit, joinInts(src.Nodes),
			strings.Join(src.Scenarios, ", "), strings.Join(src.Controllers, ", "), fmt.Sprint(src.RunCount), fmt.Sprint(src.Failed)})
	}
	return t
}

// runsTable counts the runs behind every point; each failed run's message
// is a numbered note.
func (s *Scale) runsTable() table {
	t := table{Header: []string{"scenario", "controller", "nodes", "runs", "failed (left out)", "reports"},
		Right: []bool{false, false, true, true, true, false}}
	for _, c := range s.Runs {
		failed := fmt.Sprint(c.Failed)
		for _, e := range c.Errors {
			t.Notes = append(t.Notes, fmt.Sprintf("%s, %s, %d nodes: %s", c.Scenario, c.Controller, c.Nodes, e))
			failed += fmt.Sprintf(" (%d)", len(t.Notes))
		}
		t.Rows = append(t.Rows, []string{c.Scenario, c.Controller, fmt.Sprint(c.Nodes), fmt.Sprint(c.Runs), failed, strings.Join(c.Sources, ", ")})
	}
	return t
}

// pointsTable lists a figure's points: per controller and node count, the
// median, its CI and the range.
func (f *scaleFigure) pointsTable(s *Scale) table {
	m := Metric{Unit: f.Unit}
	t := table{Header: []string{"controller", "nodes", "runs used", "median (" + unitLabel(m) + ")", pct(s.Confidence) + " CI of the median", "range", "left out"},
		Right: []bool{false, true, true, true, true, true, false}}
	for _, se := range f.Series {
		for _, p := range se.Points {
			used := len(p.Values)
			row := []string{se.Controller, fmt.Sprint(p.Nodes), fmt.Sprintf("%d of %d", used, p.Runs), "—", "—", "—", leftOut(p)}
			if sum := p.Summary; sum != nil {
				row[3] = fmtValue(m, sum.Median)
				if sum.CI != nil {
					row[4] = fmt.Sprintf("[%s, %s]", fmtValue(m, sum.CI.Lo), fmtValue(m, sum.CI.Hi))
				} else {
					row[4] = fmt.Sprintf("— (n < %d)", MinCISamples(s.Confidence))
				}
				row[5] = fmtValue(m, sum.Min) + " – " + fmtValue(m, sum.Max)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

func leftOut(p ScalePoint) string {
	var parts []string
	if p.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", p.Failed))
	}
	if p.Missing > 0 {
		parts = append(parts, fmt.Sprintf("%d without the metric", p.Missing))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

// fitsTable shows each controller's two fits and what they predict.
func (f *scaleFigure) fitsTable(s *Scale) table {
	m := Metric{Unit: f.Unit}
	header := []string{"controller", "fit", "curve (n = nodes)", "R²"}
	right := []bool{false, false, false, true}
	for _, n := range s.PredictAt {
		header = append(header, fmt.Sprintf("at %d nodes", n))
		right = append(right, true)
	}
	t := table{Header: header, Right: right}
	for _, se := range f.Series {
		blank := func(row []string) []string {
			for range s.PredictAt {
				row = append(row, "—")
			}
			return row
		}
		if se.Linear == nil {
			t.Rows = append(t.Rows, blank([]string{se.Controller, "none", se.NoFit, "—"}))
			continue
		}
		twoSizes := ""
		if len(se.MeasuredNodes()) == 2 {
			t.Notes = append(t.Notes, fmt.Sprintf("%s: 2 node counts; any line or power law passes through both, so R² is 1 by construction.", se.Controller))
			twoSizes = fmt.Sprintf(" (%d)", len(t.Notes))
		}
		better := func(kind string) string {
			if se.Better == kind {
				return kind + " (better R²)"
			}
			return kind
		}
		row := []string{se.Controller, better(FitLinear), fmtLinear(m, *se.Linear, se), fmtR2(se.Linear.R2) + twoSizes}
		for _, pr := range se.Predictions {
			row = append(row, fmtPrediction(m, pr, pr.Linear))
		}
		t.Rows = append(t.Rows, row)
		if se.Power == nil {
			t.Rows = append(t.Rows, blank([]string{se.Controller, FitPower, "none: " + se.NoPower, "—"}))
			continue
		}
		row = []string{se.Controller, better(FitPower), fmtPower(m, *se.Power),
			fmt.Sprintf("%s [%s]%s", fmtR2(se.Power.R2), fmtR2(se.Power.R2Log), twoSizes)}
		for _, pr := range se.Predictions {
			row = append(row, fmtPrediction(m, pr, pr.Power))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func fmtR2(r2 float64) string { return strconv.FormatFloat(r2, 'f', 3, 64) }

// fmtLinear prints a + b·n. A term that is rounding noise next to the
// costs measured (below 1e-9 of the largest, at the largest node count)
// prints as 0, not as 3.55e-15.
func fmtLinear(m Metric, f LinearFit, se *ScaleSeries) string {
	largest, nodes := 0.0, 1.0
	for _, p := range se.Points {
		if p.Summary != nil {
			largest, nodes = max(largest, math.Abs(p.Summary.Median)), max(nodes, float64(p.Nodes))
		}
	}
	term := func(v, scale float64) string {
		if math.Abs(v)*scale < 1e-9*largest {
			return "0"
		}
		return fmtValue(m, v)
	}
	sign, b := "+", f.Slope
	if b < 0 {
		sign, b = "-", -b
	}
	return fmt.Sprintf("%s %s %s·n", term(f.Intercept, 1), sign, term(b, nodes))
}

func fmtPower(m Metric, f PowerFit) string {
	return fmt.Sprintf("%s·n^%s", fmtValue(m, f.Coefficient), strconv.FormatFloat(f.Exponent, 'f', 3, 64))
}

// fmtPrediction prints a fit's value at pr.Nodes, marked when it is an
// extrapolation or a cost below zero, which no curve may mean.
func fmtPrediction(m Metric, pr ScalePrediction, v *float64) string {
	if v == nil {
		return "—"
	}
	v0 := *v
	if m.Unit == "" {
		v0 = math.Round(v0) // a predicted count is a whole number
	}
	s := fmtValue(m, v0)
	var marks []string
	if *v < 0 {
		marks = append(marks, "negative: the line does not hold here")
	}
	if pr.Extrapolation {
		marks = append(marks, "extrapolation, ×"+fmtNum(math.Round(pr.Factor*10)/10))
	}
	if len(marks) > 0 {
		s += " (" + strings.Join(marks, "; ") + ")"
	}
	return s
}

// ScaleMarkdown renders scale.md.
func ScaleMarkdown(s *Scale) string {
	var b strings.Builder
	b.WriteString("# dsbench scaling report\n\n")
	b.WriteString(s.paramsTable().markdown(""))
	b.WriteString(scaleMethodText(s) + "\n\n")
	b.WriteString("## Reports\n\n")
	b.WriteString(s.sourcesTable().markdown(""))
	b.WriteString("## Runs per node count\n\n")
	b.WriteString(s.runsTable().markdown(""))
	if len(s.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	scenario := ""
	for _, f := range scaleFigures(s) {
		if f.Scenario != scenario {
			scenario = f.Scenario
			fmt.Fprintf(&b, "## %s\n\n", scenario)
		}
		fmt.Fprintf(&b, "### %s\n\n", f.Label)
		b.WriteString(f.pointsTable(s).markdown(""))
		b.WriteString(f.fitsTable(s).markdown(""))
		fmt.Fprintf(&b, "![%s — %s](%s)\n\n", f.Label, f.Scenario, f.File)
	}
	return b.String()
}

type scaleHTMLPage struct {
	Title      string
	Params     table
	MethodNote string
	Sources    table
	Runs       table
	Notes      []string
	Scenarios  []scaleHTMLScenario
}

type scaleHTMLScenario struct {
	Name    string
	Metrics []scaleHTMLMetric
}

type scaleHTMLMetric struct {
	Label   string
	Points  table
	Fits    table
	Img     template.HTML
	Caption string
}

const scaleCaption = "Median of the successful repetitions at each node count; bars: the 95 % CI of the median where there are enough repetitions, else their range (min to max); lines: each controller's better fit (by R²), over the node counts measured."

// scaleHTML renders scale.html, self-contained as report.html is: the
// plots are embedded PNGs.
func scaleHTML(s *Scale, figs []scaleFigure, pngs [][]byte) ([]byte, error) {
	page := scaleHTMLPage{Title: "dsbench scaling report", Params: s.paramsTable(), MethodNote: scaleMethodText(s),
		Sources: s.sourcesTable(), Runs: s.runsTable(), Notes: s.Notes}
	for i, f := range figs {
		if n := len(page.Scenarios); n == 0 || page.Scenarios[n-1].Name != f.Scenario {
			page.Scenarios = append(page.Scenarios, scaleHTMLScenario{Name: f.Scenario})
		}
		title := f.Label + " — " + f.Scenario
		// As in report.html: built here, since the template would escape
		// the base64's '+'.
		img := fmt.Sprintf(`<img class="scale" src="data:image/png;base64,%s" alt="%s">`, base64.StdEncoding.EncodeToString(pngs[i]), html.EscapeString(title))
		sc := &page.Scenarios[len(page.Scenarios)-1]
		sc.Metrics = append(sc.Metrics, scaleHTMLMetric{Label: f.Label, Points: f.pointsTable(s), Fits: f.fitsTable(s),
			Img: template.HTML(img), Caption: strings.Replace(scaleCaption, "95 %", pct(s.Confidence), 1)})
	}
	var buf bytes.Buffer
	if err := scaleHTMLTemplate.Execute(&buf, page); err != nil {
		return nil, fmt.Errorf("executing HTML template: %w", err)
	}
	return buf.Bytes(), nil
}

var scaleHTMLTemplate = template.Must(template.New("scale").Funcs(htmlFuncs).Parse(htmlPageHead + `<p class="notes">{{.MethodNote}}</p>
<h2>Reports</h2>
{{template "table" .Sources}}
<h2>Runs per node count</h2>
{{template "table" .Runs}}
{{with .Notes}}<h2>Notes</h2><ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Scenarios}}<h2>{{.Name}}</h2>
{{range .Metrics}}<h3>{{.Label}}</h3>
{{template "table" .Points}}
{{template "table" .Fits}}
<figure>
{{.Img}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}{{end}}
</body>
</html>
` + htmlTableTemplate))

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
