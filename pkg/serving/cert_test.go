/*
Copyright The Sample Controller Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package serving

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/cert"
)

// servedCertificate starts an HTTPS server with tlsConfig on 127.0.0.1 and
// returns the leaf certificate a client sees.
func servedCertificate(t *testing.T, tlsConfig *tls.Config) func() *x509.Certificate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(tls.NewListener(ln, tlsConfig)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return func() *x509.Certificate {
		t.Helper()
		// Verification is the scraper's business; this only looks.
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}
}

func TestSelfSignedCertificateByDefault(t *testing.T) {
	tlsConfig, err := servingTLSConfig(context.Background(), "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tlsConfig.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion %x, want TLS 1.2", tlsConfig.MinVersion)
	}
	leaf := servedCertificate(t, tlsConfig)()
	if !slices.Contains(leaf.DNSNames, "localhost") || !slices.ContainsFunc(leaf.IPAddresses, net.IP.IsLoopback) {
		t.Errorf("self-signed certificate for DNS %v and IPs %v, want localhost and 127.0.0.1 among them", leaf.DNSNames, leaf.IPAddresses)
	}
	t.Logf("self-signed certificate for %q valid until %v", leaf.Subject.CommonName, leaf.NotAfter)
}

func TestCertificateFilesGoTogether(t *testing.T) {
	for _, files := range [][2]string{{"tls.crt", ""}, {"", "tls.key"}} {
		if _, err := servingTLSConfig(context.Background(), files[0], files[1], nil); err == nil {
			t.Errorf("-tls-cert-file=%q -tls-private-key-file=%q accepted", files[0], files[1])
		}
	}
}

// writeCertificate writes a new self-signed pair for host to the files.
func writeCertificate(t *testing.T, certFile, keyFile, host string) {
	t.Helper()
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The key first: a reload between the two writes finds the new key with
	// the old certificate, a mismatch that is rejected, not served.
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A renewed certificate (cert-manager rewriting the Secret's files) is served
// without a restart.
func TestCertificateFilesReloaded(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeCertificate(t, certFile, keyFile, "first.example")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tlsConfig, err := servingTLSConfig(ctx, certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := servedCertificate(t, tlsConfig)
	if got := served().DNSNames; !slices.Equal(got, []string{"first.example"}) {
		t.Fatalf("serving a certificate for %v, want [first.example]", got)
	}

	writeCertificate(t, certFile, keyFile, "second.example")
	written := time.Now()
	var got []string
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = served().DNSNames
		return slices.Equal(got, []string{"second.example"}), nil
	})
	if err != nil {
		t.Fatalf("still serving a certificate for %v 30 s after the files changed: %v", got, err)
	}
	t.Logf("new certificate served %v after the files were written", time.Since(written).Round(time.Millisecond))
}
