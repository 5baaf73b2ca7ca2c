package bench

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsbench/dsbench/bench/oracle"
)

// streamsDir holds the journals TestReplayStreams replays: the scripted ones
// TestStreamsGenerated makes, and those recorded from live runs with
//
//	make mutants MUTANTS_FLAGS="--record /tmp/streams"
//
// and chosen from there (README: the smallest journal that caught each
// broken variant, and the correct controller's smaller ones).
const streamsDir = "testdata/streams"

// scriptedVariants are the journals streamSim makes, named as the runner
// names them: <variant>-scripted-rollout.jsonl.gz.
var scriptedVariants = []string{correctVariantName, "exceed-max-unavailable", "churn-healthy"}

// TestStreamsGenerated makes the scripted journals at 20 nodes and compares
// them, decompressed, with testdata/streams; -update rewrites them. A
// mismatch leaves the new one beside the old as .got.
func TestStreamsGenerated(t *testing.T) {
	for _, v := range scriptedVariants {
		t.Run(v, func(t *testing.T) {
			name := v + "-scripted-rollout.jsonl.gz"
			got := filepath.Join(t.TempDir(), name)
			simStream(t, v, 20, got)
			gotData, err := os.ReadFile(got)
			if err != nil {
				t.Fatal(err)
			}
			want := filepath.Join(streamsDir, name)
			if *update {
				if err := os.WriteFile(want, gotData, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			wantData, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (run go test ./bench -run TestStreamsGenerated -update)", err)
			}
			t.Logf("%s: %d bytes gzipped, %d lines", name, len(gotData), len(gunzipLines(t, gotData)))
			if diff := cmp.Diff(gunzipLines(t, wantData), gunzipLines(t, gotData)); diff != "" {
				_ = os.WriteFile(want+".got", gotData, 0o644)
				t.Errorf("%s differs from the journal the script makes now; new one in %s.got (-want +got):\n%s", want, want, diff)
			}
		})
	}
}

// cleanVariants are the journals that must show no unexpected violation;
// every other variant is a broken one that must show at least one.
var cleanVariants = []string{correctVariantName, string(Ours), string(Upstream)}

// TestReplayStreams replays every journal in testdata/streams: the oracle
// must reproduce exactly the violations the recorded run reported (kind,
// DaemonSet, node, pod, start to the millisecond), a correct controller's
// journal must show no unexpected one, and each broken variant an
// unexpected one (every oracle kind is specific: NotConverged is the
// Core's, never the oracle's). As make mutants' gate, a variant must be
// caught on some scenario, not on each: a targeted scenario may miss it.
func TestReplayStreams(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(streamsDir, "*.jsonl.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no journals in %s: %v", streamsDir, err)
	}
	caught := map[string][]string{} // broken variant -> the journals that caught it
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".jsonl.gz"), func(t *testing.T) {
			h, vs, err := ReplayFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(h.Violations)
			unexpected := 0
			for i := range want {
				if !want[i].Expected {
					unexpected++
				}
				want[i].Expected = false
			}
			if diff := cmp.Diff(want, journalViolations(vs, h), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("replay of %s (%s on %s) differs from the live run (-recorded +replayed):\n%s", file, h.Variant, h.Scenario, diff)
			}
			switch {
			case slices.Contains(cleanVariants, h.Variant):
				if unexpected > 0 {
					t.Errorf("%s: the %s controller shows %d unexpected violations: %+v", file, h.Variant, unexpected, h.Violations)
				}
			case unexpected > 0:
				caught[h.Variant] = append(caught[h.Variant], file)
			default:
				if _, ok := caught[h.Variant]; !ok {
					caught[h.Variant] = nil
				}
				t.Logf("%s: the broken variant %s shows no unexpected violation here", file, h.Variant)
			}
		})
	}
	for variant, files := range caught {
		if len(files) == 0 {
			t.Errorf("the broken variant %s shows no unexpected violation in any journal", variant)
		}
	}
}

// journalViolations states violations as a header does, without Expected.
func journalViolations(vs []oracle.Violation, h JournalHeader) []JournalViolation {
	out := make([]JournalViolation, 0, len(vs))
	for _, v := range vs {
		out = append(out, JournalViolation{Kind: v.Kind, DaemonSet: v.DaemonSet, Node: v.Node, Pod: v.Pod, StartMs: violationOffset(v.Start, h.Start)})
	}
	return out
}

// TestJournalKinds checks that the scripted journals catch each broken
// variant by the kind make mutants expects of it.
func TestJournalKinds(t *testing.T) {
	want := map[string]oracle.Kind{"exceed-max-unavailable": oracle.Overunavailable, "churn-healthy": oracle.UnrequestedDisruption}
	for variant, kind := range want {
		h, _, err := ReplayFile(filepath.Join(streamsDir, variant+"-scripted-rollout.jsonl.gz"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(h.Violations, func(v JournalViolation) bool { return v.Kind == kind && !v.Expected }) {
			t.Errorf("%s: no unexpected %s in %+v", variant, kind, h.Violations)
		}
	}
}

// TestReplayErrors feeds broken journals: each error names the file and
// the line, and nothing panics.
func TestReplayErrors(t *testing.T) {
	lines := gunzipLines(t, tinyJournal(t))
	n := len(lines)
	edit := func(f func([]string) []string) []byte { return gzipLines(t, f(slices.Clone(lines))) }
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"not gzip", []byte("{\"format\":\"dsbench-oracle-journal\"}\n"), "line 1: not a gzip-compressed journal"},
		{"truncated gzip", func() []byte { d := tinyJournal(t); return d[:len(d)*2/3] }(), "unexpected EOF"},
		{"empty", gzipLines(t, nil), "line 1: empty journal"},
		{"newer version", edit(func(l []string) []string {
			l[0] = strings.Replace(l[0], `"version":1`, `"version":2`, 1)
			return l
		}), "line 1: header: version 2 is newer than this reader's 1"},
		{"not a journal", edit(func(l []string) []string { l[0] = `{"format":"something else","version":1}`; return l }), `line 1: header: format "something else"`},
		{"unknown op", edit(func(l []string) []string { return slices.Insert(l, 2, `{"t":0,"op":"teleport"}`) }), `line 3: unknown op "teleport"`},
		{"unknown event kind", edit(func(l []string) []string {
			return slices.Insert(l, 2, `{"t":0,"op":"apply","kind":"Bookmark","node":{"metadata":{"name":"x"}}}`)
		}), `line 3: apply: unknown event kind "Bookmark"`},
		{"no object", edit(func(l []string) []string { return slices.Insert(l, 2, `{"t":0,"op":"apply","kind":"Added"}`) }), "line 3: apply: 0 objects"},
		{"no time", edit(func(l []string) []string { return slices.Insert(l, 2, `{"op":"advance"}`) }), "line 3: advance without a time"},
		{"bad json", edit(func(l []string) []string { return slices.Insert(l, 2, `{"t":0,"op":`) }), "line 3: decoding"},
		{"missing finish", edit(func(l []string) []string { return l[:n-1] }), "the journal ends without a finish"},
		{"after finish", edit(func(l []string) []string { return append(l, `{"t":99,"op":"advance"}`) }), "input after finish"},
		{"lost template", edit(func(l []string) []string {
			for i, s := range l {
				if strings.Contains(s, `"daemonSet":{`) {
					l[i] = strings.Replace(s, `"image":"pause:1"`, `"image":"pause:9"`, 1)
				}
			}
			return l
		}), "the journal lost part of its template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.jsonl.gz")
			if err := os.WriteFile(path, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := ReplayFile(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "line ") {
				t.Fatalf("ReplayFile = %v, want an error naming %s, a line and %q", err, path, tt.want)
			}
		})
	}
}

// FuzzReplay: no journal makes Replay panic, gzip-compressed or not.
func FuzzReplay(f *testing.F) {
	for _, l := range gunzipLines(f, tinyJournal(f)) {
		f.Add([]byte(l + "\n"))
	}
	f.Add([]byte(strings.Join(gunzipLines(f, tinyJournal(f)), "\n")))
	f.Add([]byte(`{"format":"dsbench-oracle-journal","version":1,"start":"2026-01-01T00:00:00Z","oracle":{}}` + "\n" +
		`{"t":-5,"op":"apply","kind":"Deleted","pod":{"metadata":{"name":"p","ownerReferences":[{"uid":"u","controller":true}]}}}` + "\n" +
		`{"t":9223372036854775807,"op":"finish"}`))
	f.Add(tinyJournal(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = Replay(bytes.NewReader(data))
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(data)
		_ = zw.Close()
		_, _, _ = Replay(&buf)
	})
}

// tinyJournal is a journal of a few inputs: a node, a DaemonSet, its pod
// Ready, a harness deletion, a controller restart and the finish.
func tinyJournal(tb testing.TB) []byte {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "tiny.jsonl.gz")
	rec, err := NewJournalRecorder(path, JournalHeader{Scenario: "tiny", Variant: correctVariantName, Oracle: oracleConfig(DefaultGrace(1, 1))})
	if err != nil {
		tb.Fatal(err)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1", CreationTimestamp: metav1.NewTime(scriptT0)}}
	ds := newScriptDS("app", 1, 1)
	ds.ResourceVersion = "2"
	p := simPodFor(ds, "app-1", "n1")
	p.ResourceVersion = "3"
	simReady(p, scriptT0)
	rec.apply(oracle.Event{Time: scriptT0, Kind: oracle.Added, Object: n})
	rec.apply(oracle.Event{Time: scriptT0, Kind: oracle.Added, Object: ds})
	rec.apply(oracle.Event{Time: scriptT0.Add(500e6), Kind: oracle.Added, Object: p})
	rec.advance(scriptT0.Add(1e9))
	rec.requestDeletion("default/app-1")
	rec.controllerStopped()
	rec.controllerStarted(scriptT0.Add(2e9))
	rec.finish(scriptT0.Add(3e9), nil, nil)
	if err := rec.Close(); err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// gunzipLines decompresses a journal into its lines.
func gunzipLines(tb testing.TB, data []byte) []string {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(plain))
	sc.Buffer(nil, maxJournalLine)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func gzipLines(tb testing.TB, lines []string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, l := range lines {
		_, _ = io.WriteString(zw, l+"\n")
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// TestJournalRecorderLeavesNoTemporaries: a finished journal is one file; a
// run that never reached Finish leaves none.
func TestJournalRecorderLeavesNoTemporaries(t *testing.T) {
	dir := t.TempDir()
	done, err := NewJournalRecorder(filepath.Join(dir, "done.jsonl.gz"), JournalHeader{Variant: correctVariantName})
	if err != nil {
		t.Fatal(err)
	}
	done.advance(scriptT0)
	done.finish(scriptT0, nil, nil)
	unfinished, err := NewJournalRecorder(filepath.Join(dir, "unfinished.jsonl.gz"), JournalHeader{Variant: correctVariantName})
	if err != nil {
		t.Fatal(err)
	}
	unfinished.advance(scriptT0)
	for _, r := range []*JournalRecorder{done, unfinished, nil} {
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"done.jsonl.gz"}, names); diff != "" {
		t.Errorf("files left (-want +got):\n%s", diff)
	}
	if _, vs, err := ReplayFile(filepath.Join(dir, "done.jsonl.gz")); err != nil || len(vs) != 0 {
		t.Errorf("ReplayFile = %v, %v; want no violations", vs, err)
	}
}

// A journal of the correct controller on cordon-notready (make mutants,
// 2026-11-24) whose live run reported a StatusMismatch of 0.4 ms: the
// controller's status write, counting a node that had just become
// must-run again, reached the oracle before that node's change did (two
// watch streams), and the node event, earlier in etcd's order, closed it.
// The oracle now retracts such an episode; the replay must find nothing.
func TestStatusWriteAheadOfTheOracleIsRetracted(t *testing.T) {
	h, vs, err := ReplayFile(filepath.Join("testdata", "regressions", "status-write-ahead-of-node-event.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Violations) != 1 || h.Violations[0].Kind != oracle.StatusMismatch {
		t.Fatalf("the journal's live verdict is %+v, want the one StatusMismatch this test is about", h.Violations)
	}
	if len(vs) != 0 {
		t.Errorf("replay found %+v, want nothing: the status write was ahead of the oracle, not wrong", vs)
	}
}

// A journal of the correct controller on cordon-notready (make mutants,
// 2026-11-30) whose live run reported a PodOnIneligibleNode: the scenario
// created the DaemonSet 4 ms after kwok tainted workers-1295 not-ready,
// and the controller's first sight of the DaemonSet paired it with the
// node as it was. The pod came 0.47 s later, within the cache lag. The
// oracle now keeps a node's versions for the cache lag; the replay must
// find nothing.
func TestDaemonSetCreatedBehindANodeChangeIsExcused(t *testing.T) {
	h, vs, err := ReplayFile(filepath.Join("testdata", "regressions", "daemonset-created-behind-a-node-change.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Violations) != 1 || h.Violations[0].Kind != oracle.PodOnIneligibleNode || h.Violations[0].Node != "workers-1295" {
		t.Fatalf("the journal's live verdict is %+v, want the one PodOnIneligibleNode this test is about", h.Violations)
	}
	if len(vs) != 0 {
		t.Errorf("replay found %+v, want nothing: the pod was placed within the cache lag of the node's change", vs)
	}
}
