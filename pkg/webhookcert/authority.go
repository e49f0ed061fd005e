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
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
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
	// endorsementsKey holds, for each CA of trusted.crt but the signing
	// one, the signing CA's signature over it (endorse): what makes it
	// trusted. A CA written into trusted.crt by anyone without ca.key has
	// none, and never reaches the caBundle.
	endorsementsKey = "trusted.sig"
)

// endorsementType is the PEM type of one endorsement in trusted.sig,
// without the controller's name, which a copy made by hack/new-controller
// would have to rename in upper case; its header endorsedHeader names the
// SHA-256 of the endorsed CA's DER, for a human reader and to pair it with
// its CA.
const (
	endorsementType = "CA ENDORSEMENT"
	endorsedHeader  = "Certificate-SHA256"
)

// endorsementContext prefixes what an endorsement signs, so that a
// signature made for it can be taken for nothing else the CA key signs
// (certificates sign a TBSCertificate, never this prefix).
const endorsementContext = "sample-controller webhook CA endorsement\x00"

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
	// trusted is the CAs of trusted.crt this authority vouches for: the
	// signing CA and those it endorsed (endorse), in trusted.crt's order.
	// bundle is them in PEM, what the caBundle must be byte for byte, and
	// endorsements the trusted.sig that vouches for them.
	trusted      []*x509.Certificate
	bundle       []byte
	endorsements []byte
	// foreign is the CAs of trusted.crt the signing CA did not endorse:
	// written there by someone else. They never reach the caBundle.
	foreign []*x509.Certificate
}

// parseAuthority reads the CA of a Secret, and fails on anything this
// package would not have written: a signing CA that is not one certificate,
// a key that does not match it, a trusted.crt that does not trust it. The
// CAs of trusted.crt the signing CA did not endorse are set apart as
// foreign, not trusted (trustDecision).
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
	accepted, foreign := trustDecision(signer, trusted, secret.Data[endorsementsKey])
	bundle, err := cert.EncodeCertificates(accepted...)
	if err != nil {
		return nil, err
	}
	return &authority{
		secret: secret, signer: signer, key: key,
		trusted: accepted, bundle: bundle, endorsements: secret.Data[endorsementsKey], foreign: foreign,
	}, nil
}

// trustDecision splits the CAs of trusted.crt into those signer vouches
// for, trusted (signer itself, and each CA an endorsement of
// endorsementsPEM made by signer's key signs), and the others, foreign;
// each in trusted.crt's order, a repeated CA once. Only the holder of the
// signing CA's key can endorse: a CA written into trusted.crt by anyone
// else, or carried over from a caBundle anyone with patch on the CRD could
// have written, is foreign.
func trustDecision(signer *x509.Certificate, certs []*x509.Certificate, endorsementsPEM []byte) (
	trusted, foreign []*x509.Certificate) {
	signatures := map[string][][]byte{}
	for rest := endorsementsPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == endorsementType {
			sum := block.Headers[endorsedHeader]
			signatures[sum] = append(signatures[sum], block.Bytes)
		}
	}
	seen := map[string]bool{}
	for _, c := range certs {
		sum := fingerprint(c)
		if seen[sum] {
			continue
		}
		seen[sum] = true
		switch {
		case c.Equal(signer):
			trusted = append(trusted, c)
		case c.IsCA && endorsedBy(signer, c, signatures[sum]):
			trusted = append(trusted, c)
		default:
			foreign = append(foreign, c)
		}
	}
	return trusted, foreign
}

// endorsedBy reports whether one of signatures is signer's endorsement of c.
func endorsedBy(signer, c *x509.Certificate, signatures [][]byte) bool {
	algorithm, ok := endorsementAlgorithm(signer.PublicKey)
	if !ok {
		return false
	}
	for _, sig := range signatures {
		if signer.CheckSignature(algorithm, endorsed(c), sig) == nil {
			return true
		}
	}
	return false
}

// endorse signs each of certs with key, the signing CA's, as trusted.sig
// holds them: one PEM block per CA, in order.
func endorse(key crypto.Signer, certs []*x509.Certificate) ([]byte, error) {
	algorithm, ok := endorsementAlgorithm(key.Public())
	if !ok {
		return nil, fmt.Errorf("cannot endorse with a %T key", key.Public())
	}
	var out []byte
	for _, c := range certs {
		message := endorsed(c)
		var sig []byte
		var err error
		if algorithm == x509.PureEd25519 {
			sig, err = key.Sign(rand.Reader, message, crypto.Hash(0))
		} else {
			digest := sha256.Sum256(message)
			sig, err = key.Sign(rand.Reader, digest[:], crypto.SHA256)
		}
		if err != nil {
			return nil, fmt.Errorf("endorsing CA %q: %w", c.Subject.CommonName, err)
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{
			Type: endorsementType, Headers: map[string]string{endorsedHeader: fingerprint(c)}, Bytes: sig,
		})...)
	}
	return out, nil
}

// endorsementAlgorithm is the signature algorithm of an endorsement by a
// key of public's type: those x509 verifies with SHA-256.
func endorsementAlgorithm(public crypto.PublicKey) (x509.SignatureAlgorithm, bool) {
	switch public.(type) {
	case *ecdsa.PublicKey:
		return x509.ECDSAWithSHA256, true
	case *rsa.PublicKey:
		return x509.SHA256WithRSA, true
	case ed25519.PublicKey:
		return x509.PureEd25519, true
	}
	return x509.UnknownSignatureAlgorithm, false
}

// endorsed is what an endorsement of c signs.
func endorsed(c *x509.Certificate) []byte {
	return append([]byte(endorsementContext), c.Raw...)
}

// fingerprint is the SHA-256 of c's DER, in hex, as openssl x509
// -fingerprint -sha256 prints it without the colons.
func fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// newAuthority generates a CA valid for validity from now, trusted first,
// then the CAs of keep that have not expired, each endorsed by the new CA.
// keep must hold only CAs this package vouched for: the trusted CAs of the
// Secret it replaces, never a caBundle's.
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
	bundle, err := cert.EncodeCertificates(trusted...)
	if err != nil {
		return nil, err
	}
	endorsements, err := endorse(key, trusted[1:])
	if err != nil {
		return nil, err
	}
	return &authority{signer: signer, key: key, trusted: trusted, bundle: bundle, endorsements: endorsements}, nil
}

// data is the Secret's data for the CA; trusted.sig is left out when it
// would be empty.
func (a *authority) data() map[string][]byte {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(a.key)
	if err != nil {
		// An ECDSA key generated here always marshals.
		panic(fmt.Sprintf("marshalling the CA key: %v", err))
	}
	certPEM, _ := cert.EncodeCertificates(a.signer) // never fails
	data := map[string][]byte{caCertKey: certPEM, caKeyKey: keyPEM, trustedKey: a.bundle}
	if len(a.endorsements) > 0 {
		data[endorsementsKey] = a.endorsements
	}
	return data
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
