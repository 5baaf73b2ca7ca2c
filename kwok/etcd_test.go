package kwok

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// kwokctl-record.yaml is the kwok.yaml that kwokctl v0.8.0 wrote for a
// cluster of ours, with the cache folder renamed /cache.
func readRecord(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "kwokctl-record.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestEtcdURLFromRecord(t *testing.T) {
	record := readRecord(t)
	const servers = "--etcd-servers=http://127.0.0.1:32765"
	if !strings.Contains(record, servers) {
		t.Fatalf("testdata lacks %q", servers)
	}
	edit := func(old, new string) string { return strings.Replace(record, old, new, 1) }
	tests := []struct {
		name    string
		record  string
		want    string
		wantErr string
	}{
		{name: "kwokctl's record", record: record, want: "http://127.0.0.1:32765"},
		{name: "the first of several", record: edit(servers, "--etcd-servers=http://127.0.0.1:4001,http://127.0.0.1:4002"), want: "http://127.0.0.1:4001"},
		{name: "wildcard host", record: edit(servers, "--etcd-servers=http://0.0.0.0:2379"), want: "http://127.0.0.1:2379"},
		{name: "IPv6 wildcard host", record: edit(servers, "--etcd-servers=http://[::]:2379"), want: "http://127.0.0.1:2379"},
		{name: "named host", record: edit(servers, "--etcd-servers=http://localhost:2379"), want: "http://localhost:2379"},
		{name: "TLS", record: edit(servers, "--etcd-servers=https://127.0.0.1:2379"), wantErr: `scheme "https", want http`},
		{name: "no port", record: edit(servers, "--etcd-servers=http://127.0.0.1"), wantErr: "want host:port"},
		{name: "no --etcd-servers", record: edit(servers, "--etcd-cafile=/x"), wantErr: "kube-apiserver has no --etcd-servers"},
		{name: "no kube-apiserver", record: strings.ReplaceAll(record, "name: kube-apiserver", "name: other"), wantErr: "no component kube-apiserver"},
		{name: "only the kwok controller's document", record: record[strings.Index(record, "---"):], wantErr: "no KwokctlConfiguration document"},
		{name: "not YAML", record: "kind: [", wantErr: "decoding a document's kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := etcdURLFromRecord([]byte(tt.record))
			checkURL(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestEtcdURLReadsTheClustersRecord(t *testing.T) {
	c, err := Open(ClusterConfig{Name: "rec", Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EtcdURL(); err == nil || !strings.Contains(err.Error(), `record of cluster "rec"`) {
		t.Fatalf("without a record: %v", err)
	}
	if err := os.MkdirAll(c.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.Dir(), "kwok.yaml"), []byte(readRecord(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := c.EtcdURL(); err != nil || got != "http://127.0.0.1:32765" {
		t.Fatalf("EtcdURL = %q, %v", got, err)
	}
}

// fakeGateway stands in for etcd's gRPC gateway: it answers /v3/kv/range
// with a header at revision rev, and /v3/kv/compaction with compactStatus
// and compactBody (200 and a header when empty). It records each request.
type fakeGateway struct {
	rev           string
	rangeStatus   int
	rangeBody     string
	compactStatus int
	compactBody   string
	got           []string // "path body"
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.got = append(g.got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(body))
	answer := func(status int, body, def string) {
		if status == 0 {
			status = http.StatusOK
		}
		if body == "" {
			body = def
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
	header := `{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","revision":"` + g.rev + `","raft_term":"2"}}`
	switch r.URL.Path {
	case "/v3/kv/range":
		answer(g.rangeStatus, g.rangeBody, header)
	case "/v3/kv/compaction":
		answer(g.compactStatus, g.compactBody, header)
	default:
		answer(http.StatusNotFound, `{"code":5,"message":"Not Found"}`, "")
	}
}

func TestCompactEtcd(t *testing.T) {
	const (
		wantRange   = `POST /v3/kv/range application/json {"key":"AA=="}`
		wantCompact = `POST /v3/kv/compaction application/json {"revision":"4242","physical":true}`
		compacted   = `{"code":11,"message":"etcdserver: mvcc: required revision has been compacted","details":[]}`
	)
	tests := []struct {
		name     string
		gw       fakeGateway
		want     int64
		wantErr  string
		wantReqs []string
	}{
		{
			name:     "compacts at the current revision",
			gw:       fakeGateway{rev: "4242"},
			want:     4242,
			wantReqs: []string{wantRange, wantCompact},
		},
		{
			name:     "a revision compacted already is success",
			gw:       fakeGateway{rev: "4242", compactStatus: http.StatusBadRequest, compactBody: compacted},
			want:     4242,
			wantReqs: []string{wantRange, wantCompact},
		},
		{
			name:     "a refused compaction",
			gw:       fakeGateway{rev: "4242", compactStatus: http.StatusServiceUnavailable, compactBody: `{"code":14,"message":"etcdserver: no leader"}`},
			wantErr:  "compacting at revision 4242: POST http://HOST/v3/kv/compaction: etcd answered HTTP 503: etcdserver: no leader (gRPC code 14)",
			wantReqs: []string{wantRange, wantCompact},
		},
		{
			name:     "a range that fails without JSON",
			gw:       fakeGateway{rangeStatus: http.StatusBadGateway, rangeBody: "upstream down\n"},
			wantErr:  "reading the revision: POST http://HOST/v3/kv/range: etcd answered HTTP 502: upstream down",
			wantReqs: []string{wantRange},
		},
		{
			name:     "no revision in the header",
			gw:       fakeGateway{rangeBody: `{"header":{"cluster_id":"1"}}`},
			wantErr:  "etcd's answer has no revision",
			wantReqs: []string{wantRange},
		},
		{
			name:     "a revision that is no number",
			gw:       fakeGateway{rev: "many"},
			wantErr:  `int64 "many"`,
			wantReqs: []string{wantRange},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(&tt.gw)
			defer srv.Close()
			got, err := compactEtcd(t.Context(), srv.Client(), srv.URL)
			if tt.wantErr != "" {
				want := strings.ReplaceAll(tt.wantErr, "http://HOST", srv.URL)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("got %d, %v; want an error containing %q", got, err, want)
				}
			} else if err != nil || got != tt.want {
				t.Errorf("got %d, %v; want %d", got, err, tt.want)
			}
			if diff := cmp.Diff(tt.wantReqs, tt.gw.got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompactEtcdWithoutEtcd(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := compactEtcd(ctx, srv.Client(), url); err == nil || !strings.Contains(err.Error(), "reading the revision: POST "+url+"/v3/kv/range") {
		t.Fatalf("got %v, want an error naming the request", err)
	}
}

func TestEtcdInt64ReadsStringsAndNumbers(t *testing.T) {
	for in, want := range map[string]etcdInt64{`"17"`: 17, `17`: 17, `"-3"`: -3, `"9223372036854775807"`: 9223372036854775807} {
		var got etcdInt64
		if err := json.Unmarshal([]byte(in), &got); err != nil || got != want {
			t.Errorf("%s: got %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{`"x"`, `1.5`, `true`} {
		var got etcdInt64
		if err := json.Unmarshal([]byte(in), &got); err == nil {
			t.Errorf("%s: got %d, want an error", in, got)
		}
	}
	out, err := json.Marshal(etcdCompactionRequest{Revision: 9223372036854775807, Physical: true})
	if err != nil || string(out) != `{"revision":"9223372036854775807","physical":true}` {
		t.Errorf("compaction request = %s, %v", out, err)
	}
}

func TestKwokServerURLFromRecord(t *testing.T) {
	record := readRecord(t)
	const addr = "--server-address=0.0.0.0:32763"
	if !strings.Contains(record, addr) {
		t.Fatalf("testdata lacks %q", addr)
	}
	edit := func(new string) string { return strings.Replace(record, addr, new, 1) }
	tests := []struct {
		name, record, want, wantErr string
	}{
		{name: "kwokctl's record (wildcard host)", record: record, want: "http://127.0.0.1:32763"},
		{name: "loopback", record: edit("--server-address=127.0.0.1:4000"), want: "http://127.0.0.1:4000"},
		{name: "no port", record: edit("--server-address=127.0.0.1"), wantErr: "want host:port"},
		{name: "no --server-address", record: edit("--node-port=1"), wantErr: "kwok-controller has no --server-address"},
		{name: "no kwok controller", record: strings.ReplaceAll(record, "name: kwok-controller", "name: other"), wantErr: "no component kwok-controller"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kwokServerURLFromRecord([]byte(tt.record))
			checkURL(t, got, err, tt.want, tt.wantErr)
		})
	}
}

// checkURL checks a URL read from kwokctl's record: want, or an error
// containing wantErr when it is set.
func checkURL(t *testing.T, got string, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("got %q, %v; want an error containing %q", got, err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}
