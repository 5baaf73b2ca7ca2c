package controller_test

// The secure metrics port against the KWOK cluster's API server (RBAC on):
// real TokenReviews of ServiceAccount tokens, real SubjectAccessReviews
// against the roles in deploy/.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/dsbench/dsbench/controller"
	"github.com/dsbench/dsbench/controller/secureserving"
	"github.com/dsbench/dsbench/kwok/kwoktest"
)

// TestIntegrationSecureMetrics serves /metrics as --secure-metrics does,
// the reviews asked by a ServiceAccount bound to deploy/clusterrole.yaml
// (as the Deployment's), and scrapes it with ServiceAccount tokens from
// TokenRequests: a scraper bound to deploy/metrics-reader-clusterrole.yaml is
// served, accounts without that binding are forbidden, a request without a
// valid token is unauthorized.
func TestIntegrationSecureMetrics(t *testing.T) {
	cluster, _, _ := kwoktest.Cluster(t)
	e := newEnvOn(t, cluster)
	ns := e.namespace("secure-metrics")
	for _, sa := range []string{"controller", "scraper", "stranger"} {
		_, err := e.client.CoreV1().ServiceAccounts(ns).Create(e.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The roles as shipped, under names of this test's own.
	e.bindClusterRole("../deploy/clusterrole.yaml", "dsbench-it-secure-metrics-controller", ns, "controller")
	e.bindClusterRole("../deploy/metrics-reader-clusterrole.yaml", "dsbench-it-secure-metrics-reader", ns, "scraper")
	// RBAC reads bindings from an informer: wait until it has them, so that
	// the filter never caches a denial from before.
	e.waitFor(30*time.Second, "the test's RBAC bindings in effect", func(ctx context.Context) (bool, string, error) {
		for _, q := range []struct {
			sa    string
			attrs authorizationv1.SubjectAccessReviewSpec
		}{
			{"controller", authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}}},
			{"controller", authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}}},
			{"scraper", authorizationv1.SubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}}},
		} {
			q.attrs.User = "system:serviceaccount:" + ns + ":" + q.sa
			r, err := e.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: q.attrs}, metav1.CreateOptions{})
			if err != nil {
				return false, "", err
			}
			if !r.Status.Allowed {
				return false, q.attrs.User + " not yet allowed", nil
			}
		}
		return true, "", nil
	})
	tokens := map[string]string{}
	for _, sa := range []string{"controller", "scraper", "stranger"} {
		tr, err := e.client.CoreV1().ServiceAccounts(ns).CreateToken(e.ctx, sa,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("requesting a token for %s/%s: %v", ns, sa, err)
		}
		tokens[sa] = tr.Status.Token
	}

	// The server, wired as run.go wires it, its API client counted in its
	// own metrics.
	metrics := controller.NewMetrics()
	cfg := rest.AnonymousClientConfig(e.cfg)
	cfg.BearerToken = tokens["controller"]
	cfg.Wrap(metrics.WrapTransport)
	authClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuilder{}
	filter, err := secureserving.NewFilter(secureserving.FilterConfig{
		Client:           authClient,
		AlwaysAllowPaths: []string{"/healthz", "/readyz"},
		Logger:           funcr.New(func(prefix, args string) { logs.WriteString(prefix + " " + args + "\n") }, funcr.Options{Verbosity: 10}),
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	cert, err := secureserving.SelfSignedCertificate("localhost", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	url, client := serveSecure(t, cert, filter.Wrap(mux))

	tests := []struct {
		name, path, token string
		wantCode          int
		wantBody          string
	}{
		{name: "no token", path: "/metrics", wantCode: http.StatusUnauthorized},
		{name: "not a token", path: "/metrics", token: "not-a-token", wantCode: http.StatusUnauthorized},
		{name: "an account without the binding", path: "/metrics", token: tokens["stranger"], wantCode: http.StatusForbidden,
			wantBody: `cannot get path "/metrics"`},
		{name: "the controller's own account", path: "/metrics", token: tokens["controller"], wantCode: http.StatusForbidden},
		// The reviews this server asked show among its metrics
		// (dsbench_controller_api_requests_total).
		{name: "the bound scraper", path: "/metrics", token: tokens["scraper"], wantCode: http.StatusOK,
			wantBody: `resource="tokenreviews"`},
		{name: "the bound scraper, from the caches", path: "/metrics", token: tokens["scraper"], wantCode: http.StatusOK},
		{name: "health without a token", path: "/healthz", wantCode: http.StatusOK, wantBody: "ok"},
	}
	for _, tt := range tests {
		req, err := http.NewRequestWithContext(e.ctx, "GET", url+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
			t.Errorf("%s: GET %s = %d %.300q, want %d and a body with %q", tt.name, tt.path, resp.StatusCode, body, tt.wantCode, tt.wantBody)
		}
	}
	for sa, token := range tokens {
		if strings.Contains(logs.String(), token) {
			t.Errorf("the filter's log shows the token of %s", sa)
		}
	}
}

// bindClusterRole creates the ClusterRole of file under name, binds it to
// the ServiceAccount ns/sa, and deletes both on cleanup.
func (e *env) bindClusterRole(file, name, ns, sa string) {
	t := e.t
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(raw, &role); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	role.ObjectMeta = metav1.ObjectMeta{Name: name}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}
	roles, bindings := e.client.RbacV1().ClusterRoles(), e.client.RbacV1().ClusterRoleBindings()
	remove := func(ctx context.Context) error {
		return errors.Join(ignoreNotFound(bindings.Delete(ctx, name, metav1.DeleteOptions{})),
			ignoreNotFound(roles.Delete(ctx, name, metav1.DeleteOptions{})))
	}
	// A run that crashed may have left them.
	if err := remove(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := remove(ctx); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if _, err := roles.Create(e.ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRole %s from %s: %v", name, file, err)
	}
	if _, err := bindings.Create(e.ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ClusterRoleBinding %s: %v", name, err)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// serveSecure serves h over TLS with cert on a local port, as run.go does,
// and returns its URL and a client that verifies cert against its CA.
func serveSecure(t *testing.T, cert tls.Certificate, h http.Handler) (string, *http.Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(tls.NewListener(ln, secureserving.TLSConfig(cert))) }()
	t.Cleanup(func() { _ = srv.Close() })
	ca, err := x509.ParseCertificate(cert.Certificate[len(cert.Certificate)-1])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return "https://" + ln.Addr().String(), client
}

// lockedBuilder is a strings.Builder that handlers may write concurrently.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
