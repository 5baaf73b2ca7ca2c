package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// The seed corpora live in testdata/fuzz/<FuzzName>/ (see corpus_test.go),
// so that `go test` replays them and inputs the fuzzer found stay beside them.

// fuzzDeadline bounds one input: anything slower is a hang in the making
// (the inputs are kilobytes; the library loads in milliseconds).
const fuzzDeadline = 5 * time.Second

// libraryFS is the embedded library under the paths scenarios use, plus the
// given files, for a loader that reads no disk.
func libraryFS(files map[string][]byte) fstest.MapFS {
	mem := fstest.MapFS{}
	manifests, _ := fs.Glob(library, "library/manifests/*.yaml")
	for _, m := range manifests {
		data, _ := library.ReadFile(m)
		mem[m] = &fstest.MapFile{Data: data}
	}
	for name, data := range files {
		mem[name] = &fstest.MapFile{Data: data}
	}
	return mem
}

// FuzzLoad feeds arbitrary bytes to the loader as a scenario file: it must
// never panic or hang, whatever it rejects comes with a well-formed error,
// and whatever it accepts must validate, scale and copy.
func FuzzLoad(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "library/fuzz.yaml"
		start := time.Now()
		s, warns, err := LoadFS(libraryFS(map[string][]byte{name: data}), name)
		if d := time.Since(start); d > fuzzDeadline {
			t.Fatalf("loading took %v", d)
		}
		checkWarnings(t, warns)
		if err != nil {
			checkErrors(t, err, map[string][]byte{name: data}, "")
			return
		}
		if _, err := Validate(s); err != nil {
			t.Fatalf("Load accepted what Validate rejects: %v", err)
		}
		if scaled, err := Scale(s, 1000); err == nil {
			Validate(scaled)
		}
		s.DeepCopy()
	})
}

// manifestScenario is a valid scenario around the fuzzed manifest. Its
// placeholders are those of the library's manifests, with HOST_ALIASES (on a
// line of its own in the coredns manifest) fuzzed too: multi-line values
// shift lines.
const manifestScenario = `apiVersion: dsbench.dev/v1alpha1
kind: Scenario
metadata: {name: fuzz}
cluster:
  pools:
  - {name: workers, count: 3, labels: {kubernetes.io/os: linux, disk: ssd, disktype: ssd}}
placeholders:
  NODESELECT: "kubernetes.io/os: linux"
  IMAGE_COREDNS: coredns:1.6.7
  HOST_ALIASES: %s
workloads:
- file: manifests/fuzz.yaml
steps:
- create: {}
`

// FuzzManifest feeds arbitrary bytes to the loader as a manifest file that a
// scenario references, the path of every seed manifest (placeholders, tabs,
// legacy apiVersions): it must never panic or hang, and every error must
// name the file, the line and the field.
func FuzzManifest(f *testing.F) {
	f.Fuzz(func(t *testing.T, manifest []byte, hostAliases string) {
		const scenario, file = "library/fuzz.yaml", "library/manifests/fuzz.yaml"
		// Go's ASCII escapes are YAML's too; a raw control character in
		// the value would only break the scenario file.
		sc := fmt.Appendf(nil, manifestScenario, strconv.QuoteToASCII(hostAliases))
		files := map[string][]byte{scenario: sc, file: manifest}
		start := time.Now()
		s, warns, err := LoadFS(libraryFS(files), scenario)
		if d := time.Since(start); d > fuzzDeadline {
			t.Fatalf("loading took %v", d)
		}
		checkWarnings(t, warns)
		if err != nil {
			checkErrors(t, err, files, "workloads[0]")
			return
		}
		if len(s.DaemonSets()) == 0 {
			t.Fatal("loaded a manifest without a DaemonSet")
		}
		for _, ds := range s.DaemonSets() {
			if ds.APIVersion != "apps/v1" || ds.Kind != "DaemonSet" {
				t.Errorf("DaemonSet %s loaded as %s %s, want apps/v1", Ref(ds), ds.APIVersion, ds.Kind)
			}
		}
		if _, err := Validate(s); err != nil {
			t.Fatalf("Load accepted what Validate rejects: %v", err)
		}
		s.DeepCopy()
	})
}

// checkErrors checks the shape of a loading error: a *ValidationError whose
// every entry has a message and a file, a line within that file when it is
// one of files, and a line for invalid YAML unless the bytes cannot be read
// as text at all. With a path prefix, every entry must concern a field under
// it and name one of files and a line: the input is all there is to blame.
func checkErrors(t *testing.T, err error, files map[string][]byte, prefix string) {
	t.Helper()
	verr, ok := errors.AsType[*ValidationError](err)
	if !ok {
		t.Fatalf("error %T, want *ValidationError: %v", err, err)
	}
	if len(verr.Errors) == 0 {
		t.Fatal("a *ValidationError without errors")
	}
	for _, e := range verr.Errors {
		switch {
		case strings.TrimSpace(e.Message) == "":
			t.Errorf("error without a message: %#v", e)
		case e.Pos.File == "":
			t.Errorf("error names no file: %v", e)
		case e.Pos.Line == 0 && e.Pos.Column != 0:
			t.Errorf("error has a column but no line: %v", e)
		case e.Pos.Line == 0 && strings.HasPrefix(e.Message, "invalid YAML") && !unreadable(e.Message):
			t.Errorf("syntax error names no line: %v", e)
		}
		data, known := files[e.Pos.File]
		if known && e.Pos.Line > lineCount(data) {
			t.Errorf("error names line %d of a file of %d lines: %v", e.Pos.Line, lineCount(data), e)
		}
		if prefix == "" {
			continue
		}
		switch {
		case !known:
			t.Errorf("error names %q, not a file the scenario reads: %v", e.Pos.File, e)
		case !strings.HasPrefix(e.Path, prefix):
			t.Errorf("error is not filed under %s: %v", prefix, e)
		case e.Pos.Line == 0 && !unreadable(e.Message):
			t.Errorf("error names no line: %v", e)
		}
	}
}

// unreadable says whether a message is about bytes yaml.v3 could not read
// as text at all (UTF-16 input), where no line can be told.
func unreadable(msg string) bool {
	return strings.Contains(msg, "UTF-16") || strings.Contains(msg, "surrogate") ||
		strings.Contains(msg, "input error") || strings.Contains(msg, "parser failed")
}

func lineCount(data []byte) int { return bytes.Count(data, []byte("\n")) + 1 }

func checkWarnings(t *testing.T, warns []Warning) {
	t.Helper()
	for _, w := range warns {
		if w.Message == "" || w.Pos.File == "" {
			t.Errorf("warning without a message or a file: %#v", w)
		}
	}
}
