package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/dsbench/dsbench/controller"
)

func TestParseDefaults(t *testing.T) {
	o, err := parse(nil)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.workers != controller.DefaultWorkers || o.burstReplicas != 0 || !o.leaderElect ||
		o.bindMode != "scheduler" || o.metricsAddr != ":8080" || o.healthProbeAddr != ":8081" ||
		o.leaseDuration != 15*time.Second || o.syncDelay != 0 ||
		o.secureMetrics || o.tlsCertFile != "" || o.tlsKeyFile != "" || !slices.Equal(o.alwaysAllowPaths, []string{"/healthz", "/readyz"}) {
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
		{args: []string{"--slow-start-initial-batch=64"}},
		{args: []string{"--slow-start-initial-batch=0"}, wantErr: "--slow-start-initial-batch"},
		{args: []string{"--slow-start-initial-batch=300"}, wantErr: "--slow-start-initial-batch"}, // over --max-create-batch
		{args: []string{"--slow-start=window"}},
		{args: []string{"--slow-start=tcp"}, wantErr: "--slow-start"},
		{args: []string{"--max-pod-writes-in-flight=80"}},
		{args: []string{"--max-pod-writes-in-flight=-1"}, wantErr: "--max-pod-writes-in-flight"},
		{args: []string{"--pod-write-connections=3", "--pod-write-streams=50"}},
		{args: []string{"--pod-write-connections=-1"}, wantErr: "--pod-write-connections"},
		{args: []string{"--pod-write-streams=0"}, wantErr: "--pod-write-streams"},
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
		{args: []string{"--status-write-interval=-1s"}, wantErr: "--status-write-interval"},
		{args: []string{"--status-write-interval=0"}}, // a write at every sync, as upstream
		{args: []string{"--pod-update-batch-period=-1ms"}, wantErr: "--pod-update-batch-period"},
		{args: []string{"--pod-update-batch-period=0"}}, // a sync for every update, as upstream
		{args: []string{"--pod-update-batch-cost-factor=-1"}, wantErr: "--pod-update-batch-cost-factor"},
		{args: []string{"--pod-update-batch-cost-factor=0"}}, // the period alone
		{args: []string{"--concurrent-daemonset-syncs=many"}, wantErr: "concurrent-daemonset-syncs"},
		{args: []string{"--secure-metrics"}}, // a self-signed certificate
		{args: []string{"--secure-metrics", "--tls-cert-file=/etc/tls/tls.crt", "--tls-private-key-file=/etc/tls/tls.key"}},
		{args: []string{"--secure-metrics", "--metrics-bind-address=127.0.0.1:8443", "--authorization-always-allow-paths=/healthz,/debug/*"}},
		{args: []string{"--secure-metrics", "--authorization-always-allow-paths="}}, // probes need a token too
		{args: []string{"--secure-metrics", "--tls-cert-file=/etc/tls/tls.crt"}, wantErr: "--tls-private-key-file: must be set with --tls-cert-file"},
		{args: []string{"--secure-metrics", "--tls-private-key-file=/etc/tls/tls.key"}, wantErr: "--tls-cert-file: must be set with --tls-private-key-file"},
		{args: []string{"--tls-cert-file=/etc/tls/tls.crt", "--tls-private-key-file=/etc/tls/tls.key"}, wantErr: "--secure-metrics: must be on"},
		{args: []string{"--secure-metrics", "--metrics-bind-address=0"}, wantErr: "--secure-metrics: needs a --metrics-bind-address"},
		{args: []string{"--secure-metrics", "--authorization-always-allow-paths=/de*bug"}, wantErr: `--authorization-always-allow-paths: always-allowed path "/de*bug": only a trailing * is allowed`},
		{args: []string{"--secure-metrics=maybe"}, wantErr: "secure-metrics"},
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

// TestDeploymentArgsParse: the flags deploy/deployment.yaml passes are valid.
func TestDeploymentArgsParse(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	if err := yaml.UnmarshalStrict(raw, &dep); err != nil {
		t.Fatal(err)
	}
	args := dep.Spec.Template.Spec.Containers[0].Args
	o, err := parse(args)
	if err != nil {
		t.Fatalf("parse(%q): %v", args, err)
	}
	if !o.secureMetrics {
		t.Errorf("deploy/deployment.yaml does not turn --secure-metrics on")
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
			o.applyClientOptions(cfg, "node-1_0a1b2c3d")
			if cfg.QPS != tt.qps || cfg.Burst != tt.burst || cfg.ContentType != tt.contentType {
				t.Errorf("QPS %v, burst %d, content type %q; want %v, %d, %q", cfg.QPS, cfg.Burst, cfg.ContentType, tt.qps, tt.burst, tt.contentType)
			}
			// The audit log tells replicas apart by this; bench/audit parses it.
			if want := "daemonset-controller/node-1_0a1b2c3d"; cfg.UserAgent != want {
				t.Errorf("user agent %q, want %q", cfg.UserAgent, want)
			}
		})
	}
}

// The identity is the hostname and 8 hex digits: no '/' or space, so that it
// is one segment of the user agent.
func TestIdentityIsOneUserAgentSegment(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	a, err := identity()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := identity()
	if !regexp.MustCompile(`^`+regexp.QuoteMeta(host)+`_[0-9a-f]{8}$`).MatchString(a) || a == b {
		t.Errorf("identities %q, %q; want %s_<8 random hex digits>, each new", a, b, host)
	}
	if strings.ContainsAny(a, "/ ") {
		t.Errorf("identity %q has a '/' or a space", a)
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

// pflag takes a back-quoted word in a usage string as the value's name
// ("--metrics-bind-address 0"): every flag's help must read as written.
func TestHelpHasNoBackQuotedValueNames(t *testing.T) {
	fs := pflag.NewFlagSet("help", pflag.ContinueOnError)
	newOptions().addFlags(fs)
	fs.VisitAll(func(fl *pflag.Flag) {
		if _, usage := pflag.UnquoteUsage(fl); usage != fl.Usage {
			t.Errorf("--%s: pflag shows its usage as %q, not as written", fl.Name, usage)
		}
	})
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
