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
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-samples/sample-controller/pkg/metrics"
)

// names maps each certificate to the name a test gave it, for messages
// that say which CA is where.
func names(certs []*x509.Certificate, byName map[string]*x509.Certificate) []string {
	out := make([]string, 0, len(certs))
	for _, c := range certs {
		name := "unknown " + c.Subject.CommonName
		for n, known := range byName {
			if known.Equal(c) {
				name = n
			}
		}
		out = append(out, name)
	}
	return out
}

// The trust decision: the signing CA, and each CA it endorsed, are trusted;
// a CA with no endorsement, one endorsed by another key, one whose
// endorsement names another CA, or a leaf, is foreign. A CA listed twice
// counts once.
func TestTrustDecisionTrustsOnlyWhatTheSigningKeyEndorsed(t *testing.T) {
	signerPEM, signerKey := testCA(t, "signer", t0.Add(-time.Hour), t0.Add(300*time.Hour))
	oldPEM, _ := testCA(t, "old", t0.Add(-time.Hour), t0.Add(100*time.Hour))
	otherPEM, otherKey := testCA(t, "other", t0.Add(-time.Hour), t0.Add(100*time.Hour))
	plantedPEM, _ := testCA(t, "planted", t0.Add(-time.Hour), t0.Add(100*time.Hour))
	byOtherPEM, _ := testCA(t, "endorsed by another key", t0.Add(-time.Hour), t0.Add(100*time.Hour))
	byName := map[string]*x509.Certificate{}
	for name, p := range map[string][]byte{"signer": signerPEM, "old": oldPEM, "other": otherPEM,
		"planted": plantedPEM, "endorsed by another key": byOtherPEM} {
		byName[name] = parseCerts(t, p)[0]
	}
	signer := byName["signer"]
	leaf, err := newLeaf(t0, Options{DNSNames: []string{dnsName}, LeafValidity: time.Hour},
		&authority{signer: signer, key: parseKey(t, signerKey)})
	if err != nil {
		t.Fatal(err)
	}
	byName["leaf"] = leaf.Leaf
	leafPEM := pemOf(t, leaf.Leaf)
	// The old CA's endorsement, its header rewritten to name the planted
	// CA: a signature over another CA does not vouch for this one.
	misnamed := bytes.Replace(endorsement(t, signerKey, oldPEM), []byte(fingerprint(byName["old"])),
		[]byte(fingerprint(byName["planted"])), 1)

	for _, tc := range []struct {
		name                  string
		trusted, endorsements []byte
		wantTrusted           []string
		wantForeign           []string
	}{
		{"the signing CA alone", signerPEM, nil, []string{"signer"}, nil},
		{"an endorsed old CA", slices.Concat(signerPEM, oldPEM), endorsement(t, signerKey, oldPEM),
			[]string{"signer", "old"}, nil},
		{"a CA appended without endorsement", slices.Concat(signerPEM, oldPEM, plantedPEM),
			endorsement(t, signerKey, oldPEM), []string{"signer", "old"}, []string{"planted"}},
		{"a CA endorsed by another key", slices.Concat(signerPEM, byOtherPEM), endorsement(t, otherKey, byOtherPEM),
			[]string{"signer"}, []string{"endorsed by another key"}},
		{"an endorsement moved to another CA", slices.Concat(signerPEM, plantedPEM), misnamed,
			[]string{"signer"}, []string{"planted"}},
		{"an endorsed leaf", slices.Concat(signerPEM, leafPEM), endorsement(t, signerKey, leafPEM),
			[]string{"signer"}, []string{"leaf"}},
		{"a CA listed twice", slices.Concat(oldPEM, signerPEM, oldPEM, plantedPEM, plantedPEM),
			endorsement(t, signerKey, oldPEM), []string{"old", "signer"}, []string{"planted"}},
		{"endorsements that are not PEM", slices.Concat(signerPEM, oldPEM), []byte("not PEM"),
			[]string{"signer"}, []string{"old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trusted, foreign := trustDecision(signer, parseCerts(t, tc.trusted), tc.endorsements)
			if got := names(trusted, byName); !slices.Equal(got, tc.wantTrusted) {
				t.Errorf("trusted %q, want %q", got, tc.wantTrusted)
			}
			if got := names(foreign, byName); !slices.Equal(got, tc.wantForeign) {
				t.Errorf("foreign %q, want %q", got, tc.wantForeign)
			}
		})
	}
}

// trusted.sig is one PEM block per endorsed CA, named by the SHA-256 of its
// DER as openssl prints it.
func TestEndorsementsNameTheirCA(t *testing.T) {
	caPEM, keyPEM := testCA(t, "old", t0.Add(-time.Hour), t0.Add(100*time.Hour))
	ca := parseCerts(t, caPEM)[0]
	sum := sha256.Sum256(ca.Raw)
	sig := endorsement(t, keyPEM, caPEM)
	want := "-----BEGIN CA ENDORSEMENT-----\nCertificate-SHA256: " + hex.EncodeToString(sum[:]) + "\n\n"
	if !bytes.HasPrefix(sig, []byte(want)) || bytes.Count(sig, []byte("-----BEGIN")) != 1 {
		t.Errorf("trusted.sig:\n%s\nwant one block starting:\n%s", sig, want)
	}
}

// foreignCAs is samplecontroller_webhook_foreign_cas now.
func foreignCAs(t *testing.T) float64 {
	t.Helper()
	v, err := testutil.GetGaugeMetricValue(metrics.WebhookForeignCAs)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func drain(events *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// A CA appended to trusted.crt by hand never reaches the caBundle: nothing
// is written, the leaf is still served and trusted, one Warning event names
// it however many reconciles see it, the metric counts it; the next
// rotation leaves it behind. Removed, the metric says 0.
func TestForeignCAInTheSecretNeverReachesTheCABundle(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	f.options.LeafValidity = 1000 * time.Hour
	m := f.manager()
	events := record.NewFakeRecorder(10)
	m.events = events
	leaf := atRest(ctx, t, f, m)
	bundle := f.caBundle(t)
	signer := f.signingCA(t)

	plantedPEM, _ := testCA(t, "planted", t0.Add(-time.Hour), t0.Add(299*time.Hour))
	planted := parseCerts(t, plantedPEM)[0]
	secret := f.secret(t).DeepCopy()
	secret.Data["trusted.crt"] = slices.Concat(secret.Data["trusted.crt"], plantedPEM)
	wantUntrustedSecretIgnored(ctx, t, f, m, secret, "foreign CA", bundle, leaf)
	wantEvent := fmt.Sprintf("Warning ForeignCA trusted.crt holds CA \"CN=planted\" (SHA-256 %s), which the signing CA "+
		"did not endorse: it is left out of the caBundle of CRD foos.samplecontroller.k8s.io. Someone other than the "+
		"controller wrote it; remove it from the Secret.", fingerprint(planted))
	if got := drain(events); !slices.Equal(got, []string{wantEvent}) {
		t.Errorf("events %q, want %q", got, []string{wantEvent})
	}
	if got := foreignCAs(t); got != 1 {
		t.Errorf("samplecontroller_webhook_foreign_cas %v, want 1", got)
	}

	// The caBundle patched by hand to hold it too is put back.
	crd, err := f.dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(crd.Object, base64.StdEncoding.EncodeToString(slices.Concat(bundle, plantedPEM)),
		"spec", "conversion", "webhook", "clientConfig", "caBundle"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.dyn.Resource(crdGVR).Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.takeWrites()
	f.observe(t, m)
	reconcile(ctx, t, m)
	wantWrites(t, f, "foreign CA in the caBundle", patchCRD)
	if got := f.caBundle(t); !bytes.Equal(got, bundle) {
		t.Errorf("caBundle:\n%s\nwant the Secret's trusted CAs:\n%s", got, bundle)
	}
	if got := drain(events); len(got) != 0 {
		t.Errorf("events %q, want none more", got)
	}

	// Rotated: trusted.crt holds the new CA and the old, not the planted.
	f.clock.Step(200 * time.Hour)
	f.observe(t, m)
	reconcile(ctx, t, m)
	wantWrites(t, f, "rotation", updateSecret, patchCRD)
	byName := map[string]*x509.Certificate{"new": f.signingCA(t), "old": signer, "planted": planted}
	if got := names(parseCerts(t, f.secret(t).Data["trusted.crt"]), byName); !slices.Equal(got, []string{"new", "old"}) {
		t.Errorf("trusted.crt after the rotation holds %q, want new, old", got)
	}
	f.observe(t, m)
	reconcile(ctx, t, m)
	if got := foreignCAs(t); got != 0 {
		t.Errorf("samplecontroller_webhook_foreign_cas %v after the rotation, want 0", got)
	}
	if got := names(parseCerts(t, f.caBundle(t)), byName); !slices.Equal(got, []string{"new", "old"}) {
		t.Errorf("caBundle after the rotation holds %q, want new, old", got)
	}
}

// A Secret deleted is created again with a new CA, trusted with the CAs the
// replica last read as trusted, so that no leaf being served loses its CA;
// not with a CA someone put in the caBundle. A replica that never read the
// Secret carries nothing over.
func TestSecretDeletedIsCreatedAgainTrustingOnlyCAsItTrusted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fresh  bool
		expect []string
	}{
		{"by the replica that read it", false, []string{"third", "second", "first"}},
		{"by a replica started since", true, []string{"third"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t, fooCRD("Webhook"))
			f.options.LeafValidity = 1000 * time.Hour
			m := f.manager()
			atRest(ctx, t, f, m)
			first := f.signingCA(t)
			f.clock.Step(200 * time.Hour) // rotated: trusted.crt holds second, first
			reconcile(ctx, t, m)
			second := f.signingCA(t)
			f.observe(t, m)
			reconcile(ctx, t, m)

			plantedPEM, _ := testCA(t, "planted", f.clock.Now().Add(-time.Hour), f.clock.Now().Add(299*time.Hour))
			crd, err := f.dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(crd.Object,
				base64.StdEncoding.EncodeToString(slices.Concat(f.caBundle(t), plantedPEM)),
				"spec", "conversion", "webhook", "clientConfig", "caBundle"); err != nil {
				t.Fatal(err)
			}
			if _, err := f.dyn.Resource(crdGVR).Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := f.client.CoreV1().Secrets(namespace).Delete(ctx, secretName, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.fresh {
				m = f.manager()
			}
			if err := m.secrets.GetStore().Replace(nil, ""); err != nil {
				t.Fatal(err)
			}
			f.takeWrites()
			f.observeCRD(t, m)
			reconcile(ctx, t, m)
			wantWrites(t, f, "Secret deleted", createSecret, patchCRD)
			byName := map[string]*x509.Certificate{"third": f.signingCA(t), "second": second, "first": first,
				"planted": parseCerts(t, plantedPEM)[0]}
			if got := names(parseCerts(t, f.secret(t).Data["trusted.crt"]), byName); !slices.Equal(got, tc.expect) {
				t.Errorf("trusted.crt holds %q, want %q", got, tc.expect)
			}
			if got := names(parseCerts(t, f.caBundle(t)), byName); !slices.Equal(got, tc.expect) {
				t.Errorf("caBundle holds %q, want %q", got, tc.expect)
			}
		})
	}
}

// Revoke-now: the annotation makes a replica rotate at once and mark the
// Secret revoking; the other replica writes nothing; both switch to the new
// CA once the caBundle settled; revokeGrace after a replica first saw the
// new caBundle, and not before, it drops the old CA from trusted.crt and
// the caBundle and marks the Secret revoked. Both then serve leaves the
// caBundle trusts, and the old caBundle trusts neither.
func TestRevokeNowMovesEveryReplicaThenDropsTheOldCA(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	a, b := f.manager(), f.manager()
	atRest(ctx, t, f, a)
	f.observe(t, b)
	reconcile(ctx, t, b)
	old := f.signingCA(t)
	oldBundle := f.caBundle(t)

	f.clock.Step(time.Hour)
	secret := f.secret(t).DeepCopy()
	secret.Annotations = map[string]string{RevokeAnnotation: "2026-11-24T11:00:00Z"}
	if _, err := f.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.takeWrites()
	f.observeSecret(t, a)
	reconcile(ctx, t, a)
	wantWrites(t, f, "revocation requested", updateSecret, patchCRD)
	next := f.signingCA(t)
	if next.Equal(old) {
		t.Fatal("the signing CA was not replaced")
	}
	wantAnnotations := map[string]string{RevokeAnnotation: "2026-11-24T11:00:00Z", RevokingAnnotation: "2026-11-24T11:00:00Z"}
	if got := f.secret(t).Annotations; !maps.Equal(got, wantAnnotations) {
		t.Errorf("annotations %v, want %v", got, wantAnnotations)
	}
	byName := map[string]*x509.Certificate{"old": old, "new": next}
	if got := names(parseCerts(t, f.caBundle(t)), byName); !slices.Equal(got, []string{"new", "old"}) {
		t.Errorf("caBundle holds %q, want new, old", got)
	}

	// Both see it; b rotates nothing more; both switch after settle.
	for _, m := range []*Manager{a, b} {
		f.observe(t, m)
		reconcile(ctx, t, m)
	}
	wantWrites(t, f, "seen")
	f.clock.Step(settle)
	for name, m := range map[string]*Manager{"a": a, "b": b} {
		if next := reconcile(ctx, t, m); next != revokeGrace-settle {
			t.Errorf("%s: next reconcile in %s, want 45s (the revoked CAs dropped)", name, next)
		}
		if err := f.servesTrusted(t, m).CheckSignatureFrom(f.signingCA(t)); err != nil {
			t.Errorf("%s's leaf not signed by the new CA: %v", name, err)
		}
	}
	f.clock.Step(revokeGrace - settle - time.Nanosecond)
	reconcile(ctx, t, a)
	wantWrites(t, f, "a nanosecond before revokeGrace")

	f.clock.Step(time.Nanosecond)
	reconcile(ctx, t, a)
	wantWrites(t, f, "revokeGrace after the new caBundle was seen", updateSecret, patchCRD)
	wantAnnotations = map[string]string{RevokeAnnotation: "2026-11-24T11:00:00Z", RevokedAnnotation: "2026-11-24T11:00:00Z"}
	if got := f.secret(t).Annotations; !maps.Equal(got, wantAnnotations) {
		t.Errorf("annotations %v, want %v", got, wantAnnotations)
	}
	if got := names(parseCerts(t, f.secret(t).Data["trusted.crt"]), byName); !slices.Equal(got, []string{"new"}) {
		t.Errorf("trusted.crt holds %q, want new alone", got)
	}
	if _, ok := f.secret(t).Data["trusted.sig"]; ok {
		t.Error("trusted.sig left with nothing to endorse")
	}
	if got := names(parseCerts(t, f.caBundle(t)), byName); !slices.Equal(got, []string{"new"}) {
		t.Errorf("caBundle holds %q, want new alone", got)
	}
	for name, m := range map[string]*Manager{"a": a, "b": b} {
		f.observe(t, m)
		reconcile(ctx, t, m)
		f.servesTrusted(t, m)
		if _, err := handshake(m, oldBundle, f.clock.Now()); err == nil {
			t.Errorf("%s's leaf verifies against the revoked CA", name)
		}
	}
	wantWrites(t, f, "at rest after the revocation")
}

// A replica that still serves a leaf of a CA the caBundle no longer trusts
// (its watch lagged through a whole revocation) switches at once, without
// the settle: the old leaf is good for nothing.
func TestLeafOfACANoLongerTrustedIsReplacedAtOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	a, b := f.manager(), f.manager()
	atRest(ctx, t, f, a)
	f.observe(t, b)
	reconcile(ctx, t, b)

	secret := f.secret(t).DeepCopy()
	secret.Annotations = map[string]string{RevokeAnnotation: "now"}
	if _, err := f.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.observe(t, a)
	reconcile(ctx, t, a)
	f.observe(t, a)
	reconcile(ctx, t, a)
	f.clock.Step(settle)
	reconcile(ctx, t, a)
	f.clock.Step(revokeGrace)
	reconcile(ctx, t, a)
	if got := f.secret(t).Annotations[RevokedAnnotation]; got != "now" {
		t.Fatalf("%s is %q, want now", RevokedAnnotation, got)
	}

	f.observe(t, b)
	reconcile(ctx, t, b)
	if err := f.servesTrusted(t, b).CheckSignatureFrom(f.signingCA(t)); err != nil {
		t.Errorf("b's leaf not signed by the new CA at once: %v", err)
	}
}
