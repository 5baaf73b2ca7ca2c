package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A line as kube-apiserver v1.36 writes it at Metadata level.
const realLine = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0c3f9a52-6b1e-4f5e-9d7a-2f4c1b8e6a10","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods/ds-x7k2p","verb":"delete","user":{"username":"kwok-admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"daemonset-controller/node-1_0a1b2c3d","objectRef":{"resource":"pods","namespace":"default","name":"ds-x7k2p","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-01-02T03:04:05.123456Z","stageTimestamp":"2026-01-02T03:04:05.131072Z","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}`

func TestDecodeReadsTheFieldsOfARealLine(t *testing.T) {
	log, err := Decode("audit.log", strings.NewReader(realLine+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Events) != 1 {
		t.Fatalf("%d events, want 1", len(log.Events))
	}
	want := Event{
		APIVersion: "audit.k8s.io/v1", Kind: "Event", AuditID: "0c3f9a52-6b1e-4f5e-9d7a-2f4c1b8e6a10",
		Stage: StageResponseComplete, Verb: "delete", UserAgent: "daemonset-controller/node-1_0a1b2c3d",
		ObjectRef:                &ObjectRef{Resource: "pods", Namespace: "default", Name: "ds-x7k2p"},
		RequestReceivedTimestamp: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC),
		StageTimestamp:           time.Date(2026, 1, 2, 3, 4, 5, 131072000, time.UTC),
		Line:                     1,
	}
	want.User.Username = "kwok-admin"
	want.ResponseStatus = &struct {
		Code int `json:"code"`
	}{200}
	if diff := cmp.Diff(want, log.Events[0]); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDecodeLines(t *testing.T) {
	good := pod(1, "a", "create", "p1").line()
	tests := []struct {
		name    string
		in      string
		events  int
		partial bool
		wantErr string // "" for none; else a substring, and the error wraps ErrMalformed
	}{
		{name: "empty", in: ""},
		{name: "blank lines skipped", in: "\n" + good + "\n  \n\n" + good + "\n", events: 2},
		{name: "CRLF", in: good + "\r\n", events: 1},
		{name: "no final newline", in: good, events: 1},
		{name: "partial last line left out", in: good + "\n" + good[:len(good)/2], events: 1, partial: true},
		{name: "partial line before the end", in: good[:len(good)/2] + "\n" + good + "\n", wantErr: "x.log:1: malformed audit log: "},
		{name: "not JSON", in: good + "\nI0102 03:04:05 hello\n", wantErr: "x.log:2: malformed audit log: invalid character"},
		{name: "legacy format", in: `2026-01-02T03:04:05Z AUDIT: id="x" stage="ResponseComplete" ip="127.0.0.1" method="delete"` + "\n", wantErr: "x.log:1: malformed audit log"},
		{name: "an array", in: "[]\n", wantErr: "x.log:1: malformed audit log: json: cannot unmarshal array"},
		{name: "null", in: "null\n", wantErr: `x.log:1: malformed audit log: not an audit.k8s.io/v1 Event (apiVersion "", kind "")`},
		{name: "other kind", in: `{"kind":"Policy","apiVersion":"audit.k8s.io/v1"}` + "\n", wantErr: `x.log:1: malformed audit log: not an audit.k8s.io/v1 Event (apiVersion "audit.k8s.io/v1", kind "Policy")`},
		{name: "v1beta1", in: ev{sec: 1, ua: "x", verb: "create", resource: "pods", code: 201, overrideAPIVersion: "audit.k8s.io/v1beta1"}.line() + "\n", wantErr: `x.log:1: malformed audit log: not an audit.k8s.io/v1 Event (apiVersion "audit.k8s.io/v1beta1"`},
		{name: "no verb", in: `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"q","stage":"ResponseComplete","requestReceivedTimestamp":"2026-01-02T03:04:05.000000Z"}` + "\n", wantErr: `event "q" has no verb`},
		{name: "no timestamp", in: `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"q","stage":"ResponseComplete","verb":"get"}` + "\n", wantErr: `event "q" has no requestReceivedTimestamp`},
		{name: "bad timestamp", in: ev{sec: 1, ua: "x", verb: "create", resource: "pods", code: 201, overrideRequestTime: "yesterday"}.line() + "\n", wantErr: `x.log:1: malformed audit log: parsing time "yesterday"`},
		{name: "unknown stage", in: ev{sec: 1, ua: "x", verb: "create", resource: "pods", code: 201, stage: "Done"}.line() + "\n", wantErr: `unknown stage "Done"`},
		{name: "wrong type", in: `{"kind":"Event","apiVersion":"audit.k8s.io/v1","verb":"get","objectRef":"pods"}` + "\n", wantErr: "x.log:1: malformed audit log: json: cannot unmarshal string"},
		{name: "line too long", in: good + "\n" + strings.Repeat(" ", maxLine+1) + "\n", wantErr: "x.log:2: malformed audit log: line longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, err := Decode("x.log", strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrMalformed) {
					t.Fatalf("Decode = %v, want an ErrMalformed containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(log.Events) != tt.events || log.PartialLastLine != tt.partial || log.Name != "x.log" {
				t.Errorf("%d events, partial %v, name %q; want %d, %v, x.log", len(log.Events), log.PartialLastLine, log.Name, tt.events, tt.partial)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(realLine+"\n{\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err == nil || !strings.HasPrefix(err.Error(), path+":2: ") {
		t.Errorf("ReadFile = %v, want an error at %s:2", err, path)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.log")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile of a missing file = %v, want os.ErrNotExist", err)
	}
}
