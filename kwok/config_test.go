package kwok

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	configv1alpha1 "sigs.k8s.io/kwok/pkg/apis/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

func TestClusterConfigDefaultsAndErrors(t *testing.T) {
	c, err := ClusterConfig{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "dsbench" || c.KwokParallelism != DefaultKwokParallelism || c.KwokWatch != DefaultKwokWatch || c.Timeout != 3*time.Minute || !strings.HasSuffix(c.Workdir, ".cache/kwok") {
		t.Errorf("defaults: %+v", c)
	}
	bad := []struct {
		conf ClusterConfig
		want string
	}{
		{ClusterConfig{Name: "Bad_Name"}, "cluster name"},
		{ClusterConfig{APIServerPort: 70000}, "apiserver port 70000"},
		{ClusterConfig{APIServerPort: -1}, "apiserver port -1"},
		{ClusterConfig{KwokParallelism: -3}, "kwok parallelism -3"},
		{ClusterConfig{KwokLogLevel: "debug"}, `kwok log level "debug"`},
		{ClusterConfig{KwokWatch: "replay"}, `kwok watch "replay"`},
	}
	for _, b := range bad {
		if _, err := b.conf.withDefaults(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: got %v, want error containing %q", b.conf, err, b.want)
		}
	}
}

// renderKwokctlConfig renders conf's kwokctl configuration file, whole
// and its first document (the KwokctlConfiguration) decoded.
func renderKwokctlConfig(t *testing.T, conf ClusterConfig) (string, configv1alpha1.KwokctlConfiguration) {
	t.Helper()
	conf.Name, conf.Binaries = "x", Binaries{Dir: "/bin-dir"}
	c, err := Open(conf)
	if err != nil {
		t.Fatal(err)
	}
	data, err := c.kwokctlConfig()
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n---\n")
	var ctl configv1alpha1.KwokctlConfiguration
	if err := yaml.UnmarshalStrict([]byte(first), &ctl); err != nil {
		t.Fatalf("decoding the kwokctl configuration: %v\n%s", err, first)
	}
	return string(data), ctl
}

func TestKwokctlConfigTurnsBuiltinDaemonSetControllerOff(t *testing.T) {
	for _, upstream := range []bool{false, true} {
		s, ctl := renderKwokctlConfig(t, ClusterConfig{UpstreamDaemonSetController: upstream})
		off := strings.Contains(s, "-daemonset-controller")
		if off == upstream {
			t.Errorf("upstream=%v: daemonset controller disabled=%v in\n%s", upstream, off, s)
		}
		for _, want := range []string{"runtime: binary", "disableQPSLimits: true", "/bin-dir/kube-apiserver", "/bin-dir/etcd", "kind: KwokConfiguration", "podPlayStageParallelism: 32", "nodeLeaseDurationSeconds: 40", "delete-collection-workers",
			// Loopback only, and the profiles a profiled run reads.
			"bindAddress: 127.0.0.1", "enable-pprof", "enableDebuggingHandlers: true", "enableProfilingHandler: true"} {
			if !strings.Contains(s, want) {
				t.Errorf("config lacks %q:\n%s", want, s)
			}
		}
		// Neither replica elects a leader: a lost Lease would make it exit.
		for _, comp := range []string{"kube-scheduler", "kube-controller-manager"} {
			i := slices.IndexFunc(ctl.ComponentsPatches, func(p configv1alpha1.ComponentPatches) bool { return p.Name == comp })
			if i < 0 || !slices.Contains(ctl.ComponentsPatches[i].ExtraArgs, configv1alpha1.ExtraArgs{Key: "leader-elect", Value: "false"}) {
				t.Errorf("upstream=%v: %s runs with leader election:\n%s", upstream, comp, s)
			}
		}
		// KwokPodWatchCloses reads what kube-apiserver logs only from -v=1.
		i := slices.IndexFunc(ctl.ComponentsPatches, func(p configv1alpha1.ComponentPatches) bool { return p.Name == "kube-apiserver" })
		if i < 0 || !slices.Contains(ctl.ComponentsPatches[i].ExtraArgs, configv1alpha1.ExtraArgs{Key: "v", Value: "1"}) {
			t.Errorf("upstream=%v: kube-apiserver does not log the watches it closes (-v=1):\n%s", upstream, s)
		}
	}
}

func TestKwokctlConfigPicksTheKwokOfItsWatch(t *testing.T) {
	for _, tc := range []struct {
		watch       KwokWatch
		wantBinary  string
		wantVersion string
	}{
		{KwokWatchRelist, "/bin-dir/kwok", "v0.8.0"},
		{KwokWatchResume, "/bin-dir/kwok-resume", "v0.8.0+watch-resume+lease-spread"},
	} {
		_, ctl := renderKwokctlConfig(t, ClusterConfig{KwokWatch: tc.watch})
		if got := ctl.Options.KwokControllerBinary; got != tc.wantBinary {
			t.Errorf("%s: kwok controller binary %q, want %q", tc.watch, got, tc.wantBinary)
		}
		if got := tc.watch.Version(); got != tc.wantVersion {
			t.Errorf("%s: version %q, want %q", tc.watch, got, tc.wantVersion)
		}
	}
}

func TestKwokctlConfigSetsKwokLogLevelOnlyWhenAsked(t *testing.T) {
	for _, level := range []string{"", "DEBUG"} {
		_, ctl := renderKwokctlConfig(t, ClusterConfig{KwokLogLevel: level})
		var got []configv1alpha1.ExtraArgs
		for _, p := range ctl.ComponentsPatches {
			if p.Name == "kwok-controller" {
				got = append(got, p.ExtraArgs...)
			}
		}
		var want []configv1alpha1.ExtraArgs
		if level != "" {
			want = []configv1alpha1.ExtraArgs{{Key: "v", Value: level}}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("level %q: kwok-controller's extra args (-want +got):\n%s", level, diff)
		}
	}
}

func TestParseTaint(t *testing.T) {
	good := map[string]corev1.Taint{
		"gpu=true:NoSchedule":      {Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule},
		"dedicated:NoExecute":      {Key: "dedicated", Effect: corev1.TaintEffectNoExecute},
		"a.b/c=d:PreferNoSchedule": {Key: "a.b/c", Value: "d", Effect: corev1.TaintEffectPreferNoSchedule},
	}
	for in, want := range good {
		got, err := ParseTaint(in)
		if err != nil {
			t.Errorf("ParseTaint(%q): %v", in, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ParseTaint(%q) (-want +got):\n%s", in, diff)
		}
	}
	for in, want := range map[string]string{"gpu=true": "key[=value]:Effect", "gpu:Never": `effect "Never"`, "bad key!:NoSchedule": "key", "k=bad value:NoSchedule": "value"} {
		if _, err := ParseTaint(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTaint(%q): got %v, want error containing %q", in, err, want)
		}
	}
}

func TestEditTaints(t *testing.T) {
	ns := func(k string) corev1.Taint { return corev1.Taint{Key: k, Effect: corev1.TaintEffectNoSchedule} }
	got := EditTaints([]corev1.Taint{ns("a"), ns("b"), {Key: "b", Effect: corev1.TaintEffectNoExecute}}, []corev1.Taint{{Key: "a", Value: "2", Effect: corev1.TaintEffectNoSchedule}}, []corev1.Taint{{Key: "b"}})
	want := []corev1.Taint{{Key: "a", Value: "2", Effect: corev1.TaintEffectNoSchedule}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestNodePoolValidate(t *testing.T) {
	for _, tt := range []struct {
		pool NodePool
		want string
	}{
		{NodePool{Prefix: "ok", Count: 3}, ""},
		{NodePool{Prefix: "ok", Count: -1}, "count -1"},
		{NodePool{Prefix: "", Count: 1}, "prefix"},
		{NodePool{Prefix: "UP", Count: 1}, "prefix"},
		{NodePool{Prefix: "ok", Count: 1, Labels: map[string]string{"bad key": "v"}}, `labels["bad key"]`},
		{NodePool{Prefix: "ok", Count: 1, Taints: []corev1.Taint{{Key: "k", Effect: "Maybe"}}}, `taints[0]: effect "Maybe"`},
	} {
		err := tt.pool.Validate()
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: got %v, want %q", tt.pool, err, tt.want)
		}
	}
	p := NodePool{Prefix: "n", Count: 2, Start: 5, Labels: map[string]string{"disk": "ssd"}}
	if diff := cmp.Diff([]string{"n-5", "n-6"}, p.NodeNames()); diff != "" {
		t.Error(diff)
	}
	node := p.Node(5)
	if node.Labels["disk"] != "ssd" || node.Labels[PoolLabel] != "n" || node.Annotations[ManagedAnnotation] != "fake" {
		t.Errorf("node: %+v", node.ObjectMeta)
	}
}

func TestStagesRender(t *testing.T) {
	stages, err := Stages(StageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range stages {
		names = append(names, s.GetName())
	}
	if diff := cmp.Diff([]string{"node-initialize", "node-heartbeat-with-lease", "dsbench-pod-ready", "dsbench-pod-reready", "dsbench-pod-delete", "dsbench-pod-delete-leftover"}, names); diff != "" {
		t.Errorf("default stages (-want +got):\n%s", diff)
	}
	hb, _, _ := unstructured.NestedMap(stages[1].Object, "spec", "delay")
	if from, to := hb["durationMilliseconds"], hb["jitterDurationMilliseconds"]; fmt.Sprint(from) != "600000" || fmt.Sprint(to) != "1800000" {
		t.Errorf("node heartbeat delay %v-%v ms, want 600000-1800000: spread, so that nodes Ready together do not all write at once", from, to)
	}
	stages, err = Stages(StageOptions{ReadyDelay: time.Second, ReadyJitter: 500 * time.Millisecond, FailImages: `^bad"`, NeverReadyImages: "hang"})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := yaml.Marshal(stages[2].Object)
	for _, want := range []string{"durationMilliseconds: 1000", "jitterDurationMilliseconds: 1500", `test("^bad\"")`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("pod-ready stage lacks %q:\n%s", want, data)
		}
	}
	if len(stages) != 8 {
		t.Errorf("want 8 stages with fail and never-ready, got %d", len(stages))
	}
	if _, err := Stages(StageOptions{FailImages: "("}); err == nil || !strings.Contains(err.Error(), "failImages") {
		t.Errorf("bad regexp: %v", err)
	}
	if _, err := Stages(StageOptions{ReadyDelay: -time.Second}); err == nil || !strings.Contains(err.Error(), "readyDelay") {
		t.Errorf("negative delay: %v", err)
	}
}

func TestSplitNodeName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix string
		index  int
		ok     bool
	}{
		{"workers-12", "workers", 12, true},
		{"my-pool-0", "my-pool", 0, true},
		{"workers", "", 0, false},
		{"workers-", "", 0, false},
		{"-3", "", 0, false},
		{"workers-012", "", 0, false},
		{"workers-x", "", 0, false},
	} {
		p, i, ok := SplitNodeName(tc.name)
		if p != tc.prefix || i != tc.index || ok != tc.ok {
			t.Errorf("SplitNodeName(%q) = %q, %d, %v; want %q, %d, %v", tc.name, p, i, ok, tc.prefix, tc.index, tc.ok)
		}
	}
	pool := NodePool{Prefix: "a-b"}
	if p, i, ok := SplitNodeName(pool.NodeName(7)); !ok || p != "a-b" || i != 7 {
		t.Errorf("SplitNodeName does not invert NodeName: %q, %d, %v", p, i, ok)
	}
}
