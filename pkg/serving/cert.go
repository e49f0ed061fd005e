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
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// servingTLSConfig is the TLS configuration of the metrics server. Its
// certificate comes from certFile and keyFile, reloaded whenever they change
// (a cert-manager renewal needs no restart), or, when neither is given, from
// signed (the controller's CA's, pkg/certauthority's MetricsCA) as soon as it
// returns one, and until then, or when signed is nil, is a self-signed one
// generated in memory at start, as kube-controller-manager does.
func servingTLSConfig(
	ctx context.Context, certFile, keyFile string, signed func() *tls.Certificate,
) (*tls.Config, error) {
	var getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	switch {
	case certFile == "" && keyFile == "":
		c, err := selfSignedCertificate()
		if err != nil {
			return nil, err
		}
		getCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if signed != nil {
				if s := signed(); s != nil {
					return s, nil
				}
			}
			return c, nil
		}
	case certFile == "" || keyFile == "":
		return nil, errors.New("-tls-cert-file and -tls-private-key-file must be given together")
	default:
		r, err := newReloadingCertificate(ctx, certFile, keyFile)
		if err != nil {
			return nil, err
		}
		getCertificate = r.get
	}
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: getCertificate,
		// HTTP/1.1 only: a scrape is one request, and without HTTP/2 its
		// server-side attack surface (e.g. rapid reset) is not exposed.
		NextProtos: []string{"http/1.1"},
	}, nil
}

// selfSignedCertificate generates a certificate for the host name (the pod's
// name in a cluster), localhost and the loopback addresses, signed by a CA
// generated with it and thrown away. Nobody can verify it: it is served
// until the controller's CA has signed one, or for good when the webhook,
// and with it the CA, is off (-webhook-bind-address=0); give such a
// controller a real certificate with -tls-cert-file.
func selfSignedCertificate() (*tls.Certificate, error) {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	loopback := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey(host, loopback, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("generating a self-signed serving certificate: %w", err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the self-signed serving certificate: %w", err)
	}
	return &c, nil
}

// reloadingCertificate serves the certificate and key of two files, and
// picks up new contents when they change. k8s.io/apiserver's
// DynamicCertKeyPairContent watches the files (and re-reads them every
// minute in case a watch event is missed), and keeps the last pair that
// parsed and matched; this type parses each new pair once for the TLS
// handshakes.
type reloadingCertificate struct {
	content *dynamiccertificates.DynamicCertKeyPairContent
	current atomic.Pointer[tls.Certificate]
	logger  klog.Logger
}

// newReloadingCertificate loads the pair (an error if it does not load) and
// watches the files until ctx ends.
func newReloadingCertificate(ctx context.Context, certFile, keyFile string) (*reloadingCertificate, error) {
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("metrics-serving-cert", certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading -tls-cert-file and -tls-private-key-file: %w", err)
	}
	logger := klog.FromContext(ctx).WithValues("certFile", certFile, "keyFile", keyFile)
	r := &reloadingCertificate{content: content, logger: logger}
	if err := r.load(); err != nil {
		return nil, err
	}
	content.AddListener(r)
	go content.Run(ctx, 1)
	return r, nil
}

// Enqueue is called by the DynamicCertKeyPairContent when the files hold a
// new valid pair.
func (r *reloadingCertificate) Enqueue() {
	if err := r.load(); err != nil {
		r.logger.Error(err, "Keeping the previous serving certificate")
		return
	}
	r.logger.Info("Loaded a new serving certificate")
}

// load parses the current pair and makes it the one served.
func (r *reloadingCertificate) load() error {
	certPEM, keyPEM := r.content.CurrentCertKeyContent()
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("parsing the serving certificate: %w", err)
	}
	r.current.Store(&c)
	return nil
}

// get is the tls.Config's GetCertificate.
func (r *reloadingCertificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.current.Load(), nil
}
