package scenarios

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// header is a valid scenario without steps; tests append theirs.
const header = `apiVersion: dsbench.dev/v1alpha1
kind: Scenario
metadata: {name: t}
cluster:
  pools:
  - {name: workers, count: 10}
  - {name: gpus, count: 2}
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
          containers: [{name: c, image: example.com/agent:v1}]
steps:
- create: {}
`

func dur(d time.Duration) Duration { return Duration{d} }

// ignoreNumbering leaves Index and Path out of step comparisons.
var ignoreNumbering = cmpopts.IgnoreFields(Step{}, "Index", "Path")

func TestDecodeSteps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps string
		want  []Step
	}{{
		name:  "nodes join at a rate",
		steps: "- nodes: {action: join, pool: workers, count: 5}\n  rate: 2.5\n  name: grow\n",
		want:  []Step{{Name: "grow", Rate: 2.5, Nodes: &NodesStep{Action: NodeJoin, NodeTarget: NodeTarget{Pool: "workers", Count: 5}}}},
	}, {
		name:  "labels over a duration",
		steps: "- labels: {pool: workers, selector: 'disk=ssd', fraction: 0.5, set: {disk: hdd}, remove: [old]}\n  duration: 1m30s\n",
		want: []Step{{Duration: dur(90 * time.Second), Labels: &LabelsStep{
			NodeTarget: NodeTarget{Pool: "workers", Selector: "disk=ssd", Fraction: 0.5},
			Set:        map[string]string{"disk": "hdd"}, Remove: []string{"old"},
		}}},
	}, {
		name:  "taints as strings and as mappings",
		steps: "- taints:\n    count: 1\n    add: [\"a=b:NoSchedule\", {key: c, effect: NoExecute}]\n    remove: [d, \"e:PreferNoSchedule\"]\n",
		want: []Step{{Taints: &TaintsStep{
			NodeTarget: NodeTarget{Count: 1},
			Add:        []corev1.Taint{{Key: "a", Value: "b", Effect: corev1.TaintEffectNoSchedule}, {Key: "c", Effect: corev1.TaintEffectNoExecute}},
			Remove:     []corev1.Taint{{Key: "d"}, {Key: "e", Effect: corev1.TaintEffectPreferNoSchedule}},
		}}},
	}, {
		name:  "evict gets the default NoExecute taint",
		steps: "- evict: {pool: gpus, count: 1}\n- evict: {pool: gpus, count: 1, taint: {key: maintenance}}\n",
		want: []Step{
			{Evict: &EvictStep{NodeTarget: NodeTarget{Pool: "gpus", Count: 1}, Taint: &corev1.Taint{Key: DefaultEvictTaintKey, Effect: corev1.TaintEffectNoExecute}}},
			{Evict: &EvictStep{NodeTarget: NodeTarget{Pool: "gpus", Count: 1}, Taint: &corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}}},
		},
	}, {
		name:  "cordon, uncordon, notReady, ready",
		steps: "- cordon: {count: 2}\n- markNotReady: {pool: gpus, fraction: 1}\n- uncordon: {count: 2}\n- markReady: {pool: gpus, fraction: 1}\n",
		want: []Step{
			{Cordon: &NodeTarget{Count: 2}},
			{MarkNotReady: &NodeTarget{Pool: "gpus", Fraction: 1}},
			{Uncordon: &NodeTarget{Count: 2}},
			{MarkReady: &NodeTarget{Pool: "gpus", Fraction: 1}},
		},
	}, {
		name:  "bare pause and waitConverged",
		steps: "- pause: 1.5s\n- waitConverged:\n",
		want: []Step{
			{Pause: &Duration{1500 * time.Millisecond}},
			{WaitConverged: &WaitStep{Timeout: dur(DefaultWaitTimeout)}},
		},
	}, {
		name: "update, strategy and rollback",
		steps: `- update: {daemonSet: agent, image: example.com/agent:v2, env: {A: "1"}}
- update:
    daemonSet: default/agent
    patch: {spec: {template: {metadata: {annotations: {x: "y"}}}}}
- strategy: {daemonSet: agent, maxUnavailable: 0, maxSurge: 10%, minReadySeconds: 3}
- rollback: {daemonSet: agent}
- rollback: {daemonSet: agent, toRevision: 1}
`,
		want: []Step{
			{Update: &UpdateStep{DaemonSet: "agent", Image: "example.com/agent:v2", Env: map[string]string{"A": "1"}}},
			{Update: &UpdateStep{DaemonSet: "default/agent", Patch: map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{"x": "y"}}}}}}},
			{Strategy: &StrategyStep{DaemonSet: "agent", MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromString("10%")), MinReadySeconds: ptr.To[int32](3)}},
			{Rollback: &RollbackStep{DaemonSet: "agent"}},
			{Rollback: &RollbackStep{DaemonSet: "agent", ToRevision: 1}},
		},
	}, {
		name:  "pods, controller, delete with defaults",
		steps: "- pods: {action: fail, daemonSet: agent, pool: workers, count: 3}\n- controller: {action: restart, downtime: 5s}\n- delete: {daemonSet: agent}\n",
		want: []Step{
			{Pods: &PodsStep{Action: PodFail, DaemonSet: "agent", NodeTarget: NodeTarget{Pool: "workers", Count: 3}}},
			{Controller: &ControllerStep{Action: ControllerRestart, Downtime: dur(5 * time.Second)}},
			{Delete: &DeleteStep{DaemonSet: "agent", Cascade: CascadeBackground}},
		},
	}, {
		name: "parallel groups and expectations",
		steps: `- parallel:
  - - update: {daemonSet: agent, image: v2}
    - waitConverged: {timeout: 1m, timeoutPerNode: 10ms}
      expect: [{violation: NotConverged, optional: true}]
  - - nodes: {action: replace, pool: workers, count: 2}
`,
		want: []Step{{Parallel: [][]Step{
			{
				{Update: &UpdateStep{DaemonSet: "agent", Image: "v2"}},
				{WaitConverged: &WaitStep{Timeout: dur(time.Minute), TimeoutPerNode: dur(10 * time.Millisecond)}, Expect: []Expectation{{Violation: NotConverged, Optional: true}}},
			},
			{{Nodes: &NodesStep{Action: NodeReplace, NodeTarget: NodeTarget{Pool: "workers", Count: 2}}}},
		}}},
	}, {
		name:  "anchors, aliases and merge keys",
		steps: "- &grow {nodes: {action: join, pool: workers, count: 1}}\n- *grow\n- <<: *grow\n  rate: 1\n",
		want: []Step{
			{Nodes: &NodesStep{Action: NodeJoin, NodeTarget: NodeTarget{Pool: "workers", Count: 1}}},
			{Nodes: &NodesStep{Action: NodeJoin, NodeTarget: NodeTarget{Pool: "workers", Count: 1}}},
			{Rate: 1, Nodes: &NodesStep{Action: NodeJoin, NodeTarget: NodeTarget{Pool: "workers", Count: 1}}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := LoadBytes("t.yaml", []byte(header+tc.steps))
			if err != nil {
				t.Fatalf("LoadBytes: %v", err)
			}
			if diff := cmp.Diff(tc.want, s.Steps[1:], ignoreNumbering); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeCluster(t *testing.T) {
	data := `apiVersion: dsbench.dev/v1alpha1
kind: Scenario
metadata: {name: cluster, description: d, tags: [a, b]}
seed: -7
repetitions: 3
cluster:
  nodes: 12
  pools:
  - name: workers
    namePrefix: w
    count: 10
    labels: {disk: ssd, "node-role.kubernetes.io/worker": ""}
    taints: ["dedicated=infra:NoSchedule"]
    capacity: {cpu: "8", memory: 32Gi, pods: 110}
  - {name: gpus, count: 2}
  pods:
    readyDelay: 1s
    readyJitter: 250ms
    deleteDelay: 0
    failImages: [":crash$"]
    neverReadyImages: [":never$", "^broken/"]
placeholders: {UNUSED: x}
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
          containers: [{name: c, image: i}]
steps:
- create: {}
`
	s, warns, err := LoadBytes("cluster.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := Cluster{
		Nodes: 12,
		Pools: []NodePool{{
			Name: "workers", NamePrefix: "w", Count: 10,
			Labels: map[string]string{"disk": "ssd", "node-role.kubernetes.io/worker": ""},
			Taints: []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110"),
			},
		}, {Name: "gpus", NamePrefix: "gpus", Count: 2}},
		Pods: PodBehaviour{
			ReadyDelay: dur(time.Second), ReadyJitter: dur(250 * time.Millisecond),
			FailImages: []string{":crash$"}, NeverReadyImages: []string{":never$", "^broken/"},
		},
	}
	if diff := cmp.Diff(want, s.Cluster); diff != "" {
		t.Errorf("cluster (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Metadata{Name: "cluster", Description: "d", Tags: []string{"a", "b"}}, s.Metadata); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if s.Seed != -7 || s.Repetitions != 3 {
		t.Errorf("seed, repetitions = %d, %d; want -7, 3", s.Seed, s.Repetitions)
	}
	if got, want := s.Cluster.Pods.NeverReadyImagesRegexp(), "(?::never$)|(?:^broken/)"; got != want {
		t.Errorf("NeverReadyImagesRegexp = %q, want %q", got, want)
	}
	if fails, never := s.Cluster.Pods.Matches("broken/agent:crash"); !fails || !never {
		t.Errorf("Matches = %v, %v; want true, true", fails, never)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].String(), "cluster.yaml:22:24: placeholders[UNUSED]") {
		t.Errorf("warnings = %v, want one about the unused placeholder at 22:24", warns)
	}
}

func TestDecodeLegacyInline(t *testing.T) {
	data := strings.Replace(header, `    apiVersion: apps/v1
    kind: DaemonSet
    metadata: {name: agent}
    spec:
      selector: {matchLabels: {app: agent}}
`, `    apiVersion: extensions/v1beta1
    kind: DaemonSet
    metadata: {name: agent}
    spec:
      templateGeneration: 3
`, 1)
	s, warns, err := LoadBytes("legacy.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	ds := s.DaemonSets()[0]
	wantSpec := appsv1.DaemonSetSpec{
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
		UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/agent:v1"}}},
		},
	}
	if diff := cmp.Diff(wantSpec, ds.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if ds.APIVersion != "apps/v1" || ds.Kind != "DaemonSet" || ds.Namespace != "default" {
		t.Errorf("type and namespace = %s %s %s, want apps/v1 DaemonSet default", ds.APIVersion, ds.Kind, ds.Namespace)
	}
	var got []string
	for _, w := range warns {
		got = append(got, w.String())
	}
	want := []string{
		"legacy.yaml:10:5: workloads[0].inline.spec.selector: defaulted from the template labels, as extensions/v1beta1 did",
		"legacy.yaml:10:5: workloads[0].inline.spec.updateStrategy.type: defaulted to OnDelete, as extensions/v1beta1 did",
		"legacy.yaml:10:17: workloads[0].inline.apiVersion: extensions/v1beta1 DaemonSet \"agent\" converted to apps/v1",
		"legacy.yaml:14:7: workloads[0].inline.spec.templateGeneration: dropped: apps/v1 has no templateGeneration",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestPlaceholders(t *testing.T) {
	manifest := `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ph
  namespace: {NS}
spec:
  selector:
    matchLabels: {app: ph}
  template:
    metadata:
      labels: {app: ph}
    spec:
      {EXTRA}
      containers:
      - name: main
        # {NOT_A_PLACEHOLDER} in a comment
        image: registry/{IMAGE}
        args: ["${HOME}"]
        bogus: true
`
	values := map[string]string{
		"NS":    "tools",
		"EXTRA": "hostNetwork: true\ntolerations:\n- operator: Exists\n",
		"IMAGE": "agent:v1",
	}
	_, _, err := ParseManifest("ph.yaml", []byte(manifest), values)
	// The three-line value shifts the text, but the message names the
	// line of the original file.
	wantErr := `ph.yaml:19:9: documents[0].spec.template.spec.containers[0].bogus: unknown field "bogus"`
	if err == nil || err.Error() != wantErr {
		t.Fatalf("ParseManifest error = %v, want %s", err, wantErr)
	}
	fixed := strings.Replace(manifest, "        bogus: true\n", "", 1)
	w, _, err := ParseManifest("ph.yaml", []byte(fixed), values)
	if err != nil {
		t.Fatal(err)
	}
	spec := w.DaemonSets[0].Spec.Template.Spec
	if w.DaemonSets[0].Namespace != "tools" || !spec.HostNetwork || len(spec.Tolerations) != 1 ||
		spec.Containers[0].Image != "registry/agent:v1" || spec.Containers[0].Args[0] != "${HOME}" {
		t.Errorf("placeholders not filled as expected: %+v", w.DaemonSets[0])
	}

	_, _, err = ParseManifest("ph.yaml", []byte(fixed), map[string]string{"NS": "x"})
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error = %v, want a *ValidationError", err)
	}
	var got []string
	for _, e := range verr.Errors {
		got = append(got, e.Error())
	}
	want := []string{
		"ph.yaml:13:7: file: placeholder {EXTRA} is not filled: add it to placeholders",
		"ph.yaml:17:25: file: placeholder {IMAGE} is not filled: add it to placeholders",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestTabIndentedManifest(t *testing.T) {
	data := "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n\tname: tabs\nspec:\n\tselector:\n\t\tmatchLabels: {app: t}\n" +
		"\ttemplate:\n\t\tmetadata:\n\t\t\tlabels: {app: t}\n\t\tspec:\n\t\t\tcontainers:\n\t\t\t- name: c\n\t\t\t  image: i\n"
	w, warns, err := ParseManifest("tabs.yaml", []byte(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.DaemonSets[0].Spec.Template.Spec.Containers[0].Image; got != "i" {
		t.Errorf("image = %q, want i", got)
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0].String(), "tabs.yaml:4:1: file: tabs in indentation expanded") {
		t.Errorf("warnings = %v, want one at tabs.yaml:4:1", warns)
	}
}

func TestMultiDocumentManifest(t *testing.T) {
	data, err := library.ReadFile("library/manifests/seed002-fluentd-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, warns, err := ParseManifest("rbac.yaml", data, nil)
	if err != nil || len(warns) > 0 {
		t.Fatalf("ParseManifest: %v %v", warns, err)
	}
	var kinds []string
	for _, o := range w.Objects {
		kinds = append(kinds, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	want := []string{"ServiceAccount kube-system/fluentd", "ClusterRole /fluentd", "ClusterRoleBinding /fluentd"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if len(w.DaemonSets) != 1 || Ref(w.DaemonSets[0]) != "kube-system/fluentd" {
		t.Errorf("DaemonSets = %v, want kube-system/fluentd", w.DaemonSets)
	}
}

func TestDependencies(t *testing.T) {
	s, _, err := LoadLibrary("seed-manifests")
	if err != nil {
		t.Fatal(err)
	}
	got := s.Dependencies()
	wantNS := []string{"default", "kube-system", "monitoring", "seed001", "seed002", "seed002-rolling", "seed003"}
	if diff := cmp.Diff(wantNS, got.Namespaces); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	var sas []string
	for _, sa := range got.ServiceAccounts {
		sas = append(sas, sa.String())
	}
	// fluentd's service account is defined by its manifest; these are not.
	if diff := cmp.Diff([]string{"kube-system/calico-node", "kube-system/keel-view"}, sas); diff != "" {
		t.Errorf("service accounts (-want +got):\n%s", diff)
	}
}

func TestStepOffsets(t *testing.T) {
	for _, tc := range []struct {
		name string
		step Step
		i, n int
		want time.Duration
	}{
		{"at once", Step{}, 3, 10, 0},
		{"rate", Step{Rate: 4}, 3, 10, 750 * time.Millisecond},
		{"duration", Step{Duration: dur(10 * time.Second)}, 3, 10, 3 * time.Second},
		{"first", Step{Rate: 1}, 0, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.step.Offset(tc.i, tc.n); got != tc.want {
				t.Errorf("Offset(%d, %d) = %v, want %v", tc.i, tc.n, got, tc.want)
			}
		})
	}
}

func TestNodeTargetResolve(t *testing.T) {
	for _, tc := range []struct {
		target NodeTarget
		size   int
		want   int
	}{
		{NodeTarget{Count: 5}, 10, 5},
		{NodeTarget{Count: 50}, 10, 10},
		{NodeTarget{Fraction: 0.25}, 10, 3},
		{NodeTarget{Fraction: 0.01}, 10, 1},
		{NodeTarget{Fraction: 1}, 0, 0},
	} {
		if got := tc.target.Resolve(tc.size); got != tc.want {
			t.Errorf("%+v.Resolve(%d) = %d, want %d", tc.target, tc.size, got, tc.want)
		}
	}
	join := NodesStep{Action: NodeJoin, NodeTarget: NodeTarget{Fraction: 2.0 / 3}}
	if got := join.Resolve(30); got != 20 {
		t.Errorf("join Resolve(30) = %d, want 20", got)
	}
}

func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString(header)
	// Each level holds four of the one before: 4^15 steps once expanded.
	b.WriteString("- &s0 {pause: 1s}\n")
	for i := 1; i <= 15; i++ {
		fmt.Fprintf(&b, "- &s%d {parallel: [[*s%d, *s%d], [*s%d, *s%d]]}\n", i, i-1, i-1, i-1, i-1)
	}
	start := time.Now()
	_, _, err := LoadBytes("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "document too large or too many aliases") {
		t.Errorf("error = %.300v, want the bomb stopped", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Load took %v", d)
	}
	var verr *ValidationError
	if errors.As(err, &verr) && len(verr.Errors) > maxErrors+1 {
		t.Errorf("%d errors, want at most %d", len(verr.Errors), maxErrors+1)
	}
}

// TestStepKindNames keeps the list in messages in step with the Step type.
func TestStepKindNames(t *testing.T) {
	var fields []string
	st := reflect.TypeFor[Step]()
	for i := range st.NumField() {
		f := st.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if (f.Type.Kind() == reflect.Pointer || f.Type.Kind() == reflect.Slice) && name != "expect" && name != "-" {
			fields = append(fields, name)
		}
	}
	if diff := cmp.Diff(fields, stepKindNames); diff != "" {
		t.Errorf("stepKindNames (-Step fields +list):\n%s", diff)
	}
	var kinds []string
	s := Step{}
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); (f.Kind() == reflect.Pointer || f.Kind() == reflect.Slice) && st.Field(i).Name != "Expect" {
			if f.Kind() == reflect.Pointer {
				f.Set(reflect.New(f.Type().Elem()))
			} else {
				f.Set(reflect.MakeSlice(f.Type(), 0, 0))
			}
		}
	}
	for _, k := range s.Kinds() {
		kinds = append(kinds, string(k))
	}
	if diff := cmp.Diff(stepKindNames, kinds); diff != "" {
		t.Errorf("Kinds() with every action set (-want +got):\n%s", diff)
	}
}

// yaml.v3 gives its parser's errors 0-based lines, none on the first line
// and none for bad characters: each message must point at the line to fix.
func TestYAMLErrorLines(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		line       int
	}{
		{"unclosed flow list", "a: 1\nb: [1, 2\n", 2},
		{"unclosed flow map", "a: 1\nb: {c: 1\n", 2},
		{"dedented key", "a:\n  b: 1\n c: 2\n", 3},
		{"list item in a mapping", "x: 1\n- a\n", 2},
		{"mapping after a list", "- a\nb: 1\n", 2},
		{"mapping value on the first line", "a: b: c\n", 1},
		{"mapping value later", "x: 1\na: b: c\n", 2},
		{"tab indentation", "x: 1\n\ty: 2\n", 2},
		{"unterminated quote", "x: 1\ny: 'open\n", 2},
		{"control character", "x: 1\ny: \x01\n", 2},
		{"invalid UTF-8", "x: 1\n\ny: \xff\n", 3},
		{"unknown anchor", "x: 1\ny: *nowhere\n", 2},
		{"tag escape not UTF-8", "!%80", 1}, // found by FuzzLoad
		{"tag escape not UTF-8, later", "a: 1\nb: !%80 x\n", 2},
		{"unknown directive", "x: 1\n---\n%FOO\n---\n", 3},
		{"error at the end of the input", "a: [1, 2", 1},
		// yaml.v3 also breaks lines at a lone CR, NEL, LS and PS; messages
		// count LF, as editors and grep -n do.
		{"after a lone CR", "a: 1\rb: 2\nc: [1\n", 2},
		{"after a NEL in a comment", "# x\u0085y\nb: \x01\n", 2},
		{"after a line separator", "a: 'x\u2028y'\nb: 'open\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseManifest("m.yaml", []byte(tc.data), nil)
			verr, ok := errors.AsType[*ValidationError](err)
			if !ok || len(verr.Errors) == 0 {
				t.Fatalf("ParseManifest: %v, want a *ValidationError", err)
			}
			e := verr.Errors[0]
			if !strings.Contains(e.Message, "invalid YAML") || e.Pos.Line != tc.line {
				t.Errorf("got %v, want invalid YAML at line %d", e, tc.line)
			}
		})
	}
}

// Field errors count lines as the syntax errors do, past lone CRs too.
func TestFieldErrorLinesAfterLoneCR(t *testing.T) {
	data := "apiVersion: apps/v1\rkind: DaemonSet\rmetadata: {name: a}\nspec: {bogus: 1}\n"
	_, _, err := ParseManifest("m.yaml", []byte(data), nil)
	verr, ok := errors.AsType[*ValidationError](err)
	if !ok {
		t.Fatalf("ParseManifest: %v, want a *ValidationError", err)
	}
	for _, e := range verr.Errors {
		if e.Path == "documents[0].spec.bogus" && e.Pos.Line != 2 {
			t.Errorf("got %v, want line 2", e)
		}
	}
	if !strings.Contains(err.Error(), "m.yaml:2:8: documents[0].spec.bogus") {
		t.Errorf("error does not name line 2 for spec.bogus:\n%v", err)
	}
}
