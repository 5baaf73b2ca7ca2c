package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

func TestJudgeMutantRun(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	fault := t0.Add(3 * time.Second)
	tests := []struct {
		name  string
		run   reports.Run
		fault time.Time
		want  string // cellText
	}{
		{"caught by a specific kind, timed from the fault",
			reports.Run{Outcome: reports.OutcomeFailed, Violations: []reports.Violation{
				{Kind: "NotConverged", Start: t0.Add(time.Second)},
				{Kind: "Oversurge", Start: t0.Add(5 * time.Second)},
				{Kind: "MissingPod", Start: t0.Add(9 * time.Second)},
			}}, fault, "Oversurge +2.0s"},
		{"a violation before the fault is not a catch",
			reports.Run{Outcome: reports.OutcomeFailed, Violations: []reports.Violation{{Kind: "Oversurge", Start: t0}}},
			fault, "**missed** (Oversurge before any fault)"},
		{"a violation without any fault is not a catch",
			reports.Run{Outcome: reports.OutcomeFailed, Violations: []reports.Violation{{Kind: "Oversurge", Start: t0}}},
			time.Time{}, "**missed** (Oversurge before any fault)"},
		{"expected violations never count",
			reports.Run{Outcome: reports.OutcomeOK, Violations: []reports.Violation{{Kind: "MissingPod", Start: t0, Expected: true}}},
			fault, "**missed**"},
		{"a timeout alone is no catch",
			reports.Run{Outcome: reports.OutcomeFailed, Violations: []reports.Violation{{Kind: string(scenarios.NotConverged), Start: t0}}},
			fault, "missed (timeout only)"},
		{"a variant that never acted wrongly",
			reports.Run{Outcome: reports.OutcomeOK}, time.Time{}, "missed (no fault)"},
		{"a step that timed out is a timeout",
			reports.Run{Outcome: reports.OutcomeOK, Steps: []reports.Step{{Converged: false}}}, fault, "missed (timeout only)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := judgeMutantRun("v", tc.run, tc.fault)
			if got := cellText(c, true); got != tc.want {
				t.Errorf("cell %q, want %q (%+v)", got, tc.want, c)
			}
		})
	}
}

func TestMutantVerdict(t *testing.T) {
	cells := []mutantCell{
		{Variant: "a", Scenario: "s1", Faulted: true, FaultToCatch: -1, Outcome: reports.OutcomeOK},
		{Variant: "a", Scenario: "s2", Faulted: true, FaultToCatch: 1.5, Caught: true, Kind: "DuplicatePods", Outcome: reports.OutcomeFailed},
		{Variant: "b", Scenario: "s1", Faulted: true, FaultToCatch: -1, Timeouts: 1, Outcome: reports.OutcomeFailed},
		{Variant: correctVariant, Scenario: "s1", Outcome: reports.OutcomeOK},
		{Variant: correctVariant, Scenario: "s2", Caught: true, Kind: "MissingPod", Outcome: reports.OutcomeOK},
	}
	got := strings.Join(mutantVerdict(cells), "; ")
	for _, want := range []string{"not clean on s2", "b was caught by no scenario"} {
		if !strings.Contains(got, want) {
			t.Errorf("verdict %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "a was caught by no") || strings.Contains(got, "clean on s1") {
		t.Errorf("verdict %q blames a caught variant or a clean run", got)
	}
	table := mutantTable(cells)
	for _, want := range []string{"| variant | s1 | s2 |", "| a | **missed** | DuplicatePods +1.5s |", "| b | missed (timeout only) | · |", "| correct | clean | **NOT CLEAN** (MissingPod, 0 timeouts) |"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestFirstFault(t *testing.T) {
	dir := t.TempDir()
	if got, err := firstFault(filepath.Join(dir, "none")); err != nil || !got.IsZero() {
		t.Fatalf("absent file: %v, %v; want zero, nil", got, err)
	}
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("2026-11-24T12:00:05.5Z surge-all later\n2026-11-24T12:00:01Z surge-all first\n"), 0o644)
	got, err := firstFault(p)
	if err != nil || !got.Equal(time.Date(2026, 11, 24, 12, 0, 1, 0, time.UTC)) {
		t.Fatalf("firstFault = %v, %v; want 12:00:01", got, err)
	}
	os.WriteFile(p, []byte("garbage\n"), 0o644)
	if _, err := firstFault(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("bad line: error %v, want one naming the file", err)
	}
}

// Every variant the command knows must target scenarios of the library.
func TestMutantTargetsExist(t *testing.T) {
	lib := map[string]bool{}
	for _, n := range scenarios.Library() {
		lib[n] = true
	}
	for _, m := range mutantTargets {
		for _, sc := range m.scenarios {
			if !lib[sc] {
				t.Errorf("%s targets %q, which is not a library scenario", m.name, sc)
			}
		}
	}
}
