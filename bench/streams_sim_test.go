package bench

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dsbench/dsbench/bench/oracle"
	"github.com/dsbench/dsbench/reports"
	"github.com/dsbench/dsbench/scenarios"
)

// streamSim is a scripted cluster that makes journals without one: a
// DaemonSet controller (correct, or with one bug of controller/mutants_on.go),
// a kubelet and node heartbeats, feeding a Core that records a journal as the
// runner's observe loop does, one 250 ms tick at a time. Its objects look
// like the API server's (managedFields, container specs, node status), so
// that the journal shows what trimming keeps and what it costs.
type streamSim struct {
	t       *testing.T
	variant string
	core    *Core
	now     time.Time
	rv      int
	nodes   []*corev1.Node
	ds      *appsv1.DaemonSet
	pods    map[string]*simPod // by name
	seq     int
	down    bool // the controller is stopped
	status  appsv1.DaemonSetStatus
	stop    string // why the Core ended the run (StopAtViolation)
}

type simPod struct {
	pod             *corev1.Pod
	readyAt, goneAt time.Time // zero: not scheduled
}

var simT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// simStream plays the variant's script on nodes nodes and returns the run's
// journal at path.
func simStream(t *testing.T, variant string, nodes int, path string) {
	t.Helper()
	grace := DefaultGrace(nodes, 1)
	sc := &scenarios.Scenario{}
	sc.Metadata.Name = "scripted-rollout"
	oc := oracleConfig(grace)
	rec, err := NewJournalRecorder(path, JournalHeader{Scenario: sc.Metadata.Name, Variant: variant, Controller: "scripted",
		Origin: "scripted by bench/streams_sim_test.go (TestStreamsGenerated)", Nodes: nodes, Oracle: oc})
	if err != nil {
		t.Fatal(err)
	}
	s := &streamSim{t: t, variant: variant, now: simT0, pods: map[string]*simPod{},
		core: NewCore(CoreConfig{Scenario: sc, Oracle: oc, StopAtViolation: variant != correctVariantName, Journal: rec})}
	s.play(nodes)
	s.core.Finish(reports.Run{Scenario: sc.Metadata.Name}, FinishInput{Now: s.now})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
}

// correctVariantName is the unbroken controller's row, as in make mutants.
const correctVariantName = "correct"

func (s *streamSim) play(nodes int) {
	for i := range nodes {
		s.nodes = append(s.nodes, s.emitNode(oracle.Added, simNode(fmt.Sprintf("kwok-pool-%02d", i))))
	}
	s.tick()
	s.ds = simDaemonSet(1)
	s.ds.CreationTimestamp = metav1.NewTime(s.now.Truncate(time.Second))
	s.emit(oracle.Added, s.ds)
	s.core.DaemonSetCreated("default/agent")
	end := simT0.Add(3 * time.Minute)
	for s.now.Before(end) && s.stop == "" {
		s.step()
		switch at := s.now.Sub(simT0); {
		case at == 15*time.Second && s.variant == correctVariantName:
			// A harness deletion the controller repairs: no violation.
			p := s.podOn(s.nodes[3].Name)
			s.core.RequestDeletion("default/" + p.pod.Name)
			s.deletePod(p)
		case at == 15*time.Second && s.variant == "churn-healthy":
			s.deletePod(s.podOn(s.nodes[5].Name))
		case at == 20*time.Second && s.variant == correctVariantName:
			s.core.ControllerStopped()
			s.down = true
		case at == 23*time.Second && s.variant == correctVariantName:
			s.down = false
			s.core.ControllerStarted(s.now)
		case at == 30*time.Second:
			next := simDaemonSet(2)
			next.UID, next.CreationTimestamp = s.ds.UID, s.ds.CreationTimestamp
			next.Status = s.ds.Status
			s.ds = next
			s.emit(oracle.Modified, s.ds)
			// A barrier, as a step's ack adds: the journal leaves it out.
			s.core.StepAcked("roll", "update", s.now, s.now, visibility{"default/agent": oracle.GenerationObserved("default/agent", 2)}, nil)
		case at > 40*time.Second && s.settled():
			s.finishAfter(12 * time.Second)
			return
		}
	}
}

// step moves one tick: heartbeats, kubelet, controller, then the Core.
func (s *streamSim) step() {
	s.now = s.now.Add(250 * time.Millisecond)
	for i, n := range s.nodes {
		// Each node reports every 10 s, staggered.
		if s.now.Sub(simT0)%(10*time.Second) == time.Duration(i%40)*250*time.Millisecond {
			n = n.DeepCopy()
			for j := range n.Status.Conditions {
				n.Status.Conditions[j].LastHeartbeatTime = metav1.NewTime(s.now.Truncate(time.Second))
			}
			s.nodes[i] = s.emitNode(oracle.Modified, n)
		}
	}
	s.kubelet()
	if !s.down {
		s.controller()
	}
	s.tick()
}

func (s *streamSim) tick() {
	if r := s.core.Tick(s.now, true); r.Stop != "" {
		s.stop = r.Stop
	}
}

// finishAfter runs the cluster d longer, as the runner waits for the
// status to settle.
func (s *streamSim) finishAfter(d time.Duration) {
	end := s.now.Add(d)
	for s.now.Before(end) {
		s.step()
	}
}

func (s *streamSim) settled() bool {
	for _, n := range s.nodes {
		p := s.podOn(n.Name)
		if p == nil || p.pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != oracle.CurrentHash(s.ds) || !podReady(p.pod) {
			return false
		}
	}
	return len(s.pods) == len(s.nodes)
}

func (s *streamSim) emitNode(kind oracle.EventKind, n *corev1.Node) *corev1.Node {
	s.emit(kind, n)
	return n
}

// emit stamps the object with the next resourceVersion and hands it to the
// Core; the object must be a fresh copy.
func (s *streamSim) emit(kind oracle.EventKind, o runtime.Object) {
	s.rv++
	o.(metav1.Object).SetResourceVersion(strconv.Itoa(s.rv))
	s.core.Observe(oracle.Event{Time: s.now, Kind: kind, Object: o}, s.now)
}

func (s *streamSim) kubelet() {
	for _, name := range s.podNames() {
		p := s.pods[name]
		switch {
		case !p.goneAt.IsZero() && !s.now.Before(p.goneAt):
			delete(s.pods, name)
			s.emit(oracle.Deleted, p.pod)
		case p.goneAt.IsZero() && !podReady(p.pod) && !s.now.Before(p.readyAt):
			p.pod = p.pod.DeepCopy()
			simReady(p.pod, s.now)
			s.emit(oracle.Modified, p.pod)
		}
	}
}

func (s *streamSim) podNames() []string {
	names := make([]string, 0, len(s.pods))
	for n := range s.pods {
		names = append(names, n)
	}
	slices.Sort(names) // names count up, in creation order
	return names
}

// podOn is the node's active pod, nil if none.
func (s *streamSim) podOn(node string) *simPod {
	for _, name := range s.podNames() {
		if p := s.pods[name]; p.pod.Spec.NodeName == node && p.goneAt.IsZero() {
			return p
		}
	}
	return nil
}

// terminatingOn says whether a pod on the node is still terminating.
func (s *streamSim) terminatingOn(node string) bool {
	for _, p := range s.pods {
		if p.pod.Spec.NodeName == node && !p.goneAt.IsZero() {
			return true
		}
	}
	return false
}

func (s *streamSim) deletePod(p *simPod) {
	p.pod = p.pod.DeepCopy()
	at := metav1.NewTime(s.now.Truncate(time.Second))
	p.pod.DeletionTimestamp = &at
	p.goneAt = s.now.Add(time.Second)
	s.emit(oracle.Modified, p.pod)
}

// controller creates missing pods and replaces old ones: one node at a time
// (maxUnavailable 1), or, as exceed-max-unavailable, every one at once.
func (s *streamSim) controller() {
	hash := oracle.CurrentHash(s.ds)
	unavailable := 0
	var old []*simPod
	for _, n := range s.nodes {
		p := s.podOn(n.Name)
		switch {
		case p == nil:
			unavailable++
			if !s.terminatingOn(n.Name) {
				s.createPod(n.Name) // as upstream: not beside a terminating pod
			}
		case !podReady(p.pod):
			unavailable++
		}
		if p != nil && p.pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash {
			old = append(old, p)
		}
	}
	for _, p := range old {
		if s.variant != "exceed-max-unavailable" && unavailable >= 1 {
			break
		}
		unavailable++
		s.deletePod(p)
	}
	s.writeStatus(hash)
}

func (s *streamSim) createPod(node string) {
	s.seq++
	p := simPodFor(s.ds, fmt.Sprintf("agent-%05d", s.seq), node)
	p.CreationTimestamp = metav1.NewTime(s.now.Truncate(time.Second))
	s.pods[p.Name] = &simPod{pod: p, readyAt: s.now.Add(1500 * time.Millisecond)}
	s.emit(oracle.Added, p)
}

// writeStatus writes the status a correct controller would, when it changed.
func (s *streamSim) writeStatus(hash string) {
	var st appsv1.DaemonSetStatus
	st.DesiredNumberScheduled = int32(len(s.nodes))
	for _, n := range s.nodes {
		p := s.podOn(n.Name)
		if p == nil {
			continue
		}
		st.CurrentNumberScheduled++
		if p.pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
			st.UpdatedNumberScheduled++
		}
		if podReady(p.pod) {
			st.NumberReady++
			st.NumberAvailable++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	st.ObservedGeneration = s.ds.Generation
	if reflect.DeepEqual(st, s.status) {
		return
	}
	s.status = st
	s.ds = s.ds.DeepCopy()
	s.ds.Status = st
	s.emit(oracle.Modified, s.ds)
}

// simNode is a node as kwok registers it.
func simNode(name string) *corev1.Node {
	created := metav1.NewTime(simT0.Add(-time.Minute))
	q := resource.MustParse
	conds := []corev1.NodeCondition{}
	for _, c := range []struct {
		t      corev1.NodeConditionType
		status corev1.ConditionStatus
		reason string
	}{{corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"}, {corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"},
		{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"}, {corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"},
		{corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated"}} {
		conds = append(conds, corev1.NodeCondition{Type: c.t, Status: c.status, Reason: c.reason, Message: "kwok: " + c.reason,
			LastHeartbeatTime: created, LastTransitionTime: created})
	}
	res := corev1.ResourceList{corev1.ResourceCPU: q("32"), corev1.ResourceMemory: q("256Gi"), corev1.ResourcePods: q("110")}
	return &corev1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: created,
			Labels: map[string]string{"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/role": "agent", "node-role.kubernetes.io/agent": "",
				"type": "kwok", "dsbench.dev/pool": "pool"},
			Annotations:   map[string]string{"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
			ManagedFields: simManagedFields("kwok", "kube-controller-manager"),
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.0.1.0/24", PodCIDRs: []string{"10.0.1.0/24"}, ProviderID: "kwok://" + name},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res, Phase: corev1.NodeRunning, Conditions: conds,
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: name}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", KubeletVersion: "fake", KubeProxyVersion: "fake", OperatingSystem: "linux",
				MachineID: "machine-" + name, SystemUUID: "uuid-" + name, BootID: "boot-" + name, ContainerRuntimeVersion: "kwok"}},
	}
}

func simManagedFields(managers ...string) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, m := range managers {
		out = append(out, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &metav1.Time{Time: simT0}, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{
				Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:node.alpha.kubernetes.io/ttl":{}},"f:labels":{".":{},"f:type":{}}},"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastHeartbeatTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}}}}`)}})
	}
	return out
}

// simDaemonSet is the agent DaemonSet at generation gen, whose image is
// agent:<gen>.
func simDaemonSet(gen int64) *appsv1.DaemonSet {
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	q := resource.MustParse
	return &appsv1.DaemonSet{
		TypeMeta: metav1.TypeMeta{Kind: "DaemonSet", APIVersion: "apps/v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "agent", UID: "uid-ds-agent", Generation: gen,
			Labels:        map[string]string{"app": "agent"},
			Annotations:   map[string]string{appsv1.DeprecatedTemplateGeneration: strconv.FormatInt(gen, 10), "kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"apps/v1","kind":"DaemonSet"}`},
			ManagedFields: simManagedFields("dsbench", "daemonset-controller"),
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "agent", Image: "registry.example/agent:" + strconv.FormatInt(gen, 10),
						Resources:              corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("10m"), corev1.ResourceMemory: q("16Mi")}},
						TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}},
					RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler",
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, Key: "dedicated"}},
				},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &one, MaxSurge: &zero}},
			RevisionHistoryLimit: new(int32(10)),
		},
	}
}

// simPodFor is a pod of ds's current template on node, Pending, as a
// controller creates it and the API server defaults it.
func simPodFor(ds *appsv1.DaemonSet, name, node string) *corev1.Pod {
	yes := true
	spec := *ds.Spec.Template.Spec.DeepCopy()
	spec.NodeName = node
	spec.ServiceAccountName, spec.EnableServiceLinks, spec.Priority = "default", &yes, new(int32(0))
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	for _, k := range []corev1.TaintEffect{corev1.TaintEffectNoExecute, corev1.TaintEffectNoSchedule} {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: k},
			corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: k})
	}
	spec.Volumes = []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: new(int64(3607))}}}}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: oracle.CurrentHash(ds),
				"pod-template-generation": strconv.FormatInt(ds.Generation, 10)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes, BlockOwnerDeletion: &yes}},
			ManagedFields:   simManagedFields("daemonset-controller", "kwok"),
		},
		Spec:   spec,
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}, QOSClass: corev1.PodQOSBurstable},
	}
}

// simReady makes the pod Running and Ready at now, as kwok reports it.
func simReady(p *corev1.Pod, now time.Time) {
	at := metav1.NewTime(now.Truncate(time.Second))
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP, p.Status.PodIP, p.Status.StartTime = "10.0.0.1", "10.244.0.7", &at
	p.Status.Conditions = nil
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at})
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", Ready: true, Image: p.Spec.Containers[0].Image, ImageID: "sha256:0123456789abcdef",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}}}
}
