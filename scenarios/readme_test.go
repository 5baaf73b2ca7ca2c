package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeHeader is the scenario README step examples are appended to.
const readmeHeader = `apiVersion: dsbench.dev/v1alpha1
kind: Scenario
metadata: {name: readme}
cluster:
  pools:
  - {name: workers, count: 10}
  - {name: ssd, count: 10, labels: {disk: ssd}}
  pods:
    neverReadyImages: [":never-ready$"]
workloads:
- inline:
    apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: agent}
    spec:
      selector: {matchLabels: {app: agent}}
      template:
        metadata: {labels: {app: agent}}
        spec:
          containers: [{name: agent, image: example.com/agent:v1}]
steps:
- create: {}
`

var yamlBlockRE = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestReadmeExamples loads every YAML example of README.md, so that the
// documentation cannot drift from the format.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := yamlBlockRE.FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 10 {
		t.Fatalf("found %d YAML examples in README.md, want at least 10", len(blocks))
	}
	for i, m := range blocks {
		block := m[1]
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			data := block
			if !strings.HasPrefix(block, "apiVersion:") {
				data = readmeHeader + block
			}
			_, warns, err := LoadBytes(fmt.Sprintf("readme-example-%d.yaml", i), []byte(data))
			if err != nil {
				t.Fatalf("example %d:\n%s\nfails:\n%v", i, block, err)
			}
			for _, w := range warns {
				if !strings.Contains(w.Message, "converted to apps/v1") {
					t.Errorf("example %d warns: %s", i, w)
				}
			}
		})
	}
}

// A scenario written from the README alone loads, and still loads when
// scaled to the sizes the README promises.
func TestScenarioWrittenFromReadme(t *testing.T) {
	s, warns, err := Load(filepath.Join("testdata", "readme-written", "user-rollout-under-churn.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(warns) > 0 {
		t.Errorf("warnings: %v", warns)
	}
	for _, n := range []int{100, 1000, 5000} {
		scaled, err := Scale(s, n)
		if err != nil {
			t.Fatalf("Scale(%d): %v", n, err)
		}
		if _, err := Validate(scaled); err != nil {
			t.Errorf("Validate(Scale(%d)): %v", n, err)
		}
	}
}
