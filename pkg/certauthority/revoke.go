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
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/metrics"
)

// The annotations of the CA Secret that revoke its CAs. An operator sets
// RevokeAnnotation to a new value (a timestamp, say) to revoke every CA the
// caBundle trusts now: a replica rotates to a new CA at once and marks the
// Secret RevokingAnnotation with that value; once every replica serves a
// certificate of the new CA, a replica drops every other CA from trusted.crt
// and the caBundle and marks the Secret RevokedAnnotation with the value.
const (
	RevokeAnnotation   = "samplecontroller.k8s.io/revoke-ca"
	RevokingAnnotation = "samplecontroller.k8s.io/revoking-ca"
	RevokedAnnotation  = "samplecontroller.k8s.io/revoked-ca"
)

// ReasonForeignCA is the reason of the Warning event on the CA Secret for a
// CA in trusted.crt that the signing CA did not endorse.
const ReasonForeignCA = "ForeignCA"

// ReasonRefusedCA is the reason of the Warning event on the CA Secret for a
// CA, signing or endorsed, that this controller could not have made (an RSA
// key, say, or a lifetime beyond the CA validity), or a signing CA no CA
// the replica trusts endorsed.
const ReasonRefusedCA = "RefusedCA"

// revokeGrace is how long a replica that serves a certificate of the new CA
// waits, after it first saw the caBundle trust that CA, before it drops the
// revoked CAs. Every other replica sees that caBundle through its own watch
// at about the same moment and switches settle later; the three settles
// beyond that are for a replica whose watch lags. A replica that lags
// longer still, when it sees the caBundle without its CA, is unready
// (Ready) and switches at once.
const revokeGrace = 4 * settle

// revokeRequest is the revocation secret asks for and no replica has
// acted on yet, "" if none.
func revokeRequest(secret *corev1.Secret) string {
	request := secret.Annotations[RevokeAnnotation]
	if request == "" || request == secret.Annotations[RevokingAnnotation] ||
		request == secret.Annotations[RevokedAnnotation] {
		return ""
	}
	return request
}

// remember keeps the CAs ca trusts, and ca itself, for a Secret created
// again (createAuthority) or refused later (keepWhatItHad), and as the CAs
// the next signing CA must be endorsed by (rules), unless its signing CA
// is refused; and reports the CAs of the Secret it does not
// trust: those of trusted.crt the signing CA did not endorse (foreign), and
// those this controller could not have made (refused). The metrics count
// them at every reconcile; a Warning event on the Secret names each once
// for as long as it stays there.
func (m *Manager) remember(ctx context.Context, ca *authority) {
	logger := klog.FromContext(ctx)
	metrics.WebhookForeignCAs.Set(float64(len(ca.foreign)))
	type refused struct {
		role string
		*refusal
	}
	var refusals []refused
	if ca.refused != nil {
		refusals = append(refusals, refused{roleSigning, ca.refused})
	}
	for _, r := range ca.refusedEndorsed {
		refusals = append(refusals, refused{roleEndorsed, r})
	}
	// Every series, 0 included, so that a dashboard tells "none" from "not
	// read yet".
	for _, role := range []string{roleSigning, roleEndorsed} {
		for _, reason := range refusedReasons {
			if role == roleEndorsed && reason == refusedUnendorsed {
				continue // the signing CA vouches for an endorsed one
			}
			n := 0
			for _, r := range refusals {
				if r.role == role && r.reason == reason {
					n++
				}
			}
			metrics.WebhookRefusedCAs.WithLabelValues(role, reason).Set(float64(n))
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if ca.refused == nil {
		m.known, m.good = ca.trusted, ca
	}
	present := map[string]bool{}
	// once reports what key names once, for as long as it stays.
	once := func(key string) bool {
		present[key] = true
		if m.reported[key] {
			return false
		}
		m.reported[key] = true
		return m.events != nil && ca.secret != nil
	}
	for _, c := range ca.foreign {
		sum := fingerprint(c)
		if !m.reported["foreign "+sum] {
			logger.Info("Leaving out of the caBundle a CA the signing CA did not endorse",
				"subject", c.Subject.String(), "sha256", sum)
		}
		if once("foreign " + sum) {
			m.events.Eventf(ca.secret, corev1.EventTypeWarning, ReasonForeignCA,
				"%s holds CA %q (SHA-256 %s), which the signing CA did not endorse: it is left out of the "+
					"caBundle of CRD %s. Someone other than the controller wrote it; remove it from the Secret.",
				trustedKey, c.Subject.String(), sum, m.o.CRDName)
		}
	}
	for _, r := range refusals {
		sum := fingerprint(r.cert)
		key := r.role + " " + sum
		if !m.reported[key] {
			logger.Info("Refusing a CA of the Secret that the controller could not have made", "ca", r.role,
				"subject", r.cert.Subject.String(), "sha256", sum, "reason", r.reason, "detail", r.detail)
		}
		if !once(key) {
			continue
		}
		if r.role == roleSigning {
			m.events.Eventf(ca.secret, corev1.EventTypeWarning, ReasonRefusedCA,
				"%s holds CA %q (SHA-256 %s), which the controller could not have made: %s. It is not trusted: "+
					"the caBundle of CRD %s keeps the CAs it had, and nothing is written. Find who wrote the "+
					"Secret, then revoke the CA.",
				caCertKey, r.cert.Subject.String(), sum, r.detail, m.o.CRDName)
		} else {
			m.events.Eventf(ca.secret, corev1.EventTypeWarning, ReasonRefusedCA,
				"%s holds CA %q (SHA-256 %s), endorsed by the signing CA, which the controller could not have "+
					"made: %s. It is left out of the caBundle of CRD %s. Find who wrote the Secret, then revoke the CA.",
				trustedKey, r.cert.Subject.String(), sum, r.detail, m.o.CRDName)
		}
	}
	for key := range m.reported {
		if !present[key] {
			delete(m.reported, key) // gone: reported again should it come back
		}
	}
}

// finishRevocation drops every CA but the signing one from trusted.crt once
// a revocation is under way (RevokingAnnotation) and this replica both
// serves a certificate of the signing CA and has seen the caBundle trust it
// for revokeGrace: every replica has moved to it by then. The update
// carries the resourceVersion read; a Conflict is retried from the Secret's
// next event.
func (m *Manager) finishRevocation(ctx context.Context, ca *authority, now time.Time) (*authority, error) {
	if ca.secret == nil || ca.secret.Annotations[RevokingAnnotation] == "" || !m.everyReplicaMoved(ca, now) {
		return ca, nil
	}
	secret := ca.secret.DeepCopy()
	request := secret.Annotations[RevokingAnnotation]
	secret.Data[trustedKey], _ = cert.EncodeCertificates(ca.signer) // never fails
	delete(secret.Data, endorsementsKey)
	delete(secret.Annotations, RevokingAnnotation)
	secret.Annotations[RevokedAnnotation] = request
	updated, err := m.client.CoreV1().Secrets(m.o.Namespace).Update(ctx, secret, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("dropping the revoked CAs from Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
	}
	revoked, err := parseAuthority(updated, m.rules(now))
	if err != nil {
		return nil, err
	}
	revoked.fromAPI = true
	klog.FromContext(ctx).Info("Revoked every conversion webhook CA but the signing one", "revocation", request,
		"dropped", len(ca.trusted)-1, "notAfter", ca.signer.NotAfter)
	m.remember(ctx, revoked)
	return revoked, nil
}

// everyReplicaMoved reports whether every replica serves a certificate of
// ca's signing CA, as far as this one can tell: it serves one itself, and has
// seen the caBundle trust that CA for revokeGrace.
func (m *Manager) everyReplicaMoved(ca *authority, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Equal(m.servedBy, ca.signer.Raw) && bytes.Equal(m.signerSeen, ca.signer.Raw) &&
		now.Sub(m.signerSeenAt) >= revokeGrace
}

// retireOverlong drops from trusted.crt (and so from the caBundle) the CAs
// the signing CA endorsed that are valid for longer than the CA validity
// (rules.overlong), once every replica serves a certificate of the signing
// CA (everyReplicaMoved), as a revocation drops the CAs it revokes: an
// earlier release's ten-year CA, which the upgrade rotated at once
// (ensureAuthority), or one endorsed with a key the token read. Kept until
// it expires, as a CA replaced in time is, it would stay trusted for years
// although no replica serves from it, and whoever wrote it, if not an
// earlier release, could sign for the webhook that long. The rest of the
// Secret is left as it is. The update carries the resourceVersion read; a
// Conflict is retried from the Secret's next event.
func (m *Manager) retireOverlong(ctx context.Context, ca *authority, now time.Time) (*authority, error) {
	if ca.secret == nil || ca.refused != nil || ca.overlong || !ca.overlongEndorsed || !m.everyReplicaMoved(ca, now) {
		return ca, nil
	}
	r := m.rules(now)
	retired := map[string]bool{}
	for _, c := range ca.trusted {
		if !c.Equal(ca.signer) && r.overlong(c) {
			retired[fingerprint(c)] = true
		}
	}
	certs, err := cert.ParseCertsPEM(ca.secret.Data[trustedKey])
	if err != nil {
		return nil, err // parseAuthority parsed it
	}
	certs = slices.DeleteFunc(certs, func(c *x509.Certificate) bool { return retired[fingerprint(c)] })
	var endorsements []byte
	for rest := ca.secret.Data[endorsementsKey]; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if !retired[block.Headers[endorsedHeader]] {
			endorsements = append(endorsements, pem.EncodeToMemory(block)...)
		}
	}
	secret := ca.secret.DeepCopy()
	secret.Data[trustedKey], _ = cert.EncodeCertificates(certs...) // never fails
	secret.Data[endorsementsKey] = endorsements
	if len(endorsements) == 0 {
		delete(secret.Data, endorsementsKey)
	}
	updated, err := m.client.CoreV1().Secrets(m.o.Namespace).Update(ctx, secret, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("dropping the CAs valid longer than the CA validity from Secret %s/%s: %w",
			m.o.Namespace, m.o.SecretName, err)
	}
	retiredCA, err := parseAuthority(updated, m.rules(now))
	if err != nil {
		return nil, err
	}
	retiredCA.fromAPI = true
	klog.FromContext(ctx).Info("Dropped the CAs valid for longer than the CA validity, every replica serving the "+
		"signing CA", "dropped", len(retired), "caValidity", m.o.CAValidity)
	m.remember(ctx, retiredCA)
	return retiredCA, nil
}
