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

package certauthority

import (
	"bytes"
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
	"strconv"
	"strings"
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
	// successionKey holds the endorsements of the signing CA by the CAs
	// the replica that made it trusted (succeed): what makes the other
	// replicas, which trusted those, trust it. The token that may write
	// the Secret can write ca.crt and ca.key, but not sign for a CA it
	// never held the key of.
	successionKey = "ca.sig"
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

// successionType is the PEM type of one endorsement in ca.sig; its header
// endorserHeader names the SHA-256 of the endorsing CA's DER. Its context
// differs from endorsementContext: a CA's endorsement of an earlier one
// (trusted.sig) must never pass for one of its successor.
const (
	successionType    = "CA SUCCESSION"
	endorserHeader    = "Endorser-SHA256"
	successionContext = "sample-controller webhook CA succession\x00"
)

// backdate is how long before its issue a certificate is valid from: an API
// server whose clock is behind ours would otherwise refuse a leaf that is
// "not yet valid" in the moments after a replica switched to it.
const backdate = time.Hour

// caCommonNamePrefix starts the common name of every CA newAuthority
// makes, followed by the Unix time it was made at: the subject a CA must
// have to be trusted (rules).
const caCommonNamePrefix = "sample-controller-webhook-ca@"

// clockSkew is how far ahead of this replica's clock another replica's may
// be, beyond the backdate, and the CA it made still be trusted (rules): a
// CA starts an hour before it was made, so only a clock more than an hour
// and clockSkew ahead makes one that starts in the future here.
const clockSkew = 5 * time.Minute

// The reasons a CA is refused (rules.refuse), the values of the reason
// label of samplecontroller_webhook_refused_cas.
const (
	refusedKey         = "key"           // not an ECDSA P-256 key, the only kind newAuthority makes
	refusedSubject     = "subject"       // not the subject newAuthority gives a CA
	refusedIssuer      = "issuer"        // not self-signed: newAuthority makes roots only
	refusedNotYetValid = "not_yet_valid" // starts more than clockSkew ahead
	refusedLifetime    = "lifetime"      // valid longer than the backdate and the CA validity or LegacyCAValidity
	refusedUnendorsed  = "unendorsed"    // a signing CA no CA the replica trusts endorsed (ca.sig)
)

// refusedReasons are the reasons, in the order rules.refuse and then
// rules.refuseSigning check them.
var refusedReasons = []string{refusedKey, refusedSubject, refusedIssuer, refusedNotYetValid, refusedLifetime,
	refusedUnendorsed}

// The roles of a refused CA, the values of the ca label of
// samplecontroller_webhook_refused_cas: the Secret's signing CA, or a CA of
// trusted.crt the signing CA endorsed.
const (
	roleSigning  = "signing"
	roleEndorsed = "endorsed"
)

// refusal says why a CA is not one this controller could have made.
type refusal struct {
	cert *x509.Certificate
	// reason is one of refusedReasons; detail says it with the values, for
	// the event and the log.
	reason, detail string
}

// rules are what a CA must be to be trusted: one this controller could
// have made, at now, with a CA validity of validity. Whoever can update the
// Secret (a stolen token of the controller's ServiceAccount among them) can
// write ca.crt and ca.key; what they write then is trusted only if it is
// what newAuthority makes: an ECDSA P-256 key, the controller's subject, a
// root, started no later than now (and clockSkew), and valid no longer than
// validity after its backdate; or LegacyCAValidity, if longer, where an
// earlier release could have made it: endorsed, or a signing CA without
// ca.sig (refuseSigning), which is then rotated at once and dropped once
// every replica moved (overlong). A weak key, or one valid for a century
// and carried through every rotation, is not. Nor is a signing CA of the
// controller's kind that no CA the replica trusts endorsed (anchors,
// refuseSigning): one made by whoever wrote the Secret rather than by a
// replica. Anyone with the key of a trusted CA (the token reads ca.key) can
// still make a CA that passes: these rules bound what such a CA can be, and
// the revocation (revoke-now) ends it.
type rules struct {
	now      time.Time
	validity time.Duration
	// anchors are the CAs this replica trusts already: a signing CA must
	// be one of them, or be endorsed by one (ca.sig). None, for a replica
	// that has trusted no CA yet: it takes the Secret's, as the first
	// replica of a new install must.
	anchors []*x509.Certificate
}

// refuse returns why c is not a CA this controller could have made, nil if
// it could have: made by a replica of this release, or of an earlier one
// (valid for up to LegacyCAValidity).
func (r rules) refuse(c *x509.Certificate) *refusal {
	return r.refuseMade(c, true)
}

// refuseMade is refuse, but for a CA no earlier release could have made
// (earlier is false): valid for no longer than the CA validity.
func (r rules) refuseMade(c *x509.Certificate, earlier bool) *refusal {
	refused := func(reason, format string, args ...any) *refusal {
		return &refusal{cert: c, reason: reason, detail: fmt.Sprintf(format, args...)}
	}
	if key, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || key.Curve != elliptic.P256() {
		return refused(refusedKey, "its key is %s, not ECDSA P-256", describeKey(c.PublicKey))
	}
	made, err := strconv.ParseInt(strings.TrimPrefix(c.Subject.CommonName, caCommonNamePrefix), 10, 64)
	if !strings.HasPrefix(c.Subject.CommonName, caCommonNamePrefix) || err != nil || made < 0 ||
		len(c.Subject.Names) != 1 {
		return refused(refusedSubject, "its subject is %q, not CN=%s<Unix time>", c.Subject.String(), caCommonNamePrefix)
	}
	// CheckSignatureFrom also wants c to be a CA allowed to sign
	// certificates.
	if !bytes.Equal(c.RawIssuer, c.RawSubject) || c.CheckSignatureFrom(c) != nil {
		return refused(refusedIssuer, "it is not self-signed (issuer %q)", c.Issuer.String())
	}
	if c.NotBefore.After(r.now.Add(clockSkew)) {
		return refused(refusedNotYetValid, "it is valid from %s, more than %s after now (%s)",
			c.NotBefore.UTC().Format(time.RFC3339), clockSkew, r.now.UTC().Format(time.RFC3339))
	}
	// No skew here: both ends were set from one clock, the maker's, and in
	// whole seconds truncated alike, so a CA newAuthority made is valid for
	// exactly validity and the backdate.
	limit, what := r.validity, fmt.Sprintf("the CA validity of %s", r.validity)
	if earlier && limit < LegacyCAValidity {
		limit, what = LegacyCAValidity, fmt.Sprintf("the %s an earlier release made a CA valid for", LegacyCAValidity)
	}
	if lifetime := c.NotAfter.Sub(c.NotBefore); lifetime > limit+backdate {
		return refused(refusedLifetime, "it is valid for %s, longer than %s and the %s backdate", lifetime, what, backdate)
	}
	return nil
}

// overlong reports whether c, which refuse trusts, is valid for longer than
// the CA validity and the backdate: made by an earlier release
// (LegacyCAValidity), or under a -webhook-ca-validity since lowered. As the
// signing CA it is due at once (ensureAuthority); endorsed, it is carried
// through the rotation that replaces it, for the leaves it signed, and
// dropped once every replica serves the CA that replaced it
// (retireOverlong).
func (r rules) overlong(c *x509.Certificate) bool {
	return c.NotAfter.Sub(c.NotBefore) > r.validity+backdate
}

// refuseSigning returns why c, the signing CA of a Secret whose ca.sig is
// succession, is not to be trusted, nil if it is: refuse's rules, and one of
// r.anchors or endorsed by one. The endorsement, not the key type or the
// name, is what a replica writes and a copy of the Secret's naming cannot
// forge without a trusted CA's key. No earlier release wrote ca.sig: a
// signing CA that comes with one was made by a replica of this release,
// whose CAs are valid for the CA validity, so the ten years of an earlier
// release's are no excuse for it. A ten-year CA passes only without ca.sig,
// and then only a replica that trusts no CA yet, or trusts that one, takes
// it (as an upgraded replica must), to rotate it at once.
func (r rules) refuseSigning(c *x509.Certificate, succession []byte) *refusal {
	if refused := r.refuseMade(c, len(succession) == 0); refused != nil {
		return refused
	}
	if len(r.anchors) == 0 || containsDER(derOf(r.anchors), c.Raw) || succeeds(c, r.anchors, succession) {
		return nil
	}
	return &refusal{cert: c, reason: refusedUnendorsed,
		detail: "no CA this replica trusts endorsed it in " + successionKey + ", as a replica that makes a CA does"}
}

// describeKey names a public key's algorithm and size, for a refusal.
func describeKey(public crypto.PublicKey) string {
	switch key := public.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d-bit", key.N.BitLen())
	case *ecdsa.PublicKey:
		return "ECDSA " + key.Curve.Params().Name
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return fmt.Sprintf("a %T", public)
}

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
	// succession is ca.sig: the endorsements of the signing CA by the CAs
	// the replica that made it trusted (succeed).
	succession []byte
	// foreign is the CAs of trusted.crt the signing CA did not endorse:
	// written there by someone else. They never reach the caBundle.
	foreign []*x509.Certificate
	// refused is set when the signing CA is not one this controller could
	// have made (rules): then nothing of the Secret is trusted, trusted
	// and bundle are empty, and the manager keeps the CAs it had (sync).
	refused *refusal
	// overlong is set when the signing CA, trusted, is valid for longer
	// than the CA validity (rules.overlong): it is due. overlongEndorsed
	// is set when one of the other trusted CAs is: it is to be dropped
	// (retireOverlong).
	overlong, overlongEndorsed bool
	// refusedEndorsed is the CAs the signing CA endorsed that this
	// controller could not have made: left out of trusted, as foreign ones
	// are.
	refusedEndorsed []*refusal
}

// parseAuthority reads the CA of a Secret, and fails on anything this
// package would not have written: a signing CA that is not one certificate,
// a key that does not match it, a trusted.crt that does not trust it. The
// CAs of trusted.crt the signing CA did not endorse are set apart as
// foreign, not trusted (trustDecision). A signing CA, or an endorsed one,
// that this controller could not have made by r is refused, not trusted, as
// is a signing CA none of r.anchors endorsed: a refused signing CA leaves
// nothing trusted.
func parseAuthority(secret *corev1.Secret, r rules) (*authority, error) {
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
	endorsed, foreign := trustDecision(signer, trusted, secret.Data[endorsementsKey])
	ca := &authority{secret: secret, signer: signer, key: key, endorsements: secret.Data[endorsementsKey],
		succession: secret.Data[successionKey], foreign: foreign}
	if ca.refused = r.refuseSigning(signer, ca.succession); ca.refused != nil {
		// What a key this controller did not make endorsed is worth no
		// more than the key.
		return ca, nil
	}
	ca.overlong = r.overlong(signer)
	for _, c := range endorsed {
		if c.Equal(signer) {
			ca.trusted = append(ca.trusted, c)
		} else if refused := r.refuse(c); refused != nil {
			ca.refusedEndorsed = append(ca.refusedEndorsed, refused)
		} else {
			ca.trusted = append(ca.trusted, c)
			ca.overlongEndorsed = ca.overlongEndorsed || r.overlong(c)
		}
	}
	if ca.bundle, err = cert.EncodeCertificates(ca.trusted...); err != nil {
		return nil, err
	}
	return ca, nil
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
		sig, err := signWith(key, algorithm, endorsed(c))
		if err != nil {
			return nil, fmt.Errorf("endorsing CA %q: %w", c.Subject.CommonName, err)
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{
			Type: endorsementType, Headers: map[string]string{endorsedHeader: fingerprint(c)}, Bytes: sig,
		})...)
	}
	return out, nil
}

// signWith signs message with key, as x509 verifies algorithm.
func signWith(key crypto.Signer, algorithm x509.SignatureAlgorithm, message []byte) ([]byte, error) {
	if algorithm == x509.PureEd25519 {
		return key.Sign(rand.Reader, message, crypto.Hash(0))
	}
	digest := sha256.Sum256(message)
	return key.Sign(rand.Reader, digest[:], crypto.SHA256)
}

// endorser is a CA whose key endorses its successor (succeed).
type endorser struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// succeed is ca.sig for next: one endorsement by each of endorsers, those
// of the CAs the replica that made next trusted, one PEM block each, named
// by the endorser's SHA-256. A CA listed twice signs once.
func succeed(next *x509.Certificate, endorsers []endorser) ([]byte, error) {
	var out []byte
	signed := map[string]bool{}
	for _, e := range endorsers {
		sum := fingerprint(e.cert)
		if signed[sum] {
			continue
		}
		signed[sum] = true
		algorithm, ok := endorsementAlgorithm(e.key.Public())
		if !ok {
			return nil, fmt.Errorf("cannot endorse with a %T key", e.key.Public())
		}
		sig, err := signWith(e.key, algorithm, successor(next))
		if err != nil {
			return nil, fmt.Errorf("endorsing the new CA with CA %q: %w", e.cert.Subject.CommonName, err)
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{
			Type: successionType, Headers: map[string]string{endorserHeader: sum}, Bytes: sig,
		})...)
	}
	return out, nil
}

// succeeds reports whether one of anchors endorsed c in successionPEM.
func succeeds(c *x509.Certificate, anchors []*x509.Certificate, successionPEM []byte) bool {
	bySum := map[string]*x509.Certificate{}
	for _, a := range anchors {
		bySum[fingerprint(a)] = a
	}
	for rest := successionPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return false
		}
		anchor := bySum[block.Headers[endorserHeader]]
		if block.Type != successionType || anchor == nil {
			continue
		}
		algorithm, ok := endorsementAlgorithm(anchor.PublicKey)
		if ok && anchor.CheckSignature(algorithm, successor(c), block.Bytes) == nil {
			return true
		}
	}
}

// successor is what an endorsement of c by a CA it succeeds signs.
func successor(c *x509.Certificate) []byte {
	return append([]byte(successionContext), c.Raw...)
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
// then the CAs of keep that have not expired, each endorsed by the new CA;
// the new CA is endorsed in turn by each of endorsers (ca.sig). keep and
// endorsers must hold only CAs this replica trusts: the trusted CAs of the
// Secret it replaces, never a caBundle's.
func newAuthority(now time.Time, validity time.Duration, keep []*x509.Certificate, endorsers []endorser) (
	*authority, error) {
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
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s%d", caCommonNamePrefix, now.Unix())},
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
	succession, err := succeed(signer, endorsers)
	if err != nil {
		return nil, err
	}
	return &authority{signer: signer, key: key, trusted: trusted, bundle: bundle, endorsements: endorsements,
		succession: succession}, nil
}

// data is the Secret's data for the CA; trusted.sig and ca.sig are left
// out when they would be empty.
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
	if len(a.succession) > 0 {
		data[successionKey] = a.succession
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
