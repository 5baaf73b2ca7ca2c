// Package reports defines the dsbench report schema (report.json, see README.md),
// the statistics over repetitions (median CI, Mann-Whitney U, bootstrap ratio CI),
// the baseline gate, and the rendered outputs: report.md, report.html, bench.txt.
package reports
