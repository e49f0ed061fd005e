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
	"bytes"
	"context"
	"fmt"
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

// remember keeps the CAs ca trusts, for a Secret created again
// (createAuthority), and reports the CAs of trusted.crt it does not trust:
// the metric counts them at every reconcile, a Warning event on the Secret
// names each once for as long as it stays there.
func (m *Manager) remember(ctx context.Context, ca *authority) {
	metrics.WebhookForeignCAs.Set(float64(len(ca.foreign)))
	m.mu.Lock()
	m.known = ca.trusted
	present := map[string]bool{}
	for _, c := range ca.foreign {
		sum := fingerprint(c)
		present[sum] = true
		if !m.reported[sum] {
			m.reported[sum] = true
			klog.FromContext(ctx).Info("Leaving out of the caBundle a CA the signing CA did not endorse",
				"subject", c.Subject.String(), "sha256", sum)
			if m.events != nil && ca.secret != nil {
				m.events.Eventf(ca.secret, corev1.EventTypeWarning, ReasonForeignCA,
					"%s holds CA %q (SHA-256 %s), which the signing CA did not endorse: it is left out of the "+
						"caBundle of CRD %s. Someone other than the controller wrote it; remove it from the Secret.",
					trustedKey, c.Subject.String(), sum, m.o.CRDName)
			}
		}
	}
	for sum := range m.reported {
		if !present[sum] {
			delete(m.reported, sum) // gone: reported again should it come back
		}
	}
	m.mu.Unlock()
}

// finishRevocation drops every CA but the signing one from trusted.crt once
// a revocation is under way (RevokingAnnotation) and this replica both
// serves a certificate of the signing CA and has seen the caBundle trust it
// for revokeGrace: every replica has moved to it by then. The update
// carries the resourceVersion read; a Conflict is retried from the Secret's
// next event.
func (m *Manager) finishRevocation(ctx context.Context, ca *authority, now time.Time) (*authority, error) {
	if ca.secret == nil || ca.secret.Annotations[RevokingAnnotation] == "" {
		return ca, nil
	}
	m.mu.Lock()
	moved := bytes.Equal(m.servedBy, ca.signer.Raw) && bytes.Equal(m.signerSeen, ca.signer.Raw) &&
		now.Sub(m.signerSeenAt) >= revokeGrace
	m.mu.Unlock()
	if !moved {
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
	revoked, err := parseAuthority(updated)
	if err != nil {
		return nil, err
	}
	revoked.fromAPI = true
	klog.FromContext(ctx).Info("Revoked every conversion webhook CA but the signing one", "revocation", request,
		"dropped", len(ca.trusted)-1, "notAfter", ca.signer.NotAfter)
	m.remember(ctx, revoked)
	return revoked, nil
}
