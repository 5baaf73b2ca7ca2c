package kwok

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDiagnoseOfAClusterThatIsNotThere(t *testing.T) {
	etcd := `{"level":"info","msg":"ok"}
{"level":"warn","msg":"apply request took too long","took":"2.5s"}
{"level":"info","msg":"ok"}
`
	apiserver := "I1125 12:00:00.000000 1 a.go:1] fine\n" +
		"W1125 12:00:01.000000 1 a.go:1] slow watch\n" +
		"E1125 12:00:02.000000 1 a.go:1] \"Unhandled Error\" err=\"timeout\"\n" +
		"Error: not a klog line\n"
	c := clusterWithLogs(t, t.TempDir(), map[string]string{"etcd.log": etcd, "kube-apiserver.log": apiserver})
	got := c.Diagnose(context.Background())
	for _, want := range []string{
		"readyz:",                  // no kubeconfig: said, not a panic
		"cpu pressure:",            // the machine's side, known or not
		"etcd's last warnings (1)", // only the warn line
		"apply request took too long",
		"kube-apiserver's last warnings (2)",
		"slow watch",
		`err="timeout"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Diagnose lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "fine") || strings.Contains(got, "not a klog line") {
		t.Errorf("Diagnose kept a line that is no warning:\n%s", got)
	}
}

func TestLastWarningsKeepsTheLastN(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	var b strings.Builder
	for i := range 20 {
		b.WriteString("W1125 12:00:00.000000 1 a.go:1] warning " + string(rune('a'+i)) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := lastWarnings(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !strings.HasSuffix(got[0], "warning r") || !strings.HasSuffix(got[2], "warning t") {
		t.Errorf("lastWarnings = %q, want the last 3 (r, s, t)", got)
	}
}
