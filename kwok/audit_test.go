package kwok

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestAuditPolicyGolden keeps the policy kube-apiserver gets in
// testdata/audit-policy.yaml, where a reviewer can read it as YAML.
func TestAuditPolicyGolden(t *testing.T) {
	got, err := AuditPolicy(AuditConfig{LeaseNamespace: "dsbench-system"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "audit-policy.yaml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		_ = os.WriteFile(path+".got", got, 0o644)
		t.Errorf("audit policy (-want +got), written to %s.got; rerun with -update if intended:\n%s", path, diff)
	}
}

func TestAuditConfigRendering(t *testing.T) {
	for _, tt := range []struct {
		name    string
		audit   *AuditConfig
		wantLog string   // AuditLog(), relative to the workdir
		want    []string // in the kwokctl config
		notWant []string
		wantErr string
	}{
		{
			name:    "off",
			notWant: []string{"kubeAuditPolicy", "audit-log-maxsize"},
		},
		{
			name:    "on",
			audit:   &AuditConfig{LeaseNamespace: "dsbench-system"},
			wantLog: "clusters/x/logs/audit.log",
			want:    []string{"kubeAuditPolicy: /w/x.audit-policy.yaml", "key: audit-log-maxsize\n    override: false\n    value: \"0\""},
		},
		{name: "no namespace", audit: &AuditConfig{}, wantErr: `audit lease namespace ""`},
		{name: "bad namespace", audit: &AuditConfig{LeaseNamespace: "Kube_System"}, wantErr: `audit lease namespace "Kube_System"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Open(ClusterConfig{Name: "x", Workdir: "/w", Audit: tt.audit})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Open = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantLog := ""
			if tt.wantLog != "" {
				wantLog = filepath.Join("/w", tt.wantLog)
			}
			if got := c.AuditLog(); got != wantLog {
				t.Errorf("AuditLog() = %q, want %q", got, wantLog)
			}
			data, err := c.kwokctlConfig()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(data), w) {
					t.Errorf("config lacks %q:\n%s", w, data)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(string(data), w) {
					t.Errorf("config has %q:\n%s", w, data)
				}
			}
		})
	}
}
