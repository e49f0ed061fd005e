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
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-samples/sample-controller/pkg/metrics"
)

// refusedCAs is samplecontroller_webhook_refused_cas now, its series other
// than 0 by "ca/reason".
func refusedCAs(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, ca := range []string{"signing", "endorsed"} {
		for _, reason := range []string{"key", "subject", "issuer", "not_yet_valid", "lifetime", "unendorsed"} {
			if ca == "endorsed" && reason == "unendorsed" {
				continue // not served: asking would make the series
			}
			v, err := testutil.GetGaugeMetricValue(metrics.WebhookRefusedCAs.WithLabelValues(ca, reason))
			if err != nil {
				t.Fatal(err)
			}
			if v != 0 {
				out[ca+"/"+reason] = v
			}
		}
	}
	return out
}

func generateKey(t *testing.T, kind string) crypto.Signer {
	t.Helper()
	var key crypto.Signer
	var err error
	switch kind {
	case "RSA-1024":
		key, err = rsa.GenerateKey(rand.Reader, 1024)
	case "P-384":
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "Ed25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// What the controller could have made, at t0 with a CA validity of 300 h,
// is trusted, and overlong if it lives longer than that (an earlier
// release's); anything else is refused, with the reason and the values.
func TestRulesRefuseWhatTheControllerCouldNotHaveMade(t *testing.T) {
	r := rules{now: t0, validity: testCAValidity}
	own, err := newAuthority(t0, testCAValidity, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if refused := r.refuse(own.signer); refused != nil {
		t.Errorf("the controller's own CA refused: %s", refused.detail)
	}
	otherCAPEM, otherKeyPEM := replicaCA(t, t0)
	otherCA, otherKey := parseCerts(t, otherCAPEM)[0], parseKey(t, otherKeyPEM)
	madeAt := t0.Add(-10 * time.Hour)
	for _, tc := range []struct {
		name          string
		key           string
		change        func(*x509.Certificate)
		signedByOther bool
		// validity is the CA validity judged by, if not testCAValidity.
		validity time.Duration
		overlong bool
		reason   string
		detail   string
	}{
		{name: "another replica's", change: func(*x509.Certificate) {}},
		{name: "valid for exactly the CA validity and the backdate", change: func(c *x509.Certificate) {
			c.NotAfter = c.NotBefore.Add(301 * time.Hour)
		}},
		{name: "starting clockSkew ahead", change: func(c *x509.Certificate) {
			c.NotBefore, c.NotAfter = t0.Add(5*time.Minute), t0.Add(5*time.Minute+time.Hour)
		}},
		{name: "RSA 1024-bit", key: "RSA-1024", change: func(*x509.Certificate) {},
			reason: "key", detail: "its key is RSA 1024-bit, not ECDSA P-256"},
		{name: "ECDSA P-384", key: "P-384", change: func(*x509.Certificate) {},
			reason: "key", detail: "its key is ECDSA P-384, not ECDSA P-256"},
		{name: "Ed25519", key: "Ed25519", change: func(*x509.Certificate) {},
			reason: "key", detail: "its key is Ed25519, not ECDSA P-256"},
		{name: "another name", change: func(c *x509.Certificate) { c.Subject = pkix.Name{CommonName: "planted"} },
			reason: "subject", detail: `its subject is "CN=planted", not CN=sample-controller-webhook-ca@<Unix time>`},
		{name: "the name and more", change: func(c *x509.Certificate) { c.Subject.Organization = []string{"x"} },
			reason: "subject",
			detail: `its subject is "CN=sample-controller-webhook-ca@1795478400,O=x", not CN=sample-controller-webhook-ca@<Unix time>`},
		{name: "signed by another CA", signedByOther: true, change: func(*x509.Certificate) {},
			reason: "issuer", detail: `it is not self-signed (issuer "CN=sample-controller-webhook-ca@1795514400")`},
		{name: "starting after clockSkew", change: func(c *x509.Certificate) {
			c.NotBefore, c.NotAfter = t0.Add(5*time.Minute+time.Second), t0.Add(time.Hour)
		}, reason: "not_yet_valid",
			detail: "it is valid from 2026-11-24T10:05:01Z, more than 5m0s after now (2026-11-24T10:00:00Z)"},
		{name: "a second longer", overlong: true, change: func(c *x509.Certificate) {
			c.NotAfter = c.NotBefore.Add(301*time.Hour + time.Second)
		}},
		{name: "ten years and the backdate, as an earlier release made it", overlong: true,
			change: func(c *x509.Certificate) { c.NotAfter = c.NotBefore.Add(87601 * time.Hour) }},
		{name: "a second longer than ten years and the backdate", change: func(c *x509.Certificate) {
			c.NotAfter = c.NotBefore.Add(87601*time.Hour + time.Second)
		}, reason: "lifetime", detail: "it is valid for 87601h0m1s, longer than the 87600h0m0s an earlier release " +
			"made a CA valid for and the 1h0m0s backdate"},
		{name: "twenty years and the backdate, a CA validity of twenty years", validity: 175200 * time.Hour,
			change: func(c *x509.Certificate) { c.NotAfter = c.NotBefore.Add(175201 * time.Hour) }},
		{name: "a second longer than a CA validity of twenty years", validity: 175200 * time.Hour,
			change: func(c *x509.Certificate) { c.NotAfter = c.NotBefore.Add(175201*time.Hour + time.Second) },
			reason: "lifetime",
			detail: "it is valid for 175201h0m1s, longer than the CA validity of 175200h0m0s and the 1h0m0s backdate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := generateKey(t, tc.key)
			template := replicaTemplate(madeAt)
			tc.change(template)
			var der []byte
			var err error
			if tc.signedByOther {
				der, err = x509.CreateCertificate(rand.Reader, template, otherCA, key.Public(), otherKey)
			} else {
				der, err = x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
			}
			if err != nil {
				t.Fatal(err)
			}
			c, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			judge := r
			if tc.validity != 0 {
				judge.validity = tc.validity
			}
			refused := judge.refuse(c)
			switch {
			case refused == nil && tc.reason != "":
				t.Errorf("trusted, want refused for %s: %s", tc.reason, tc.detail)
			case refused != nil && (refused.reason != tc.reason || refused.detail != tc.detail):
				t.Errorf("refused for %s: %s\nwant %q: %s", refused.reason, refused.detail, tc.reason, tc.detail)
			case refused == nil && judge.overlong(c) != tc.overlong:
				t.Errorf("overlong: %t, want %t", judge.overlong(c), tc.overlong)
			}
		})
	}
}

// A signing CA swapped into the Secret that the controller could not have
// made (a weak key, a lifetime beyond the CA validity, a start in the
// future) is refused: nothing is written, the caBundle keeps the CAs it
// had, the replica goes on serving and renews its leaf from the CA it had,
// one Warning event names it however many reconciles see it, and the metric
// counts it. A replica started since has no CA to keep: it serves nothing
// and says why. Revoke-now replaces the refused CA by one of the
// controller's.
func TestSwappedSigningCAIsRefusedAndTheCAsItHadKept(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    string
		change func(*x509.Certificate)
		series string
		// detail is the refusal at t0, later 20 hours on (the same
		// unless it depends on the time).
		detail, later string
	}{
		{"RSA 1024-bit", "RSA-1024", func(*x509.Certificate) {}, "signing/key",
			"its key is RSA 1024-bit, not ECDSA P-256", "its key is RSA 1024-bit, not ECDSA P-256"},
		{"valid for twenty years", "", func(c *x509.Certificate) { c.NotAfter = c.NotBefore.Add(175200 * time.Hour) },
			"signing/lifetime",
			"it is valid for 175200h0m0s, longer than the 87600h0m0s an earlier release made a CA valid for and the " +
				"1h0m0s backdate",
			"it is valid for 175200h0m0s, longer than the 87600h0m0s an earlier release made a CA valid for and the " +
				"1h0m0s backdate"},
		{"valid from tomorrow", "", func(c *x509.Certificate) {
			c.NotBefore, c.NotAfter = t0.Add(24*time.Hour), t0.Add(48*time.Hour)
		}, "signing/not_yet_valid",
			"it is valid from 2026-11-25T10:00:00Z, more than 5m0s after now (2026-11-24T10:00:00Z)",
			"it is valid from 2026-11-25T10:00:00Z, more than 5m0s after now (2026-11-25T06:00:00Z)"},
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

			template := replicaTemplate(t0)
			tc.change(template)
			swappedPEM, swappedKeyPEM := selfSigned(t, generateKey(t, tc.key), template)
			swapped := parseCerts(t, swappedPEM)[0]
			secret := f.secret(t).DeepCopy()
			secret.Data = map[string][]byte{"ca.crt": swappedPEM, "ca.key": swappedKeyPEM, "trusted.crt": swappedPEM}
			wantUntrustedSecretIgnored(ctx, t, f, m, secret, "swapped CA", bundle, leaf)
			swappedVersion := f.secret(t).ResourceVersion
			wantEvent := fmt.Sprintf("Warning RefusedCA ca.crt holds CA \"CN=sample-controller-webhook-ca@1795514400\" "+
				"(SHA-256 %s), which the controller could not have made: %s. It is not trusted: the caBundle of "+
				"CRD foos.samplecontroller.k8s.io keeps the CAs it had, and nothing is written. Find who wrote the "+
				"Secret, then revoke the CA.", fingerprint(swapped), tc.detail)
			if got := drain(events); !slices.Equal(got, []string{wantEvent}) {
				t.Errorf("events %q, want %q", got, []string{wantEvent})
			}
			if got, want := refusedCAs(t), map[string]float64{tc.series: 1}; !maps.Equal(got, want) {
				t.Errorf("samplecontroller_webhook_refused_cas %v, want %v", got, want)
			}
			if got := foreignCAs(t); got != 0 {
				t.Errorf("samplecontroller_webhook_foreign_cas %v, want 0", got)
			}

			// The leaf is due: renewed from the CA the replica had, which
			// the caBundle holds; still nothing written.
			f.clock.Step(20 * time.Hour)
			f.observe(t, m)
			reconcile(ctx, t, m)
			wantWrites(t, f, "leaf renewed while refused")
			renewed := f.servesTrusted(t, m)
			if renewed.Equal(leaf) || renewed.CheckSignatureFrom(signer) != nil {
				t.Error("the leaf was not renewed from the CA the replica had")
			}
			if got := drain(events); len(got) != 0 {
				t.Errorf("events %q, want none more", got)
			}

			// A replica started since has no CA of its own to keep.
			fresh := f.manager()
			f.observe(t, fresh)
			reconcile(ctx, t, fresh)
			wantWrites(t, f, "a replica started since")
			if _, err := fresh.GetCertificate(nil); err == nil {
				t.Error("a replica started since serves a leaf")
			}
			wantReady := "no conversion webhook serving certificate yet: waiting for the caBundle of CRD " +
				"foos.samplecontroller.k8s.io to hold the signing CA; the signing CA of Secret " +
				"sample-system/sample-controller-webhook-ca is refused: " + tc.later
			if err := fresh.Ready(); err == nil || err.Error() != wantReady {
				t.Errorf("Ready: %v\nwant %s", err, wantReady)
			}
			if got := f.secret(t).ResourceVersion; got != swappedVersion {
				t.Errorf("Secret at resourceVersion %s, want %s, as the swap left it", got, swappedVersion)
			}

			// Revoke-now: a new CA of the controller's, trusted with the
			// one the replica had, and the refused one nowhere.
			secret = f.secret(t).DeepCopy()
			secret.Annotations = map[string]string{RevokeAnnotation: "swapped"}
			if _, err := f.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.takeWrites()
			f.observe(t, m)
			reconcile(ctx, t, m)
			wantWrites(t, f, "revoke-now", updateSecret, patchCRD)
			byName := map[string]*x509.Certificate{"new": f.signingCA(t), "had": signer, "swapped": swapped}
			if got := names(parseCerts(t, f.secret(t).Data["trusted.crt"]), byName); !slices.Equal(got, []string{"new", "had"}) {
				t.Errorf("trusted.crt holds %q, want new, had", got)
			}
			if got := names(parseCerts(t, f.caBundle(t)), byName); !slices.Equal(got, []string{"new", "had"}) {
				t.Errorf("caBundle holds %q, want new, had", got)
			}
			if got := refusedCAs(t); len(got) != 0 {
				t.Errorf("samplecontroller_webhook_refused_cas %v after the revocation, want none", got)
			}
		})
	}
}

// A CA the signing CA endorsed but the controller could not have made (here
// valid for twenty years, longer than any release made a CA for) is left
// out of the caBundle and reported, while an endorsed CA the controller
// could have made is kept; the next rotation leaves the refused one behind.
// The controller's own CA goes on working and rotating.
func TestEndorsedCAValidTooLongIsLeftOutOfTheCABundle(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	m := f.manager()
	events := record.NewFakeRecorder(10)
	m.events = events
	leaf := atRest(ctx, t, f, m)
	secret := f.secret(t).DeepCopy()
	signer := f.signingCA(t)

	okPEM, _ := replicaCA(t, t0.Add(-50*time.Hour))
	long := replicaTemplate(t0.Add(-50 * time.Hour))
	long.NotAfter = long.NotBefore.Add(175200 * time.Hour)
	longPEM, _ := selfSigned(t, generateKey(t, ""), long)
	secret.Data["trusted.crt"] = slices.Concat(secret.Data["ca.crt"], okPEM, longPEM)
	secret.Data["trusted.sig"] = endorsement(t, secret.Data["ca.key"], slices.Concat(okPEM, longPEM))
	if _, err := f.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.takeWrites()
	for range 3 {
		f.observe(t, m)
		reconcile(ctx, t, m)
	}
	wantWrites(t, f, "an endorsed CA valid too long", patchCRD)
	ok, longCA := parseCerts(t, okPEM)[0], parseCerts(t, longPEM)[0]
	byName := map[string]*x509.Certificate{"signer": signer, "ok": ok, "long": longCA}
	if got := names(parseCerts(t, f.caBundle(t)), byName); !slices.Equal(got, []string{"signer", "ok"}) {
		t.Errorf("caBundle holds %q, want signer, ok", got)
	}
	if got := f.servesTrusted(t, m); !got.Equal(leaf) {
		t.Error("the leaf changed")
	}
	wantEvent := fmt.Sprintf("Warning RefusedCA trusted.crt holds CA \"CN=sample-controller-webhook-ca@1795334400\" "+
		"(SHA-256 %s), endorsed by the signing CA, which the controller could not have made: it is valid for "+
		"175200h0m0s, longer than the 87600h0m0s an earlier release made a CA valid for and the 1h0m0s backdate. It "+
		"is left out of the caBundle of CRD foos.samplecontroller.k8s.io. Find who wrote the Secret, then revoke the CA.",
		fingerprint(longCA))
	if got := drain(events); !slices.Equal(got, []string{wantEvent}) {
		t.Errorf("events %q, want %q", got, []string{wantEvent})
	}
	if got, want := refusedCAs(t), map[string]float64{"endorsed/lifetime": 1}; !maps.Equal(got, want) {
		t.Errorf("samplecontroller_webhook_refused_cas %v, want %v", got, want)
	}

	// Every series is served, 0 included.
	want := `
# HELP samplecontroller_webhook_refused_cas [ALPHA] CAs of the conversion webhook's CA Secret that the controller could not have made, as this replica last read it, and so does not trust, by ca: signing (ca.crt: the replica keeps the CAs it had and writes nothing) or endorsed (in trusted.crt, left out of the CRD's caBundle); and by reason: key (not ECDSA P-256), subject, issuer (not self-signed), not_yet_valid (starts in the future), lifetime (valid longer than -webhook-ca-validity, and than the 10 years of an earlier release's CA where it could be one: endorsed, or signing with no ca.sig), and for the signing CA unendorsed (no CA the replica trusts endorsed it in ca.sig, as the replica that makes a CA does). Anything but 0: someone other than the controller wrote the Secret.
# TYPE samplecontroller_webhook_refused_cas gauge
samplecontroller_webhook_refused_cas{ca="endorsed",reason="issuer"} 0
samplecontroller_webhook_refused_cas{ca="endorsed",reason="key"} 0
samplecontroller_webhook_refused_cas{ca="endorsed",reason="lifetime"} 1
samplecontroller_webhook_refused_cas{ca="endorsed",reason="not_yet_valid"} 0
samplecontroller_webhook_refused_cas{ca="endorsed",reason="subject"} 0
samplecontroller_webhook_refused_cas{ca="signing",reason="issuer"} 0
samplecontroller_webhook_refused_cas{ca="signing",reason="key"} 0
samplecontroller_webhook_refused_cas{ca="signing",reason="lifetime"} 0
samplecontroller_webhook_refused_cas{ca="signing",reason="not_yet_valid"} 0
samplecontroller_webhook_refused_cas{ca="signing",reason="subject"} 0
samplecontroller_webhook_refused_cas{ca="signing",reason="unendorsed"} 0
`
	if err := testutil.CollectAndCompare(metrics.WebhookRefusedCAs, strings.NewReader(want),
		"samplecontroller_webhook_refused_cas"); err != nil {
		t.Error(err)
	}

	// Rotated: trusted.crt holds the new CA, the signer and ok, not long.
	f.clock.Step(200 * time.Hour)
	f.observe(t, m)
	reconcile(ctx, t, m)
	wantWrites(t, f, "rotation", updateSecret, patchCRD)
	byName["new"] = f.signingCA(t)
	if got := names(parseCerts(t, f.secret(t).Data["trusted.crt"]), byName); !slices.Equal(got, []string{"new", "signer", "ok"}) {
		t.Errorf("trusted.crt after the rotation holds %q, want new, signer, ok", got)
	}
	f.observe(t, m)
	reconcile(ctx, t, m)
	f.clock.Step(settle)
	reconcile(ctx, t, m)
	if err := f.servesTrusted(t, m).CheckSignatureFrom(byName["new"]); err != nil {
		t.Errorf("leaf not signed by the rotated CA: %v", err)
	}
	if got := refusedCAs(t); len(got) != 0 {
		t.Errorf("samplecontroller_webhook_refused_cas %v after the rotation, want none", got)
	}
}
