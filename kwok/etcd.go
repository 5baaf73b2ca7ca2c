package kwok

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	configv1alpha1 "sigs.k8s.io/kwok/pkg/apis/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// ComponentKubeAPIServer is kube-apiserver's name in kwokctl's pid files,
// logs and record of the cluster.
const ComponentKubeAPIServer = "kube-apiserver"

// recordPath is kwokctl's record of the cluster: its configuration with
// every component's binary and arguments, as `kwokctl create cluster` wrote
// them and as `kwokctl start cluster` reads them.
func (c *Cluster) recordPath() string { return filepath.Join(c.Dir(), "kwok.yaml") }

// EtcdURL is the base URL of the cluster's etcd: the first of
// kube-apiserver's --etcd-servers in kwokctl's record of the cluster, so the
// etcd that the API server uses. A wildcard host is replaced by 127.0.0.1.
func (c *Cluster) EtcdURL() (string, error) {
	data, err := os.ReadFile(c.recordPath())
	if err != nil {
		return "", fmt.Errorf("reading kwokctl's record of cluster %q: %w", c.conf.Name, err)
	}
	u, err := etcdURLFromRecord(data)
	if err != nil {
		return "", fmt.Errorf("finding the etcd of cluster %q in %s: %w", c.conf.Name, c.recordPath(), err)
	}
	return u, nil
}

// kwokctlRecord decodes the KwokctlConfiguration document of kwok.yaml,
// which also holds the kwok controller's configuration.
func kwokctlRecord(data []byte) (*configv1alpha1.KwokctlConfiguration, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no %s document", configv1alpha1.KwokctlConfigurationKind)
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML documents: %w", err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("decoding a document's kind: %w", err)
		}
		if meta.Kind != configv1alpha1.KwokctlConfigurationKind {
			continue
		}
		var conf configv1alpha1.KwokctlConfiguration
		if err := yaml.Unmarshal(doc, &conf); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", meta.Kind, err)
		}
		return &conf, nil
	}
}

// etcdURLFromRecord finds the URL of etcd in kwokctl's record of a cluster.
func etcdURLFromRecord(data []byte) (string, error) {
	conf, err := kwokctlRecord(data)
	if err != nil {
		return "", err
	}
	for _, comp := range conf.Components {
		if comp.Name != ComponentKubeAPIServer {
			continue
		}
		for _, arg := range comp.Args {
			if servers, ok := strings.CutPrefix(arg, "--etcd-servers="); ok {
				first, _, _ := strings.Cut(servers, ",")
				return etcdBaseURL(first)
			}
		}
		return "", fmt.Errorf("component %s has no --etcd-servers argument", ComponentKubeAPIServer)
	}
	return "", fmt.Errorf("no component %s", ComponentKubeAPIServer)
}

// etcdBaseURL checks one of --etcd-servers and makes it dialable.
func etcdBaseURL(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", fmt.Errorf("etcd server %q: %w", server, err)
	}
	if u.Scheme != "http" {
		// kwokctl's binary runtime serves etcd in plain HTTP; TLS would
		// need the client certificate that the API server uses.
		return "", fmt.Errorf("etcd server %q: scheme %q, want http (TLS is not supported)", server, u.Scheme)
	}
	addr, ok := dialable(u.Host)
	if !ok {
		return "", fmt.Errorf("etcd server %q: want host:port", server)
	}
	return "http://" + addr, nil
}

// dialable is a listen address as a client dials it: host:port with a
// wildcard host (or none) replaced by 127.0.0.1; false without a port.
func dialable(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", false
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), true
}

// etcdCompactTimeout bounds each request to etcd's gateway. A physical
// compaction returns once the old revisions are gone from the backend,
// which takes seconds on a database of a few hundred megabytes.
const etcdCompactTimeout = 2 * time.Minute

// CompactEtcd compacts etcd's history up to its current revision, which it
// returns, and waits until the compaction is applied (etcd's "physical"
// compaction). Reads and watches from an older revision then fail in etcd
// with "required revision has been compacted", which kube-apiserver turns
// into 410 Gone.
//
// kube-apiserver's watch cache serves watches by itself while the resource
// version is still in its window, compaction or not; a compaction bites
// where etcd is asked for the past: the watch cache's own watch when it
// restarts (after an API server restart, or when its etcd watch breaks) and
// paginated lists continued from an old token. Clients resuming from before
// the cache's new start then get 410 and must list again.
//
// It talks to etcd's gRPC gateway (JSON over HTTP) at EtcdURL: POST
// /v3/kv/range for the revision, then POST /v3/kv/compaction.
func (c *Cluster) CompactEtcd(ctx context.Context) (revision int64, err error) {
	base, err := c.EtcdURL()
	if err != nil {
		return 0, err
	}
	rev, err := compactEtcd(ctx, &http.Client{Timeout: etcdCompactTimeout}, base)
	if err != nil {
		return 0, fmt.Errorf("compacting etcd of cluster %q at %s: %w", c.conf.Name, base, err)
	}
	return rev, nil
}

// compactEtcd reads etcd's current revision at base and compacts up to it.
// A revision that is already compacted is success: nothing older is left.
func compactEtcd(ctx context.Context, client *http.Client, base string) (int64, error) {
	// The range of the single key "\x00", which no one writes: only the
	// response's header, which carries the store's revision, is of use.
	var rng etcdResponse
	if err := etcdPost(ctx, client, base+"/v3/kv/range", etcdRangeRequest{Key: []byte{0}}, &rng); err != nil {
		return 0, fmt.Errorf("reading the revision: %w", err)
	}
	rev := int64(rng.Header.Revision)
	if rev <= 0 {
		return 0, fmt.Errorf("reading the revision: etcd's answer has no revision")
	}
	var compacted etcdResponse
	err := etcdPost(ctx, client, base+"/v3/kv/compaction", etcdCompactionRequest{Revision: etcdInt64(rev), Physical: true}, &compacted)
	var gwErr *etcdGatewayError
	if errors.As(err, &gwErr) && gwErr.compacted() {
		return rev, nil
	}
	if err != nil {
		return 0, fmt.Errorf("compacting at revision %d: %w", rev, err)
	}
	return rev, nil
}

// etcdRangeRequest is etcdserverpb.RangeRequest in the gateway's JSON: bytes
// are base64, which encoding/json does for []byte.
type etcdRangeRequest struct {
	Key []byte `json:"key"`
}

// etcdCompactionRequest is etcdserverpb.CompactionRequest in the gateway's
// JSON.
type etcdCompactionRequest struct {
	Revision etcdInt64 `json:"revision"`
	Physical bool      `json:"physical"`
}

// etcdResponse is the part of etcd's responses that we read.
type etcdResponse struct {
	Header struct {
		Revision etcdInt64 `json:"revision"`
	} `json:"header"`
}

// etcdInt64 is an int64 as protobuf's JSON mapping writes it: a string of
// digits. A bare number is read too.
type etcdInt64 int64

func (n etcdInt64) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(strconv.FormatInt(int64(n), 10))), nil
}

func (n *etcdInt64) UnmarshalJSON(b []byte) error {
	s := string(b)
	if unq, err := strconv.Unquote(s); err == nil {
		s = unq
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("int64 %s: %w", b, err)
	}
	*n = etcdInt64(v)
	return nil
}

// etcdGatewayError is the gateway's answer to a failed call: the HTTP status
// and the gRPC status that it carries.
type etcdGatewayError struct {
	HTTPStatus int    `json:"-"`
	Code       int    `json:"code"`
	Message    string `json:"message"`
}

func (e *etcdGatewayError) Error() string {
	return fmt.Sprintf("etcd answered HTTP %d: %s (gRPC code %d)", e.HTTPStatus, e.Message, e.Code)
}

// compacted says whether etcd refused because the revision is compacted
// already (rpctypes.ErrGRPCCompacted, code OutOfRange).
func (e *etcdGatewayError) compacted() bool {
	return strings.Contains(e.Message, "required revision has been compacted")
}

// etcdPost sends one JSON request to etcd's gateway and decodes the answer
// into out.
func etcdPost(ctx context.Context, client *http.Client, endpoint string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding the request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("POST %s: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("POST %s: reading the answer: %w", endpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		gwErr := &etcdGatewayError{HTTPStatus: resp.StatusCode}
		if err := json.Unmarshal(data, gwErr); err != nil || gwErr.Message == "" {
			gwErr.Message = strings.TrimSpace(lastLines(string(data), 3))
		}
		return fmt.Errorf("POST %s: %w", endpoint, gwErr)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: decoding the answer %q: %w", endpoint, lastLines(string(data), 3), err)
	}
	return nil
}
