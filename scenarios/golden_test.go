package scenarios

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// checkGolden compares got with the golden file. On a mismatch it writes got
// next to it as <golden>.got, so that a diff tool can show both.
func checkGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		if err := os.WriteFile(golden+".got", []byte(got), 0o644); err != nil {
			t.Error(err)
		}
		t.Errorf("%s mismatch (-want +got), output written to %s.got:\n%s", golden, golden, diff)
	} else {
		os.Remove(golden + ".got")
	}
}

// renderLoad renders the outcome of Load as the golden files store it.
func renderLoad(s *Scenario, warns []Warning, err error) string {
	var b strings.Builder
	var verr *ValidationError
	switch {
	case errors.As(err, &verr):
		b.WriteString("errors:\n")
		for _, e := range verr.Errors {
			b.WriteString("  " + e.Error() + "\n")
		}
	case err != nil:
		b.WriteString("unexpected error type: " + err.Error() + "\n")
	case s != nil:
		b.WriteString("loaded " + s.Metadata.Name + "\n")
	}
	if len(warns) > 0 {
		b.WriteString("warnings:\n")
		for _, w := range warns {
			b.WriteString("  " + w.String() + "\n")
		}
	}
	return b.String()
}

func TestInvalidGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no test cases in testdata/invalid")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			s, warns, err := Load(file)
			if err == nil {
				t.Errorf("Load(%s) succeeded, want a *ValidationError", file)
			} else if _, ok := errors.AsType[*ValidationError](err); !ok {
				t.Errorf("Load(%s) error is %T, want *ValidationError", file, err)
			}
			checkGolden(t, strings.TrimSuffix(file, ".yaml")+".golden", renderLoad(s, warns, err))
		})
	}
}
