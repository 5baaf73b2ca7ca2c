package secureserving_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/util/cert"

	"github.com/dsbench/dsbench/controller/secureserving"
)

// serveTLS serves h over TLS with c on a local port, as the controller
// does: a TCP listener wrapped by tls.NewListener.
func serveTLS(t *testing.T, c tls.Certificate, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(tls.NewListener(ln, secureserving.TLSConfig(c))) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String()
}

// clientTrusting is an HTTP client that trusts the CA that signed c (the
// last certificate of its chain).
func clientTrusting(t *testing.T, c tls.Certificate, maxVersion uint16) *http.Client {
	t.Helper()
	ca, err := x509.ParseCertificate(c.Certificate[len(c.Certificate)-1])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MaxVersion: maxVersion},
		ForceAttemptHTTP2: true,
	}}
}

func TestSelfSignedServing(t *testing.T) {
	c, err := secureserving.SelfSignedCertificate("localhost", "127.0.0.1", "controller-0")
	if err != nil {
		t.Fatal(err)
	}
	url := serveTLS(t, c, backend)

	resp, err := clientTrusting(t, c, 0).Get(url + "/healthz")
	if err != nil {
		t.Fatalf("GET over TLS, the certificate verified against its CA: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" {
		t.Errorf("GET /healthz = %d %q", resp.StatusCode, body)
	}
	if resp.Proto != "HTTP/1.1" || resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("served %s over TLS %x, want HTTP/1.1 over TLS 1.2 or newer", resp.Proto, resp.TLS.Version)
	}
	leaf := resp.TLS.PeerCertificates[0]
	for _, name := range []string{"localhost", "127.0.0.1", "controller-0"} {
		if err := leaf.VerifyHostname(name); err != nil {
			t.Errorf("certificate not valid for %s: %v", name, err)
		}
	}

	_, err = clientTrusting(t, c, tls.VersionTLS11).Get(url + "/healthz")
	if err == nil {
		t.Error("a TLS 1.1 client was served, want the handshake refused")
	}
}

func TestLoadCertificate(t *testing.T) {
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("metrics.example", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := errors.Join(os.WriteFile(certFile, certPEM, 0o600), os.WriteFile(keyFile, keyPEM, 0o600)); err != nil {
		t.Fatal(err)
	}

	c, err := secureserving.LoadCertificate(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if c.Leaf == nil || c.Leaf.VerifyHostname("metrics.example") != nil {
		t.Errorf("loaded certificate %+v is not the one written", c.Leaf)
	}

	missing := filepath.Join(dir, "missing.key")
	if _, err := secureserving.LoadCertificate(certFile, missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing key: error %v, want one naming %s", err, missing)
	}
	if _, err := secureserving.LoadCertificate(keyFile, certFile); err == nil {
		t.Error("certificate and key swapped: loaded, want an error")
	}
}
