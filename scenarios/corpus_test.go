package scenarios

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The fuzz targets' seed corpora are files in testdata/fuzz/<FuzzName>/, in
// Go's corpus format, written from the tables below by
// `go test -run TestFuzzCorpus -update`: library-* from the embedded
// library, seed-* from inputs that once broke or are tricky. Files the
// fuzzer wrote (hex names) are left alone.

// minimalScenario is a valid scenario with an inline DaemonSet.
const minimalScenario = header

// minimalDaemonSet is a valid apps/v1 manifest.
const minimalDaemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  namespace: kube-system
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: example.com/agent:v1
`

// legacyDaemonSet is an extensions/v1beta1 DaemonSet as old manifests have
// it: no selector, no strategy, a templateGeneration.
const legacyDaemonSet = `apiVersion: extensions/v1beta1
kind: DaemonSet
metadata:
  name: legacy
spec:
  templateGeneration: 3
  template:
    metadata:
      labels: {app: legacy}
    spec:
      containers:
      - name: legacy
        image: example.com/legacy:v1
`

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// tabIndent indents with a tab for every two spaces of indentation.
func tabIndent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		rest := strings.TrimLeft(l, " ")
		lines[i] = strings.Repeat("\t", (len(l)-len(rest))/2) + rest
	}
	return strings.Join(lines, "\n")
}

// aliasBomb is the billion laughs: each level doubles the expansion tenfold.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func withWorkloads(workloads string) string {
	head, _, _ := strings.Cut(minimalScenario, "workloads:\n")
	return head + "workloads:\n" + workloads + "steps:\n- create: {}\n"
}

// loadSeeds are tricky scenario files for FuzzLoad.
var loadSeeds = map[string]string{
	"empty":          "",
	"null":           "null",
	"list":           "[]",
	"unclosed":       "{",
	"header-only":    "apiVersion: dsbench.dev/v1alpha1\nkind: Scenario\n",
	"empty-docs":     "---\n---\n# only comments\n---\n",
	"two-docs":       minimalScenario + "---\n" + minimalScenario,
	"minimal":        minimalScenario,
	"bom":            "\ufeff" + minimalScenario,
	"crlf":           crlf(minimalScenario),
	"tabs":           tabIndent(minimalScenario),
	"tabs-crlf-bom":  "\ufeff" + crlf(tabIndent(minimalScenario)),
	"binary":         "\x00\x01\xff\xfe\x80",
	"control-char":   minimalScenario + "seed: \x01\n",
	"utf16":          "\xff\xfea\x00:\x00 \x001\x00\n\x00",
	"deep-nesting":   "cluster: " + strings.Repeat("[", 500) + strings.Repeat("]", 500) + "\n",
	"self-alias":     "a: &a [*a]",
	"step-alias":     "steps:\n- &s {parallel: [[*s]]}\n",
	"merge-unknown":  "<<: {a: 1}\n<<: [*x]\n",
	"alias-bomb":     aliasBomb(9) + "metadata: {name: *a8}\n",
	"huge-count":     "cluster: {pools: [{name: a, count: 99999999999999999999}]}",
	"path-escape":    "workloads: [{file: ../../etc/passwd}, {file: /etc/passwd}, {file: 'manifests\\seed004-ssd-monitor.yaml'}, {file: manifests/seed004-ssd-monitor.yaml}]",
	"legacy-inline":  "workloads: [{inline: {apiVersion: extensions/v1beta1, kind: DaemonSet, spec: {templateGeneration: 1}}}]",
	"patch-replace":  "steps: [{pause: 1s, update: {patch: {spec: {$patch: replace}}}}]",
	"no-steps":       strings.Split(minimalScenario, "steps:")[0],
	"unknown-fields": strings.Replace(strings.Replace(minimalScenario, "pools:", "pool:", 1), "- create: {}", "- creat: {}\n  rate: 1\n  rat: 2", 1),
	"huge-numbers": "seed: 99999999999999999999999\nrepetitions: 1e400\nhold: 9999999999h\n" +
		strings.Replace(minimalScenario, "count: 10}", "count: 0x7fffffffffffffff}", 1) + "- pause: 1e308s\n  rate: .inf\n",
	"negative-counts": "repetitions: -3\n" + strings.Replace(minimalScenario, "count: 10}", "count: -1}", 1) +
		"- nodes: {action: join, pool: workers, count: -5}\n- nodes: {action: delete, pool: workers, fraction: -0.5}\n",
	"duplicate-keys": strings.Replace(minimalScenario, "metadata: {name: t}", "metadata: {name: t, name: u}\nmetadata: {name: v}", 1) +
		"- create: {}\n  create: {}\n",
	"anchors":                  strings.Replace(minimalScenario, "  - {name: gpus, count: 2}", "  - &pool {name: gpus, count: 2, labels: &l {gpu: 'true'}}\n  - {<<: *pool, name: more, labels: *l}", 1),
	"legacy-extensions":        withWorkloads("- inline:\n" + indent(legacyDaemonSet, "    ")),
	"legacy-apps-v1beta2":      withWorkloads("- inline:\n" + indent(strings.Replace(minimalDaemonSet, "apps/v1", "apps/v1beta2", 1), "    ")),
	"unsupported-apps-v1beta1": withWorkloads("- inline:\n" + indent(strings.Replace(minimalDaemonSet, "apps/v1", "apps/v1beta1", 1), "    ")),
	"placeholders":             withWorkloads("- file: manifests/seed000-coredns-legacy.yaml\n  placeholders:\n    NODESELECT: 'kubernetes.io/os: linux'\n    IMAGE_COREDNS: coredns:1.6.7\n    HOST_ALIASES: |\n      hostAliases:\n      - ip: 10.0.0.10\n        hostnames: [registry.local]\n    unused_lower: x\n"),
	"placeholders-unfilled":    withWorkloads("- file: manifests/seed000-coredns-legacy.yaml\n"),
	"file-and-inline":          withWorkloads("- file: manifests/seed004-ssd-monitor.yaml\n  inline: {apiVersion: apps/v1, kind: DaemonSet}\n- {}\n"),
}

// manifestSeeds are tricky manifests for FuzzManifest, each with the value
// of the HOST_ALIASES placeholder.
var manifestSeeds = map[string][2]string{
	"minimal":                  {minimalDaemonSet, ""},
	"bom":                      {"\ufeff" + minimalDaemonSet, ""},
	"crlf":                     {crlf(minimalDaemonSet), ""},
	"tabs":                     {tabIndent(minimalDaemonSet), ""},
	"tabs-crlf":                {crlf(tabIndent(minimalDaemonSet)), ""},
	"empty":                    {"", ""},
	"empty-docs":               {"---\n---\n# only comments\n---\n", ""},
	"null-doc":                 {"~\n", ""},
	"list-doc":                 {"- a\n- b\n", ""},
	"scalar-doc":               {"just text\n", ""},
	"unclosed":                 {"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: [x\n", ""},
	"binary":                   {"\x00\x01\xff\xfe\x80", ""},
	"control-char":             {minimalDaemonSet + "status: \x01\n", ""},
	"utf16":                    {"\xff\xfea\x00:\x00 \x001\x00\n\x00", ""},
	"no-daemonset":             {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n", ""},
	"no-kind":                  {"apiVersion: apps/v1\nmetadata: {name: x}\n", ""},
	"no-version":               {"kind: DaemonSet\nmetadata: {name: x}\n", ""},
	"wrong-kind":               {strings.Replace(minimalDaemonSet, "kind: DaemonSet", "kind: Daemonset", 1), ""},
	"mapping-type":             {"apiVersion: {a: b}\nkind: [DaemonSet]\n", ""},
	"two-docs":                 {minimalDaemonSet + "---\n" + strings.Replace(minimalDaemonSet, "name: agent\n", "name: other\n", 1), ""},
	"same-twice":               {minimalDaemonSet + "---\n" + minimalDaemonSet, ""},
	"legacy-extensions":        {legacyDaemonSet, ""},
	"legacy-apps-v1beta2":      {strings.Replace(minimalDaemonSet, "apps/v1", "apps/v1beta2", 1), ""},
	"unsupported-apps-v1beta1": {strings.Replace(minimalDaemonSet, "apps/v1", "apps/v1beta1", 1), ""},
	"placeholders": {strings.Replace(strings.Replace(minimalDaemonSet, "example.com/agent:v1", "{IMAGE_COREDNS}", 1),
		"      containers:", "      nodeSelector:\n        {NODESELECT}\n      {HOST_ALIASES}\n      containers:", 1) +
		"        command: [sh, -c, 'echo ${HOME} {NOT_FILLED}']\n# {IN_A_COMMENT}\n", "hostAliases:\n- ip: 10.0.0.10\n  hostnames: [a, b]\n"},
	"placeholder-crlf-value": {strings.Replace(minimalDaemonSet, "      containers:", "      {HOST_ALIASES}\n      containers:", 1), "hostAliases:\r\n- ip: 10.0.0.10\r\n  hostnames: [a]\r\n"},
	"placeholder-nel-value":  {strings.Replace(minimalDaemonSet, "      containers:", "      {HOST_ALIASES}\n      containers:", 1), "hostAliases:\u0085- ip: 10.0.0.10\u2028  hostnames: [a]\n"},
	"duplicate-keys":         {strings.Replace(minimalDaemonSet, "  name: agent\n", "  name: agent\n  name: again\n  labels: {a: b, a: c}\n", 1), ""},
	"anchors": {strings.Replace(strings.Replace(minimalDaemonSet, "matchLabels: {app: agent}", "matchLabels: &labels {app: agent}", 1),
		"labels: {app: agent}", "labels: *labels", 1) + "      - <<: &c {name: extra, image: example.com/extra:v1}\n        name: extra2\n", ""},
	"alias-bomb":       {aliasBomb(9) + minimalDaemonSet, ""},
	"undefined-alias":  {strings.Replace(minimalDaemonSet, "labels: {app: agent}", "labels: *nowhere", 1), ""},
	"huge-numbers":     {minimalDaemonSet + "        ports: [{containerPort: 99999999999999999999}]\n  minReadySeconds: 1e400\n  revisionHistoryLimit: 0x7fffffffffffffff\n", ""},
	"negative-numbers": {minimalDaemonSet + "  minReadySeconds: -5\n  revisionHistoryLimit: -1\n  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: -1, maxSurge: '-10%'}}\n", ""},
	"unknown-fields":   {strings.Replace(strings.Replace(minimalDaemonSet, "containers:", "containres:", 1), "  template:", "  templat: {}\n  template:", 1), ""},
	"quoted-numbers":   {minimalDaemonSet + "        ports: [{containerPort: '80'}]\n        resources: {requests: {cpu: lots}}\n", ""},
	"deep-nesting":     {minimalDaemonSet + "status: " + strings.Repeat("[", 500) + strings.Repeat("]", 500) + "\n", ""},
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}

// corpusFile encodes values as `go test` writes a corpus entry.
func corpusFile(vals ...any) string {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, v := range vals {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		default:
			panic(fmt.Sprintf("corpusFile: %T", v))
		}
	}
	return b.String()
}

// wantCorpora returns the generated corpus files by fuzz target and name.
func wantCorpora(t *testing.T) map[string]map[string]string {
	load := map[string]string{}
	files, err := fs.Glob(library, "library/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no library scenarios: %v", err)
	}
	for _, file := range files {
		data, _ := library.ReadFile(file)
		load["library-"+strings.TrimSuffix(path.Base(file), ".yaml")] = corpusFile(data)
	}
	for name, data := range loadSeeds {
		load["seed-"+name] = corpusFile([]byte(data))
	}
	manifest := map[string]string{}
	files, err = fs.Glob(library, "library/manifests/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no library manifests: %v", err)
	}
	for _, file := range files {
		data, _ := library.ReadFile(file)
		name := "library-" + strings.TrimSuffix(path.Base(file), ".yaml")
		manifest[name] = corpusFile(data, "")
		if strings.Contains(string(data), "{HOST_ALIASES}") {
			manifest[name+"-host-aliases"] = corpusFile(data, "hostAliases:\n- ip: 10.0.0.10\n  hostnames: [registry.local]\n")
		}
	}
	for name, seed := range manifestSeeds {
		manifest["seed-"+name] = corpusFile([]byte(seed[0]), seed[1])
	}
	return map[string]map[string]string{"FuzzLoad": load, "FuzzManifest": manifest}
}

// generated says whether a corpus file is ours rather than the fuzzer's.
func generated(name string) bool {
	return strings.HasPrefix(name, "library-") || strings.HasPrefix(name, "seed-")
}

// TestFuzzCorpus keeps the committed seed corpora in step with the library
// and the tables above; -update rewrites them.
func TestFuzzCorpus(t *testing.T) {
	for target, want := range wantCorpora(t) {
		t.Run(target, func(t *testing.T) {
			dir := filepath.Join("testdata", "fuzz", target)
			got := map[string]string{}
			entries, err := os.ReadDir(dir)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !generated(e.Name()) {
					continue
				}
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				got[e.Name()] = string(data)
			}
			if *update {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for name := range got {
					if _, ok := want[name]; !ok {
						os.Remove(filepath.Join(dir, name))
					}
				}
				for _, name := range slices.Sorted(maps.Keys(want)) {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(want[name]), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s is out of date (run go test -run TestFuzzCorpus -update) (-want +got):\n%s", dir, diff)
			}
		})
	}
}
