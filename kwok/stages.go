package kwok

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"text/template"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodelease "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	"sigs.k8s.io/yaml"

	_ "embed"
)

// UnreadyReason marks the Ready condition of a pod the harness made unready
// (a readiness probe that keeps failing): no stage makes such a pod ready
// again.
const UnreadyReason = "DsbenchUnready"

// StageOptions describe how fake pods behave. The zero value makes pods
// Running and Ready at once and finalizes deleted pods, so rollouts never
// stall.
type StageOptions struct {
	// ReadyDelay is the least time from binding to Ready.
	ReadyDelay time.Duration
	// ReadyJitter adds a uniformly random extra delay in [0, ReadyJitter).
	ReadyJitter time.Duration
	// FailImages is a regular expression: pods with a container image that
	// matches it go to phase Failed instead of Running.
	FailImages string
	// NeverReadyImages is a regular expression: pods with a matching image run
	// but never become Ready.
	NeverReadyImages string
	// DeleteDelay is how long a deleted pod lingers before it is finalized.
	DeleteDelay time.Duration
}

// Validate names the first bad field.
func (o StageOptions) Validate() error {
	if o.ReadyDelay < 0 {
		return fmt.Errorf("readyDelay %s: must not be negative", o.ReadyDelay)
	}
	if o.ReadyJitter < 0 {
		return fmt.Errorf("readyJitter %s: must not be negative", o.ReadyJitter)
	}
	if o.DeleteDelay < 0 {
		return fmt.Errorf("deleteDelay %s: must not be negative", o.DeleteDelay)
	}
	for field, re := range map[string]string{"failImages": o.FailImages, "neverReadyImages": o.NeverReadyImages} {
		if re == "" {
			continue
		}
		if _, err := regexp.Compile(re); err != nil {
			return fmt.Errorf("%s %q: %w", field, re, err)
		}
	}
	return nil
}

//go:embed stages/pods.yaml.tmpl
var podStagesTemplate string

// stageLabel marks the Stage objects this package owns, so that applying a
// new set removes stale ones.
const stageLabel = "dsbench.dev/stage"

var stageGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "stages"}

// Stages renders the node and pod Stage objects for the options.
func Stages(o StageOptions) ([]*unstructured.Unstructured, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	tmpl, err := template.New("pods").Delims("[[", "]]").Parse(podStagesTemplate)
	if err != nil {
		return nil, fmt.Errorf("parsing pod stage template: %w", err)
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, map[string]string{
		"ReadyDelay":       ms(o.ReadyDelay),
		"ReadyJitter":      ms(o.ReadyDelay + o.ReadyJitter),
		"DeleteDelay":      ms(o.DeleteDelay),
		"FailImages":       jqString(o.FailImages),
		"NeverReadyImages": jqString(o.NeverReadyImages),
		"UnreadyReason":    UnreadyReason,
	})
	if err != nil {
		return nil, fmt.Errorf("rendering pod stages: %w", err)
	}
	docs := append([][]byte{[]byte(nodefast.DefaultNodeInit), []byte(nodelease.DefaultNodeHeartbeatWithLease)},
		bytes.Split(buf.Bytes(), []byte("\n---\n"))...)
	var out []*unstructured.Unstructured
	for _, doc := range docs {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return nil, fmt.Errorf("decoding stage: %w", err)
		}
		if obj.GetName() == "" {
			continue // a stage left empty by the template
		}
		if obj.GetName() == heartbeatStageName {
			if err := unstructured.SetNestedField(obj.Object, int64(HeartbeatJitter/time.Millisecond), "spec", "delay", "jitterDurationMilliseconds"); err != nil {
				return nil, fmt.Errorf("spreading the node heartbeat: %w", err)
			}
		}
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[stageLabel] = "true"
		obj.SetLabels(labels)
		out = append(out, obj)
	}
	return out, nil
}

const heartbeatStageName = "node-heartbeat-with-lease"

// HeartbeatJitter is the latest a fake node's status heartbeat comes after
// its last change (the earliest is kwok's 10 minutes). kwok's own window is
// 600-610 s: nodes that turned Ready together all wrote their status again
// within seconds of each other, 10 minutes later. At 5000 nodes that wave
// (about 5000 writes in a minute) slowed kwok's pod queue in the middle of
// a run. Spread over 10-30 minutes, it is 4 writes a second. Node liveness
// comes from the Lease, so nothing waits for these writes.
const HeartbeatJitter = 30 * time.Minute

// jqString quotes s as a jq string literal (JSON quoting is valid jq).
func jqString(s string) string {
	if s == "" {
		return ""
	}
	return strconv.Quote(s)
}

// ApplyStages installs the stages for o, replacing the ones applied before.
func ApplyStages(ctx context.Context, cfg *rest.Config, o StageOptions) error {
	want, err := Stages(o)
	if err != nil {
		return err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	stages := client.Resource(stageGVR)
	keep := map[string]bool{}
	for _, obj := range want {
		keep[obj.GetName()] = true
		cur, err := stages.Get(ctx, obj.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := stages.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating stage %s: %w", obj.GetName(), err)
			}
		case err != nil:
			return fmt.Errorf("getting stage %s: %w", obj.GetName(), err)
		default:
			obj.SetResourceVersion(cur.GetResourceVersion())
			if _, err := stages.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("updating stage %s: %w", obj.GetName(), err)
			}
		}
	}
	list, err := stages.List(ctx, metav1.ListOptions{LabelSelector: stageLabel + "=true"})
	if err != nil {
		return fmt.Errorf("listing stages: %w", err)
	}
	for _, item := range list.Items {
		if keep[item.GetName()] {
			continue
		}
		if err := stages.Delete(ctx, item.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting stale stage %s: %w", item.GetName(), err)
		}
	}
	return nil
}
