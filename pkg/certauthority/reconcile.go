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
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// errWaiting marks a reconcile that cannot go on until something else
// changes (the CRD is created, say), which its watch event will tell: no
// retry is needed, but Ready reports it.
var errWaiting = errors.New("waiting")

// maxSecretAttempts bounds the reads and writes of the Secret in one
// reconcile when other replicas write it at the same time: past it, the
// reconcile fails and is retried with backoff.
const maxSecretAttempts = 3

// SecretType is the type of the CA Secret the controller creates. The
// own-names policy (artifacts/deploy/names-policy.yaml) admits no other,
// and test/names holds it to this: a Secret of the CA Secret's name but of
// type kubernetes.io/service-account-token would be filled in with a token
// that never expires, which the controller's Role lets its holder read.
const SecretType = corev1.SecretTypeOpaque

// reconcile brings the Secret, the CRD's caBundle and the served leaf in
// line, in that order, and returns how long until the next deadline (zero:
// none). It reads the informers' caches and writes to the API only what
// differs.
func (m *Manager) reconcile(ctx context.Context) (time.Duration, error) {
	next, err := m.sync(ctx)
	m.mu.Lock()
	m.problem = err
	m.mu.Unlock()
	if errors.Is(err, errWaiting) {
		klog.FromContext(ctx).V(2).Info("Not serving the conversion webhook yet", "reason", err)
		return 0, nil
	}
	return next, err
}

func (m *Manager) sync(ctx context.Context) (time.Duration, error) {
	now := m.o.Clock.Now()
	if len(m.o.DNSNames) == 0 && len(m.o.IPs) == 0 {
		return 0, errors.New("no DNS name nor IP address to issue the serving certificate for")
	}
	crd, err := m.cachedCRD()
	if err != nil {
		return 0, err
	}
	if crd == nil {
		return 0, fmt.Errorf("%w for CRD %s to exist", errWaiting, m.o.CRDName)
	}
	// With any other strategy the API server calls no webhook, and
	// spec.conversion.webhook must not be set.
	if strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); strategy != "Webhook" {
		return 0, fmt.Errorf("%w: CRD %s has conversion strategy %q, not Webhook", errWaiting, m.o.CRDName, strategy)
	}
	bundle := caBundle(crd)
	observed := parseBundle(bundle)

	// The Secret and the CRD come on two watches, and either cache may be
	// behind this manager's own last write: a create is then refused as
	// AlreadyExists, an update as a Conflict (both read the Secret afresh),
	// and a patch repeats the caBundle already written. Harmless, and only
	// right after a write.
	secret, err := m.cachedSecret()
	if err != nil {
		return 0, err
	}
	ca, err := m.ensureAuthority(ctx, secret, now)
	if err != nil {
		return 0, err
	}
	// The caBundle differing from what our cached Secret trusts may mean
	// our Secret is older than the CRD we see: another replica has rotated
	// the CA, or finished a revocation, and its Secret event has not
	// reached us yet. Copying our trusted.crt would take the new CA away
	// from the API server while replicas already serve leaves it signed,
	// or put back a revoked one. Read the Secret itself; what it trusts
	// wins (a CA someone else put in the caBundle is taken out).
	if !ca.fromAPI && !bytes.Equal(bundle, ca.bundle) {
		live, err := m.client.CoreV1().Secrets(m.o.Namespace).Get(ctx, m.o.SecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return 0, fmt.Errorf("reading Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
		}
		if ca, err = m.ensureAuthority(ctx, live, now); err != nil {
			return 0, err
		}
	}
	m.remember(ctx, ca)
	if ca.refused != nil {
		return m.keepWhatItHad(ctx, now, ca, observed)
	}
	if ca, err = m.finishRevocation(ctx, ca, now); err != nil {
		return 0, err
	}
	if ca, err = m.retireOverlong(ctx, ca, now); err != nil {
		return 0, err
	}
	if err := m.patchCABundle(ctx, bundle, ca.bundle); err != nil {
		return 0, err
	}
	// The leaf follows the caBundle as observed through the watch, not as
	// just written: a replica switches to a new CA only once the CRD that
	// holds it has been seen.
	if err := m.updateLeaf(ctx, now, ca, observed); err != nil {
		return 0, err
	}
	return m.nextDeadline(now, ca), nil
}

// keepWhatItHad is sync for a Secret whose signing CA this controller
// could not have made (rules), which remember has reported. The replica
// writes nothing. Not the Secret: repairing it would hide what someone else
// wrote there, who must be found first; revoke-now replaces it on request
// (ensureAuthority). Not the caBundle: replicas whose options differ (in a
// rollout that lowers a CA validity above LegacyCAValidity, say) judge the
// CA differently, and
// writing each its own would make them fight; no replica puts a refused CA
// there. It serves on from the CA it last trusted, held in memory, while
// the caBundle holds that. A replica started since has none: it serves a
// leaf of the refused CA only if the caBundle already trusts it, which
// widens no trust and lets such a rollout go on; else it waits, unready,
// saying why.
func (m *Manager) keepWhatItHad(
	ctx context.Context, now time.Time, ca *authority, observed []*x509.Certificate,
) (time.Duration, error) {
	m.mu.Lock()
	serving := m.good
	m.mu.Unlock()
	if serving == nil {
		serving = ca
	}
	if err := m.updateLeaf(ctx, now, serving, observed); err != nil {
		return 0, fmt.Errorf("%w; the signing CA of Secret %s/%s is refused: %s",
			err, m.o.Namespace, m.o.SecretName, ca.refused.detail)
	}
	return m.nextDeadline(now, serving), nil
}

// rules are what a CA must be for this manager to trust it, now: a signing
// CA must be, or be endorsed by, one of the CAs it trusts already (none
// before it has trusted any: it then takes the Secret's, as the first
// replica of an install must).
func (m *Manager) rules(now time.Time) rules {
	m.mu.Lock()
	defer m.mu.Unlock()
	return rules{now: now, validity: m.o.CAValidity, anchors: m.known}
}

// endorsers are the CAs whose keys endorse a CA this replica makes in place
// of old (nil: in place of none): old's signing CA, unless refused, and the
// CA this replica last trusted, which every replica that has not seen old
// yet trusts still.
func (m *Manager) endorsers(old *authority) []endorser {
	var out []endorser
	if old != nil && old.refused == nil {
		out = append(out, endorser{old.signer, old.key})
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.good != nil {
		out = append(out, endorser{m.good.signer, m.good.key})
	}
	return out
}

// cachedCRD returns the CRD from the informer's cache, nil if there is none.
func (m *Manager) cachedCRD() (*unstructured.Unstructured, error) {
	obj, exists, err := m.crd.GetStore().GetByKey(m.o.CRDName)
	if err != nil || !exists {
		return nil, err
	}
	crd, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("CRD %s cached as a %T", m.o.CRDName, obj)
	}
	return crd, nil
}

// StoredVersions returns the CRD's status.storedVersions as last cached:
// every version etcd may still hold an object in. Nil until the CRD is
// cached.
func (m *Manager) StoredVersions() []string {
	crd, err := m.cachedCRD()
	if err != nil || crd == nil {
		return nil
	}
	versions, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	return versions
}

// cachedSecret returns the Secret from the informer's cache, nil if there
// is none.
func (m *Manager) cachedSecret() (*corev1.Secret, error) {
	obj, exists, err := m.secrets.GetStore().GetByKey(m.o.Namespace + "/" + m.o.SecretName)
	if err != nil || !exists {
		return nil, err
	}
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, fmt.Errorf("secret %s/%s cached as a %T", m.o.Namespace, m.o.SecretName, obj)
	}
	return secret, nil
}

// caBundle returns the CRD's caBundle, decoded. In JSON the bytes are
// base64; what does not decode counts as empty, and is overwritten.
func caBundle(crd *unstructured.Unstructured) []byte {
	encoded, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	bundle, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil
	}
	return bundle
}

// parseBundle returns the certificates of a caBundle; none if it does not
// parse, as the API server then trusts none either.
func parseBundle(bundle []byte) []*x509.Certificate {
	certs, err := cert.ParseCertsPEM(bundle)
	if err != nil {
		return nil
	}
	return certs
}

// ensureAuthority returns the CA of secret (nil: there is none yet),
// creating or rotating it as needed: when it is two thirds through its life,
// or when an operator asks for its revocation (RevokeAnnotation). A signing
// CA this controller could not have made, or that no CA this replica trusts
// endorsed (rules), is returned refused, and replaced only on an operator's
// request. A create that finds the Secret exists, or an update that finds it
// changed, means another replica wrote it first: its Secret is read and
// judged afresh.
func (m *Manager) ensureAuthority(ctx context.Context, secret *corev1.Secret, now time.Time) (*authority, error) {
	logger := klog.FromContext(ctx)
	secrets := m.client.CoreV1().Secrets(m.o.Namespace)
	fromAPI := false
	for attempt := 1; ; attempt++ {
		var ca *authority
		var err error
		if secret == nil {
			if ca, err = m.createAuthority(ctx, now); err == nil {
				return ca, nil
			}
			if !apierrors.IsAlreadyExists(err) {
				return nil, err
			}
			logger.V(2).Info("Another replica created the CA Secret first, adopting its CA")
		} else {
			if ca, err = parseAuthority(secret, m.rules(now)); err != nil {
				// It might be someone else's Secret: never overwrite it.
				return nil, fmt.Errorf("secret %s/%s holds no CA this manager can use, leaving it as it is: %w",
					m.o.Namespace, m.o.SecretName, err)
			}
			ca.fromAPI = fromAPI
			request := revokeRequest(secret)
			// A refused CA is not rotated when due: a rotation would
			// quietly replace what someone else wrote, and endorse
			// nothing of theirs anyway. An overlong one, an earlier
			// release's, is due now: rotated as any other, it stays
			// trusted beside the next while the replicas move.
			due := ca.overlong || !now.Before(renewAt(ca.signer))
			if request == "" && (ca.refused != nil || !due) {
				return ca, nil
			}
			if ca.overlong {
				logger.Info("Rotating a CA valid for longer than the CA validity, as an earlier release made it",
					"notBefore", ca.signer.NotBefore, "notAfter", ca.signer.NotAfter, "caValidity", m.o.CAValidity)
			}
			if ca, err = m.rotateAuthority(ctx, ca, now, request); err == nil {
				return ca, nil
			}
			if !apierrors.IsConflict(err) {
				return nil, err
			}
			logger.V(2).Info("The CA Secret changed since it was read, reading it again")
		}
		if attempt == maxSecretAttempts {
			return nil, fmt.Errorf("secret %s/%s kept changing while being written: %w", m.o.Namespace, m.o.SecretName, err)
		}
		secret, err = secrets.Get(ctx, m.o.SecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			secret = nil
		case err != nil:
			return nil, fmt.Errorf("reading Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
		}
		fromAPI = true
	}
}

// createAuthority creates the Secret with a new CA, trusted along with the
// live CAs this replica last read from the Secret as trusted: a Secret
// deleted by mistake and created again then does not take from the API
// server the CA of leaves being served. Not the caBundle's CAs: whoever may
// patch the CRD could have put one there, and no key vouches for them any
// more. A replica started since (no CA read yet) carries none. The CA it
// last trusted endorses the new one, so that the other replicas, which
// trust that CA too, take it.
func (m *Manager) createAuthority(ctx context.Context, now time.Time) (*authority, error) {
	m.mu.Lock()
	carried := m.known
	m.mu.Unlock()
	ca, err := newAuthority(now, m.o.CAValidity, carried, m.endorsers(nil))
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.o.Namespace, Name: m.o.SecretName},
		Type:       SecretType,
		Data:       ca.data(),
	}
	created, err := m.client.CoreV1().Secrets(m.o.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
	}
	klog.FromContext(ctx).Info("Created the conversion webhook CA", "notAfter", ca.signer.NotAfter)
	ca.secret, ca.fromAPI = created, true
	return ca, nil
}

// rotateAuthority replaces the signing CA of old by a new one, trusted
// first, and keeps trusting old's trusted CAs that have not expired (its
// foreign and refused ones are left behind, and the overlong ones at a
// rotation due by time; for a refused signing CA, the CAs this replica last
// trusted); the new CA is endorsed by old's signing CA
// and the CA this replica last trusted (endorsers). With a revocation
// request (revokeRequest), it marks the Secret RevokingAnnotation: those old
// CAs are then dropped once every replica serves the new one
// (finishRevocation). The update carries the resourceVersion read: if
// another replica rotated meanwhile, it fails with a Conflict instead of
// replacing that CA.
func (m *Manager) rotateAuthority(
	ctx context.Context, old *authority, now time.Time, request string,
) (*authority, error) {
	keep := old.trusted
	switch {
	case old.refused != nil:
		// A refused CA trusts nothing; what this replica last trusted
		// keeps the leaves being served good, until the revocation drops
		// it too.
		m.mu.Lock()
		keep = m.known
		m.mu.Unlock()
	case request == "" && !old.overlong:
		// Due by time: every replica has served old's leaves for two
		// thirds of its life. An overlong CA it replaced, an earlier
		// release's, signs none any more, and is dropped rather than
		// trusted for the rest of its ten years.
		r := m.rules(now)
		keep = slices.DeleteFunc(slices.Clone(keep), r.overlong)
	}
	ca, err := newAuthority(now, m.o.CAValidity, keep, m.endorsers(old))
	if err != nil {
		return nil, err
	}
	secret := old.secret.DeepCopy()
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	// The old CA's, if any.
	delete(secret.Data, endorsementsKey)
	delete(secret.Data, successionKey)
	for k, v := range ca.data() {
		secret.Data[k] = v
	}
	if request != "" {
		if secret.Annotations == nil {
			secret.Annotations = map[string]string{}
		}
		secret.Annotations[RevokingAnnotation] = request
	}
	updated, err := m.client.CoreV1().Secrets(m.o.Namespace).Update(ctx, secret, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("rotating the CA in Secret %s/%s: %w", m.o.Namespace, m.o.SecretName, err)
	}
	klog.FromContext(ctx).Info("Rotated the conversion webhook CA", "revocation", request,
		"oldNotAfter", old.signer.NotAfter, "notAfter", ca.signer.NotAfter, "trusted", len(ca.trusted))
	ca.secret, ca.fromAPI = updated, true
	return ca, nil
}

// patchCABundle makes the CRD's caBundle want, if it is not already. A JSON
// merge patch sets that one field, whoever manages the rest of the CRD.
func (m *Manager) patchCABundle(ctx context.Context, current, want []byte) error {
	if bytes.Equal(current, want) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"webhook": map[string]any{"clientConfig": map[string]any{"caBundle": want}}}}})
	if err != nil {
		return err
	}
	if _, err := m.crds.Patch(ctx, m.o.CRDName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("writing the caBundle of CRD %s: %w", m.o.CRDName, err)
	}
	klog.FromContext(ctx).Info("Wrote the CRD's caBundle", "cas", len(parseBundle(want)))
	return nil
}

// settle is how long a replica that serves a leaf goes on serving it after
// it first sees the caBundle trust a new signing CA, before it serves a
// leaf of that CA. Every API server applies a new caBundle when its own
// watch of the CRD delivers it, at about the moment this replica's does,
// but not at the same moment; a leaf presented to one still on the old
// caBundle would fail the call. The old leaf is good for a third of its
// life yet, far longer.
const settle = 15 * time.Second

// MinValidity is the shortest lifetime of a CA or a serving certificate
// that renews safely: the last third, left after a renewal starts, holds
// the settle a replica waits before it serves a certificate of the next CA
// twice over, once for the wait and once for a retry.
const MinValidity = 6 * settle

// updateLeaf issues this replica a new leaf when it has none, when its leaf
// is two thirds through its life, or when the signing CA changed; but only
// from a signing CA that observed, the caBundle, holds, and, when it
// replaces a leaf of another CA, has held for settle. Until then the
// previous leaf is served: its CA is still trusted.
func (m *Manager) updateLeaf(ctx context.Context, now time.Time, ca *authority, observed []*x509.Certificate) error {
	trusted := derOf(observed)
	m.mu.Lock()
	m.trusted = trusted
	if containsDER(trusted, ca.signer.Raw) && !bytes.Equal(m.signerSeen, ca.signer.Raw) {
		m.signerSeen, m.signerSeenAt = ca.signer.Raw, now
	}
	served, servedBy := m.served, m.servedBy
	m.mu.Unlock()

	due := served == nil || !bytes.Equal(servedBy, ca.signer.Raw) || !now.Before(renewAt(served.Leaf))
	switch {
	case !due:
		return nil
	case !containsDER(trusted, ca.signer.Raw) && served == nil:
		return fmt.Errorf("%w for the caBundle of CRD %s to hold the signing CA", errWaiting, m.o.CRDName)
	case !containsDER(trusted, ca.signer.Raw):
		klog.FromContext(ctx).V(2).Info("Serving the previous certificate until the caBundle holds the signing CA")
		return nil
	// The old leaf is served on while the caBundle settles, unless the
	// caBundle no longer trusts it (a revocation finished, or this
	// replica's watch lagged): then the sooner the better.
	case served != nil && !bytes.Equal(servedBy, ca.signer.Raw) && now.Before(served.Leaf.NotAfter) &&
		containsDER(trusted, servedBy):
		m.mu.Lock()
		if !bytes.Equal(m.nextCA, ca.signer.Raw) {
			m.nextCA, m.nextCASeen = ca.signer.Raw, now
		}
		since := m.nextCASeen
		m.mu.Unlock()
		if now.Sub(since) < settle {
			klog.FromContext(ctx).V(2).Info("Serving the previous certificate while the new caBundle settles",
				"switchAt", since.Add(settle))
			return nil
		}
	}
	leaf, err := newLeaf(now, m.o, ca)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.served, m.servedBy = leaf, ca.signer.Raw
	m.mu.Unlock()
	klog.FromContext(ctx).Info("Serving a new conversion webhook certificate", "notAfter", leaf.Leaf.NotAfter)
	return nil
}

// nextDeadline is how long until the signing CA or the served leaf is two
// thirds through its life, until a new caBundle has settled, or until the
// CAs a revocation or retireOverlong drops may go; zero if no deadline is
// ahead. A leaf past its deadline waits for its CA to be
// trusted, which a CRD event tells.
func (m *Manager) nextDeadline(now time.Time, ca *authority) time.Duration {
	next := renewAt(ca.signer).Sub(now)
	m.mu.Lock()
	defer m.mu.Unlock()
	sooner := func(d time.Duration) {
		if d > 0 && (next <= 0 || d < next) {
			next = d
		}
	}
	if m.served != nil {
		sooner(renewAt(m.served.Leaf).Sub(now))
		if !bytes.Equal(m.servedBy, ca.signer.Raw) && bytes.Equal(m.nextCA, ca.signer.Raw) {
			sooner(m.nextCASeen.Add(settle).Sub(now))
		}
	}
	if ca.secret != nil && (ca.secret.Annotations[RevokingAnnotation] != "" || ca.overlongEndorsed) &&
		bytes.Equal(m.signerSeen, ca.signer.Raw) {
		sooner(m.signerSeenAt.Add(revokeGrace).Sub(now))
	}
	return max(next, 0)
}

// renewAt is when c is two thirds through its life, counted from its
// issue: NotBefore is backdated (backdate), which is no part of the life
// it was issued for. Counting the backdate in would make a short-lived
// certificate due at once, and renewed again and again.
func renewAt(c *x509.Certificate) time.Time {
	issued := c.NotBefore.Add(backdate)
	life := c.NotAfter.Sub(issued)
	return issued.Add(life - life/3)
}

func derOf(certs []*x509.Certificate) [][]byte {
	ders := make([][]byte, 0, len(certs))
	for _, c := range certs {
		ders = append(ders, c.Raw)
	}
	return ders
}

func containsDER(ders [][]byte, der []byte) bool {
	for _, d := range ders {
		if bytes.Equal(d, der) {
			return true
		}
	}
	return false
}
