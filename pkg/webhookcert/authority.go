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

package webhookcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// The keys of the Secret.
const (
	caCertKey  = "ca.crt"      // the signing CA, PEM
	caKeyKey   = "ca.key"      // its private key, PEM
	trustedKey = "trusted.crt" // the caBundle: the signing CA, then older live CAs
)

// backdate is how long before its issue a certificate is valid from: an API
// server whose clock is behind ours would otherwise refuse a leaf that is
// "not yet valid" in the moments after a replica switched to it.
const backdate = time.Hour

// authority is the CA of the Secret.
type authority struct {
	// secret is the Secret as read or written; nil for a CA not yet
	// written.
	secret *corev1.Secret
	// fromAPI is set when secret came from the API server in this
	// reconcile, not from the cache: it is current.
	fromAPI bool
	signer  *x509.Certificate
	key     crypto.Signer
	// trusted is trusted.crt parsed, and trustedBytes as stored: the
	// caBundle must be byte-identical to it.
	trusted      []*x509.Certificate
	trustedBytes []byte
}

// parseAuthority reads the CA of a Secret, and fails on anything this
// package would not have written: a signing CA that is not one certificate,
// a key that does not match it, a trusted.crt that does not trust it.
func parseAuthority(secret *corev1.Secret) (*authority, error) {
	certs, err := cert.ParseCertsPEM(secret.Data[caCertKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", caCertKey, err)
	}
	if len(certs) != 1 || !certs[0].IsCA {
		return nil, fmt.Errorf("%s holds %d certificates, want one CA", caCertKey, len(certs))
	}
	signer := certs[0]
	parsedKey, err := keyutil.ParsePrivateKeyPEM(secret.Data[caKeyKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", caKeyKey, err)
	}
	key, ok := parsedKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s holds a %T, not a signing key", caKeyKey, parsedKey)
	}
	if public, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !public.Equal(signer.PublicKey) {
		return nil, fmt.Errorf("%s is not the key of %s", caKeyKey, caCertKey)
	}
	trusted, err := cert.ParseCertsPEM(secret.Data[trustedKey])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", trustedKey, err)
	}
	if !containsDER(derOf(trusted), signer.Raw) {
		return nil, fmt.Errorf("%s does not hold %s", trustedKey, caCertKey)
	}
	return &authority{
		secret: secret, signer: signer, key: key,
		trusted: trusted, trustedBytes: secret.Data[trustedKey],
	}, nil
}

// newAuthority generates a CA valid for validity from now, trusted first,
// then the CAs of keep that have not expired.
func newAuthority(now time.Time, validity time.Duration, keep []*x509.Certificate) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		// The time tells the CAs of a bundle apart for a human reader.
		Subject:               pkix.Name{CommonName: fmt.Sprintf("sample-controller-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // it signs leaves only
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate: %w", err)
	}
	signer, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	trusted := []*x509.Certificate{signer}
	for _, c := range keep {
		if c.IsCA && now.Before(c.NotAfter) && !containsDER(derOf(trusted), c.Raw) {
			trusted = append(trusted, c)
		}
	}
	trustedBytes, err := cert.EncodeCertificates(trusted...)
	if err != nil {
		return nil, err
	}
	return &authority{signer: signer, key: key, trusted: trusted, trustedBytes: trustedBytes}, nil
}

// data is the Secret's data for the CA.
func (a *authority) data() map[string][]byte {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(a.key)
	if err != nil {
		// An ECDSA key generated here always marshals.
		panic(fmt.Sprintf("marshalling the CA key: %v", err))
	}
	certPEM, _ := cert.EncodeCertificates(a.signer) // never fails
	return map[string][]byte{caCertKey: certPEM, caKeyKey: keyPEM, trustedKey: a.trustedBytes}
}

// newLeaf issues a serving certificate for o's names from ca's signer, valid
// for o.LeafValidity but never past the CA.
func newLeaf(now time.Time, o Options, ca *authority) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a serving key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	commonName := ""
	if len(o.DNSNames) > 0 {
		commonName = o.DNSNames[0]
	} else if len(o.IPs) > 0 {
		commonName = o.IPs[0].String()
	}
	notAfter := now.Add(o.LeafValidity)
	if ca.signer.NotAfter.Before(notAfter) {
		notAfter = ca.signer.NotAfter
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              o.DNSNames,
		IPAddresses:           o.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.signer, key.Public(), ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing the serving certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// serialNumber is a random 128-bit serial number, as RFC 5280 asks for
// serials that are unique per CA.
func serialNumber() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return serial, nil
}
