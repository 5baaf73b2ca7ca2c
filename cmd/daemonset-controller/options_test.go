package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/dsbench/dsbench/controller"
)

func TestParseDefaults(t *testing.T) {
	o, err := parse(nil)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.workers != controller.DefaultWorkers || o.burstReplicas != 0 || !o.leaderElect ||
		o.bindMode != "scheduler" || o.metricsAddr != ":8080" || o.healthProbeAddr != ":8081" ||
		o.leaseDuration != 15*time.Second || o.syncDelay != 0 {
		t.Errorf("defaults = %+v", o)
	}
}

func TestParse(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    []string
		wantErr string // substring; "" means success
	}{
		{args: []string{"--kubeconfig=" + kc, "--concurrent-daemonset-syncs=4", "--bind-mode=direct", "--burst-replicas=500", "-v=4"}},
		{args: []string{"--kube-api-qps=0", "--kube-api-burst=0"}}, // unlimited
		{args: []string{"--kube-api-qps=-1"}},
		{args: []string{"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0"}},
		{args: []string{"--sync-delay=250ms"}},
		{args: []string{"--leader-elect=false", "--leader-elect-lease-duration=1s"}}, // not checked when off
		{args: []string{"--concurrent-daemonset-syncs=0"}, wantErr: "--concurrent-daemonset-syncs"},
		{args: []string{"--bind-mode=kubelet"}, wantErr: "--bind-mode"},
		{args: []string{"--burst-replicas=-5"}, wantErr: "--burst-replicas"},
		{args: []string{"--kube-api-qps=50", "--kube-api-burst=0"}}, // burst follows the QPS
		{args: []string{"--kube-api-burst=-1"}, wantErr: "--kube-api-burst"},
		{args: []string{"--kube-api-content-type=application/json"}},
		{args: []string{"--kube-api-content-type=application/yaml"}, wantErr: "--kube-api-content-type"},
		{args: []string{"--leader-elect-lease-duration=5s"}, wantErr: "--leader-elect-lease-duration"},
		{args: []string{"--leader-elect-renew-deadline=2s"}, wantErr: "--leader-elect-renew-deadline"},
		{args: []string{"--leader-elect-resource-name="}, wantErr: "--leader-elect-resource-name"},
		{args: []string{"--metrics-bind-address=8080"}, wantErr: "--metrics-bind-address"},
		{args: []string{"--health-probe-bind-address=nope"}, wantErr: "--health-probe-bind-address"},
		{args: []string{"--sync-delay=-1s"}, wantErr: "--sync-delay"},
		{args: []string{"--expectations-ttl=0"}, wantErr: "--expectations-ttl"},
		{args: []string{"--concurrent-daemonset-syncs=many"}, wantErr: "concurrent-daemonset-syncs"},
		{args: []string{"--no-such-flag"}, wantErr: "no-such-flag"},
		{args: []string{"extra"}, wantErr: "unexpected arguments"},
		{args: []string{"--kubeconfig=/nonexistent/kubeconfig"}, wantErr: "--kubeconfig"},
		{args: []string{"--kubeconfig=" + os.TempDir()}, wantErr: "--kubeconfig"},
		{args: []string{"--master=https://127.0.0.1:6443"}},
		{args: []string{"--master=127.0.0.1:6443"}},
		{args: []string{"--master=http://[::1"}, wantErr: "--master"},
		{args: []string{"--kube-api-qps=NaN"}, wantErr: "--kube-api-qps"},
		{args: []string{"--kube-api-qps=+Inf"}, wantErr: "--kube-api-qps"},
		{args: []string{"--leader-elect-resource-name=Not_A_Name"}, wantErr: "--leader-elect-resource-name"},
		{args: []string{"--leader-elect-resource-namespace=kube.system"}, wantErr: "--leader-elect-resource-namespace"},
		{args: []string{"--leader-elect-resource-namespace=kube-system"}},
		{args: []string{"--metrics-bind-address=:99999"}, wantErr: "--metrics-bind-address"},
		{args: []string{"--health-probe-bind-address=:http"}, wantErr: "--health-probe-bind-address"},
		{args: []string{"--metrics-bind-address=:9090", "--health-probe-bind-address=:9090"}, wantErr: "--health-probe-bind-address"},
		{args: []string{"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0"}}, // two free ports
		{args: []string{"--vmodule=bad"}, wantErr: "vmodule"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := parse(tt.args)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("parse: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("parse error = %v, want one naming %s", err, tt.wantErr)
			}
		})
	}
}

func TestApplyClientOptions(t *testing.T) {
	tests := []struct {
		args        []string
		qps         float32
		burst       int
		contentType string
	}{
		{args: nil, qps: 100, burst: 200, contentType: "application/vnd.kubernetes.protobuf"},
		{args: []string{"--kube-api-qps=0"}, qps: -1, burst: 200, contentType: "application/vnd.kubernetes.protobuf"},
		{args: []string{"--kube-api-qps=7.5", "--kube-api-burst=0"}, qps: 7.5, burst: 8, contentType: "application/vnd.kubernetes.protobuf"},
		{args: []string{"--kube-api-content-type=application/json"}, qps: 100, burst: 200, contentType: "application/json"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o, err := parse(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			cfg := &rest.Config{}
			o.applyClientOptions(cfg)
			if cfg.QPS != tt.qps || cfg.Burst != tt.burst || cfg.ContentType != tt.contentType {
				t.Errorf("QPS %v, burst %d, content type %q; want %v, %d, %q", cfg.QPS, cfg.Burst, cfg.ContentType, tt.qps, tt.burst, tt.contentType)
			}
			if !strings.HasSuffix(cfg.UserAgent, "/"+controller.ComponentName) {
				t.Errorf("user agent %q does not end in /%s", cfg.UserAgent, controller.ComponentName)
			}
		})
	}
}

func TestHelpIsNotAnError(t *testing.T) {
	if _, err := parse([]string{"--help"}); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("parse(--help) = %v, want pflag.ErrHelp", err)
	}
	if code := execute([]string{"--bind-mode=bogus"}); code != 2 {
		t.Errorf("exit code for a bad flag = %d, want 2", code)
	}
}

func TestLeaseNamespace(t *testing.T) {
	o := newOptions()
	o.leaseNamespace = "explicit"
	if got := o.leaseNamespaceOrDefault(); got != "explicit" {
		t.Errorf("got %q, want explicit", got)
	}
	o.leaseNamespace = ""
	t.Setenv("POD_NAMESPACE", "from-env")
	if got := o.leaseNamespaceOrDefault(); got != "from-env" {
		t.Errorf("got %q, want from-env", got)
	}
}
