package reports

import (
	"fmt"
	"strconv"
	"strings"
)

// BenchText renders r in the Go benchmark format read by benchstat: one line
// per successful repetition,
//
//	BenchmarkScenario/<scenario>/controller=<c>/nodes=<n> 1 <v> s/converge <v> s/rollout ...
//
// with the metrics that have a BenchUnit. Only stable file-level configuration
// (goos, goarch, pkg) is written as "key: value" lines, because benchstat puts
// results with different configuration into different tables; versions and the
// commit go into '#' comment lines, which benchstat ignores.
func BenchText(r *Report) string {
	var b strings.Builder
	b.WriteString("# dsbench results in Go benchmark format. Compare two runs with `benchstat old.txt new.txt`,\n")
	b.WriteString("# or ours against upstream within one run with `benchstat -col /controller bench.txt`.\n")
	commit := r.Versions.GitCommit
	if r.Versions.GitDirty {
		commit += " (dirty)"
	}
	fmt.Fprintf(&b, "# schema %s, generated %s, commit %s\n", r.SchemaVersion, r.GeneratedAt.UTC().Format("2006-01-02T15:04:05Z"), commit)
	fmt.Fprintf(&b, "# go %s, kubernetes %s, kwok %s; %d cores, %s memory\n",
		r.Versions.Go, r.Versions.Kubernetes, r.Versions.Kwok, r.Machine.Cores, fmtBytes(float64(r.Machine.MemoryBytes)))
	if os := benchConfigValue(r.Machine.OS); os != "" {
		fmt.Fprintf(&b, "goos: %s\n", os)
	}
	if arch := benchConfigValue(r.Machine.Arch); arch != "" {
		fmt.Fprintf(&b, "goarch: %s\n", arch)
	}
	b.WriteString("pkg: github.com/dsbench/dsbench/bench\n")
	for _, g := range Groups(r) {
		name := fmt.Sprintf("BenchmarkScenario/%s/controller=%s/nodes=%d", benchNameToken(g.Case.Scenario), benchNameToken(g.Controller), g.Case.Nodes)
		for _, run := range g.Runs {
			var fields []string
			for _, mv := range RunMetrics(run) {
				if mv.Metric.BenchUnit == "" || !isFinite(mv.Value) {
					continue
				}
				fields = append(fields, benchValue(mv.Value), mv.Metric.BenchUnit)
			}
			if len(fields) == 0 {
				continue // benchstat rejects a line without measurements
			}
			fmt.Fprintf(&b, "%s 1 %s\n", name, strings.Join(fields, " "))
		}
	}
	return b.String()
}

// benchValue prints v with 10 significant digits, dropping float noise from
// sums (14.299999999999999 -> 14.3).
func benchValue(v float64) string {
	return strconv.FormatFloat(v, 'g', 10, 64)
}

// benchConfigValue keeps a configuration value on one line.
func benchConfigValue(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
}
