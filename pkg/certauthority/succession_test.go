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
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
)

// plantedEvent is the Warning a replica records for a signing CA of the
// controller's kind that no CA it trusts endorsed.
func plantedEvent(planted string) string {
	return fmt.Sprintf("Warning RefusedCA ca.crt holds CA \"CN=sample-controller-webhook-ca@1795514400\" "+
		"(SHA-256 %s), which the controller could not have made: no CA this replica trusts endorsed it in ca.sig, "+
		"as a replica that makes a CA does. It is not trusted: the caBundle of CRD foos.samplecontroller.k8s.io "+
		"keeps the CAs it had, and nothing is written. Find who wrote the Secret, then revoke the CA.", planted)
}

// A signing CA swapped in with all the controller's makings (an ECDSA
// P-256 key, its subject, a lifetime within the CA validity) but no
// endorsement by a CA the replica trusts is refused, whatever ca.sig holds
// short of one: nothing is written, the caBundle keeps the CA it had, the
// replica serves on, one Warning names it and the metric counts it. Only
// an endorsement by the key of the CA the replica trusts (which whoever
// holds the token can read: the residual) makes it trusted.
func TestPlantedCAOfTheControllersKindIsRefusedUnlessATrustedCAEndorsedIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		// caSig is ca.sig for the planted CA, given the Secret as the
		// replica wrote it and the planted CA and key, in PEM.
		caSig   func(t *testing.T, had map[string][]byte, plantedPEM, plantedKeyPEM []byte) []byte
		trusted bool
	}{
		{name: "no ca.sig", caSig: func(*testing.T, map[string][]byte, []byte, []byte) []byte { return nil }},
		{name: "endorsed by itself", caSig: func(t *testing.T, _ map[string][]byte, plantedPEM, plantedKeyPEM []byte) []byte {
			return succession(t, plantedPEM, plantedKeyPEM, plantedPEM)
		}},
		{name: "endorsed by another key, named as the CA the replica had",
			caSig: func(t *testing.T, had map[string][]byte, plantedPEM, _ []byte) []byte {
				otherPEM, otherKeyPEM := replicaCA(t, t0.Add(-time.Hour))
				return renamed(t, succession(t, otherPEM, otherKeyPEM, plantedPEM), parseCerts(t, had["ca.crt"])[0].Raw)
			}},
		{name: "the replica's key's trusted.sig endorsement of it, as ca.sig",
			caSig: func(t *testing.T, had map[string][]byte, plantedPEM, _ []byte) []byte {
				block, _ := pem.Decode(endorsement(t, had["ca.key"], plantedPEM))
				block.Type = successionType
				block.Headers = map[string]string{endorserHeader: fingerprint(parseCerts(t, had["ca.crt"])[0])}
				return pem.EncodeToMemory(block)
			}},
		{name: "endorsed with the key of the CA the replica had", trusted: true,
			caSig: func(t *testing.T, had map[string][]byte, plantedPEM, _ []byte) []byte {
				return succession(t, had["ca.crt"], had["ca.key"], plantedPEM)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			f := newFixture(t, fooCRD("Webhook"))
			m := f.manager()
			events := record.NewFakeRecorder(10)
			m.events = events
			leaf := atRest(ctx, t, f, m)
			bundle := f.caBundle(t)
			signer := f.signingCA(t)
			// A second replica, which trusts the CA m made; it sees
			// nothing more until the revocation.
			other := f.manager()
			f.observe(t, other)
			reconcile(ctx, t, other)
			f.takeWrites()

			plantedPEM, plantedKeyPEM := replicaCA(t, t0)
			planted := parseCerts(t, plantedPEM)[0]
			if refused := m.rules(t0).refuse(planted); refused != nil {
				t.Fatalf("the planted CA is not of the controller's kind: %s", refused.detail)
			}
			secret := f.secret(t).DeepCopy()
			secret.Data = map[string][]byte{"ca.crt": plantedPEM, "ca.key": plantedKeyPEM, "trusted.crt": plantedPEM}
			if sig := tc.caSig(t, f.secret(t).Data, plantedPEM, plantedKeyPEM); sig != nil {
				secret.Data["ca.sig"] = sig
			}
			if tc.trusted {
				if _, err := f.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				f.takeWrites()
				f.observe(t, m)
				reconcile(ctx, t, m)
				wantWrites(t, f, "a CA endorsed by the one the replica had", patchCRD)
				if got := f.caBundle(t); !bytes.Equal(got, plantedPEM) {
					t.Errorf("caBundle holds %d CAs, want the planted one alone", len(parseCerts(t, got)))
				}
				if got := drain(events); len(got) != 0 {
					t.Errorf("events %q, want none", got)
				}
				if got := refusedCAs(t); len(got) != 0 {
					t.Errorf("samplecontroller_webhook_refused_cas %v, want none", got)
				}
				return
			}
			wantUntrustedSecretIgnored(ctx, t, f, m, secret, "planted CA", bundle, leaf)
			if got, want := drain(events), []string{plantedEvent(fingerprint(planted))}; !slices.Equal(got, want) {
				t.Errorf("events %q\nwant %q", got, want)
			}
			if got, want := refusedCAs(t), map[string]float64{"signing/unendorsed": 1}; !maps.Equal(got, want) {
				t.Errorf("samplecontroller_webhook_refused_cas %v, want %v", got, want)
			}

			// Revoke-now: a CA of the controller's, endorsed by the one the
			// replica had, which the second replica takes.
			secret = f.secret(t).DeepCopy()
			secret.Annotations = map[string]string{RevokeAnnotation: "planted"}
			if _, err := f.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.takeWrites()
			f.observe(t, m)
			reconcile(ctx, t, m)
			wantWrites(t, f, "revoke-now", updateSecret, patchCRD)
			next := f.signingCA(t)
			if !succeeds(next, []*x509.Certificate{signer}, f.secret(t).Data["ca.sig"]) {
				t.Error("the CA made at the revocation is not endorsed by the CA the replica had")
			}
			if succeeds(next, []*x509.Certificate{planted}, f.secret(t).Data["ca.sig"]) {
				t.Error("the CA made at the revocation is endorsed by the refused CA")
			}
			f.observe(t, other)
			reconcile(ctx, t, other)
			wantWrites(t, f, "the second replica sees the revocation")
			if refused := refusedCAs(t); len(refused) != 0 {
				t.Errorf("samplecontroller_webhook_refused_cas %v after the revocation, want none", refused)
			}
			if got := drain(events); len(got) != 0 {
				t.Errorf("events %q after the revocation, want none", got)
			}
		})
	}
}

// renamed is ca.sig with every endorsement's header naming the CA of der.
func renamed(t *testing.T, caSig, der []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(caSig)
	block.Headers = map[string]string{endorserHeader: fingerprint(parseCerts(t, pem.EncodeToMemory(
		&pem.Block{Type: "CERTIFICATE", Bytes: der}))[0])}
	return pem.EncodeToMemory(block)
}

// Every CA a replica makes after the first is endorsed in ca.sig by the CA
// it replaces, so the other replicas take it: at a rotation, and in a
// Secret made again after it was deleted. A revocation keeps ca.sig, for a
// replica whose watch lagged through it (TestLeafOfACANoLongerTrustedIsReplacedAtOnce).
// The first CA has none, and a replica that has trusted none takes it.
func TestEachNewCAIsEndorsedByTheOneItReplaces(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	f.options.LeafValidity = 1000 * time.Hour
	a, b := f.manager(), f.manager()
	eventsB := record.NewFakeRecorder(10)
	b.events = eventsB
	atRest(ctx, t, f, a)
	if _, ok := f.secret(t).Data["ca.sig"]; ok {
		t.Error("the first CA has a ca.sig: no CA endorsed it")
	}
	f.observe(t, b)
	reconcile(ctx, t, b)
	first := f.signingCA(t)

	f.clock.Step(200 * time.Hour)
	f.observe(t, a)
	reconcile(ctx, t, a)
	wantWrites(t, f, "rotation", updateSecret, patchCRD)
	second := f.signingCA(t)
	wantEndorsedBy(t, f.secret(t).Data["ca.sig"], second, first)
	f.observe(t, b)
	reconcile(ctx, t, b)
	wantWrites(t, f, "b sees the rotation")
	if got := refusedCAs(t); len(got) != 0 {
		t.Errorf("b: samplecontroller_webhook_refused_cas %v, want none", got)
	}

	// Deleted, and made again by a: endorsed by the CA a had.
	if err := f.client.CoreV1().Secrets(namespace).Delete(ctx, secretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.secrets.GetStore().Replace(nil, ""); err != nil {
		t.Fatal(err)
	}
	f.takeWrites()
	reconcile(ctx, t, a)
	wantWrites(t, f, "Secret deleted", createSecret, patchCRD)
	third := f.signingCA(t)
	wantEndorsedBy(t, f.secret(t).Data["ca.sig"], third, second)
	f.observe(t, b)
	reconcile(ctx, t, b)
	if got := refusedCAs(t); len(got) != 0 {
		t.Errorf("b after the Secret was made again: samplecontroller_webhook_refused_cas %v, want none", got)
	}
	if got := drain(eventsB); len(got) != 0 {
		t.Errorf("b's events %q, want none", got)
	}
}

// wantEndorsedBy checks that caSig is one endorsement of next, by prev.
func wantEndorsedBy(t *testing.T, caSig []byte, next, prev *x509.Certificate) {
	t.Helper()
	block, rest := pem.Decode(caSig)
	if block == nil || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("ca.sig %q, want one PEM block", caSig)
	}
	if block.Type != "CA SUCCESSION" || !maps.Equal(block.Headers, map[string]string{"Endorser-SHA256": fingerprint(prev)}) {
		t.Errorf("ca.sig's block is %q %v, want CA SUCCESSION naming the CA replaced", block.Type, block.Headers)
	}
	if !succeeds(next, []*x509.Certificate{prev}, caSig) {
		t.Error("ca.sig does not verify with the key of the CA replaced")
	}
}

// A Secret deleted and made again by someone else, with a CA of the
// controller's kind, is refused by a replica that trusted a CA before; a
// replica started since has trusted none, and takes it, as the first
// replica of an install takes the first CA: the residual.
func TestSecretMadeAgainBySomeoneElseIsRefusedByAReplicaThatHadACA(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	m := f.manager()
	events := record.NewFakeRecorder(10)
	m.events = events
	leaf := atRest(ctx, t, f, m)
	bundle := f.caBundle(t)

	if err := f.client.CoreV1().Secrets(namespace).Delete(ctx, secretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	plantedPEM, plantedKeyPEM := replicaCA(t, t0)
	planted := parseCerts(t, plantedPEM)[0]
	made := &corev1.Secret{}
	made.Namespace, made.Name, made.Type = namespace, secretName, SecretType
	made.Data = map[string][]byte{"ca.crt": plantedPEM, "ca.key": plantedKeyPEM, "trusted.crt": plantedPEM}
	if _, err := f.client.CoreV1().Secrets(namespace).Create(ctx, made, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.takeWrites()
	for range 3 {
		f.observe(t, m)
		reconcile(ctx, t, m)
	}
	wantWrites(t, f, "Secret made again by someone else")
	if got := f.caBundle(t); !bytes.Equal(got, bundle) {
		t.Errorf("caBundle changed: %d CAs", len(parseCerts(t, got)))
	}
	if got := f.servesTrusted(t, m); !got.Equal(leaf) {
		t.Error("the leaf changed")
	}
	if got, want := drain(events), []string{plantedEvent(fingerprint(planted))}; !slices.Equal(got, want) {
		t.Errorf("events %q\nwant %q", got, want)
	}
	if got, want := refusedCAs(t), map[string]float64{"signing/unendorsed": 1}; !maps.Equal(got, want) {
		t.Errorf("samplecontroller_webhook_refused_cas %v, want %v", got, want)
	}

	fresh := f.manager()
	f.observe(t, fresh)
	reconcile(ctx, t, fresh)
	wantWrites(t, f, "a replica started since", patchCRD)
	if got := f.caBundle(t); !bytes.Equal(got, plantedPEM) {
		t.Errorf("a replica started since: caBundle holds %d CAs, want the planted one alone", len(parseCerts(t, got)))
	}
}
