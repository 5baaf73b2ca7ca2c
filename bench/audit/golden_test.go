package audit

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden checks the report of each testdata/*.log, logs in the format
// kube-apiserver writes, against testdata/*.golden: failover.log is a crash
// and a graceful handover among three replicas; overlap.log the same with a
// deposed leader's late deletes and a write long after a last renewal.
func TestGolden(t *testing.T) {
	logs, err := filepath.Glob(filepath.Join("testdata", "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no testdata/*.log: %v", err)
	}
	for _, path := range logs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			log, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Check(Config{LeaseNamespace: "dsbench-system"}, log.Events)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, rep)
			got := []byte(rep.String())
			golden := strings.TrimSuffix(path, ".log") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden (run with -update to create it): %v", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				_ = os.WriteFile(golden+".got", got, 0o644)
				t.Errorf("%s (-want +got), written to %s.got; rerun with -update if intended:\n%s", golden, golden, diff)
			}
		})
	}
}
