package reports

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"strings"
)

// htmlPage is the data of report.html.
type htmlPage struct {
	Title       string
	Params      table
	HoldsLine   string
	Invariants  table
	Findings    *table
	Gate        *htmlGate
	Comparison  string // title
	MethodNote  string
	Comparisons []table
	// Floor is the ours/floor comparison, nil when the floor never ran.
	Floor *htmlComparison
	// FloorDirect is the ours-direct/floor comparison, nil unless both ran.
	FloorDirect *htmlComparison
	// Direct is the ours-direct/ours comparison, nil when ours-direct
	// never ran.
	Direct *htmlComparison
	// External shows the external controller, nil when it never ran.
	External    *htmlComparison
	NodeNote    string
	HarnessNote string
	NodeTable   *table
	Harness     *table
	Figures     []htmlFigure
}

type htmlComparison struct {
	Title, Note, MethodNote string
	Tables                  []table
}

// htmlComparisonOf is a comparison of its own section; nil when it has no
// rows (its controller never ran).
func htmlComparisonOf(c Comparison) *htmlComparison {
	if len(c.Rows) == 0 {
		return nil
	}
	return &htmlComparison{Title: c.Title, Note: c.Note, MethodNote: strings.TrimSpace(c.MethodNote()), Tables: c.tables()}
}

type htmlGate struct {
	Verdict     string
	Pass        bool
	Failures    []string
	Warnings    []string
	Regressions *table
	Checks      int
}

type htmlFigure struct {
	Title   string
	Caption string
	Img     template.HTML
}

// html renders report.html: one self-contained file. The only images are
// PNGs embedded as data: URLs; there are no scripts, fonts or stylesheets to fetch.
func (a *analysis) html() ([]byte, error) {
	figs, err := a.figures()
	if err != nil {
		return nil, err
	}
	page := htmlPage{
		Title:       "dsbench report",
		Params:      a.paramsTable(),
		HoldsLine:   a.holdsLine(),
		Invariants:  a.invariantsTable(),
		Comparison:  a.comparison.Title,
		MethodNote:  strings.TrimSpace(a.comparison.MethodNote()),
		Comparisons: a.comparison.tables(),
		NodeNote:    strings.TrimSpace(nodeLatencyNote),
		HarnessNote: strings.TrimSpace(harnessNote),
	}
	page.Floor, page.FloorDirect, page.Direct, page.External = htmlComparisonOf(a.floor), htmlComparisonOf(a.floorDirect), htmlComparisonOf(a.direct), htmlComparisonOf(a.external)
	if t, ok := a.findingsTable(); ok {
		page.Findings = &t
	}
	if t, ok := a.nodeLatencyTable(); ok {
		page.NodeTable = &t
	}
	if t, ok := a.harnessTable(); ok {
		page.Harness = &t
	}
	if a.gate != nil {
		g := &htmlGate{Verdict: a.gate.Verdict(), Pass: a.gate.Pass, Failures: a.gate.Failures, Warnings: a.gate.Warnings, Checks: len(a.gate.Checks)}
		if t, ok := a.gate.regressionTable(); ok {
			g.Regressions = &t
		}
		page.Gate = g
	}
	for _, f := range figs {
		// The tag is built here rather than by the template, whose attribute
		// escaping would turn every '+' of the base64 into "&#43;". The base64
		// alphabet needs no escaping; the title is escaped.
		img := fmt.Sprintf(`<img class="%s" src="data:image/png;base64,%s" alt="%s">`, f.Kind, f.PNG, html.EscapeString(f.Title))
		page.Figures = append(page.Figures, htmlFigure{Title: f.Title, Caption: f.Caption, Img: template.HTML(img)})
	}
	var buf bytes.Buffer
	if err := htmlTemplate.Execute(&buf, page); err != nil {
		return nil, fmt.Errorf("executing HTML template: %w", err)
	}
	return buf.Bytes(), nil
}

var htmlFuncs = template.FuncMap{
	"inc": func(i int) int { return i + 1 },
}

var htmlTemplate = template.Must(template.New("report").Funcs(htmlFuncs).Parse(htmlPageHead + `<h2>Invariants</h2>
<p><strong>Does every invariant hold?</strong> {{.HoldsLine}}</p>
{{template "table" .Invariants}}
{{with .Findings}}<h3>{{.Title}}</h3>{{template "table" .}}{{end}}
{{with .Gate}}
<h2>Against the baseline</h2>
<p>Gate: <span class="{{if .Pass}}pass{{else}}fail{{end}}">{{.Verdict}}</span> ({{len .Failures}} failures, {{len .Warnings}} warnings, {{.Checks}} baseline checks)</p>
{{if or .Failures .Warnings}}<ul>{{range .Failures}}<li class="fail">FAIL: {{.}}</li>{{end}}{{range .Warnings}}<li>warn: {{.}}</li>{{end}}</ul>{{end}}
{{with .Regressions}}<p>Top regressions against the baseline:</p>{{template "table" .}}{{end}}
{{end}}
<h2>{{.Comparison}}</h2>
<p class="notes">{{.MethodNote}}</p>
{{range .Comparisons}}<h3>{{.Title}}</h3>{{template "table" .}}{{end}}
{{with .Floor}}<h2>{{.Title}}</h2><p class="notes">{{.Note}}</p><p class="notes">{{.MethodNote}}</p>{{range .Tables}}<h3>{{.Title}}</h3>{{template "table" .}}{{end}}{{end}}
{{with .FloorDirect}}<h2>{{.Title}}</h2><p class="notes">{{.Note}}</p><p class="notes">{{.MethodNote}}</p>{{range .Tables}}<h3>{{.Title}}</h3>{{template "table" .}}{{end}}{{end}}
{{with .Direct}}<h2>{{.Title}}</h2><p class="notes">{{.Note}}</p><p class="notes">{{.MethodNote}}</p>{{range .Tables}}<h3>{{.Title}}</h3>{{template "table" .}}{{end}}{{end}}
{{with .External}}<h2>{{.Title}}</h2><p class="notes">{{.Note}}</p><p class="notes">{{.MethodNote}}</p>{{range .Tables}}<h3>{{.Title}}</h3>{{template "table" .}}{{end}}{{end}}
{{with .NodeTable}}<h2>Per-node latencies</h2><p class="notes">{{$.NodeNote}}</p>{{template "table" .}}{{end}}
{{with .Harness}}<h2>The harness</h2><p class="notes">{{$.HarnessNote}}</p>{{template "table" .}}{{end}}
<h2>Figures</h2>
{{range .Figures}}<figure>
{{.Img}}
<figcaption>{{.Title}}: {{.Caption}}</figcaption>
</figure>
{{end}}
</body>
</html>
` + htmlTableTemplate))

// htmlPageHead opens report.html and scale.html alike: the document head, the
// title and the parameters table.
const htmlPageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
` + htmlStyle + `</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{template "table" .Params}}
`

// htmlStyle is the stylesheet that report.html and scale.html share.
const htmlStyle = `body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1150px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f2f2f2; }
td.r { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.notes { font-size: 0.85em; color: #555; }
.pass { color: #1a7f37; font-weight: bold; }
.fail { color: #cf222e; font-weight: bold; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
`

// htmlTableTemplate is the "table" that report.html and scale.html share.
const htmlTableTemplate = `{{define "table"}}<table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{$right := .Right}}{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if and (lt $i (len $right)) (index $right $i)}} class="r"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{if .Notes}}<p class="notes">{{range $i, $n := .Notes}}({{inc $i}}) {{$n}}<br>{{end}}</p>{{end}}{{end}}
`
