package secureserving

import (
	"crypto/tls"
	"fmt"
	"net"

	"k8s.io/client-go/util/cert"
)

// TLSConfig serves c with TLS 1.2 or newer.
func TLSConfig(c tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{c},
		// HTTP/1.1 only, as controller-runtime's metrics server by default
		// since HTTP/2 rapid reset (CVE-2023-44487): a scrape gains nothing
		// from HTTP/2, and its stream handling is attack surface.
		NextProtos: []string{"http/1.1"},
	}
}

// LoadCertificate reads a PEM certificate (chain) and its private key.
func LoadCertificate(certFile, keyFile string) (tls.Certificate, error) {
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("loading the serving certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return c, nil
}

// SelfSignedCertificate generates, in memory only, a certificate for host
// and the alternate names (IP addresses or DNS names), signed by a CA that
// is generated with it and is sent after it in the chain. Nothing is
// written to disk, so a read-only root file system is no obstacle; a new
// process serves a new certificate.
func SelfSignedCertificate(host string, alternates ...string) (tls.Certificate, error) {
	var ips []net.IP
	var dns []string
	for _, a := range alternates {
		if ip := net.ParseIP(a); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, a)
		}
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, ips, dns)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generating a self-signed certificate for %s: %w", host, err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("parsing the self-signed certificate for %s: %w", host, err)
	}
	return c, nil
}
