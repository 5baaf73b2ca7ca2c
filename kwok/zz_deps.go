//go:build dsbenchdeps

// Temporary: keeps dependencies that packages under construction will import.
package kwok

import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/spf13/pflag"
	_ "go.yaml.in/yaml/v3"
	_ "gonum.org/v1/gonum/stat"
	_ "gonum.org/v1/plot"
	_ "gonum.org/v1/plot/plotter"
	_ "gonum.org/v1/plot/vg"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/tools/leaderelection"
	_ "k8s.io/client-go/tools/record"
	_ "k8s.io/client-go/util/workqueue"
	_ "k8s.io/component-helpers/scheduling/corev1"
	_ "k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	_ "k8s.io/klog/v2"
	_ "k8s.io/utils/clock/testing"
	_ "sigs.k8s.io/kwok/pkg/apis/v1alpha1"
)
