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
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

// earlierReleaseAtRest is an install of an earlier release: its replica,
// with a CA validity of caValidity, made the CA and serves a leaf of it. It
// returns that replica and its leaf.
func earlierReleaseAtRest(ctx context.Context, t *testing.T, f *fixture, caValidity time.Duration) (*Manager, []byte) {
	t.Helper()
	f.options.CAValidity = caValidity
	previous := f.manager()
	leaf := atRest(ctx, t, f, previous)
	ca := f.signingCA(t)
	if got := ca.NotAfter.Sub(ca.NotBefore); got != caValidity+time.Hour {
		t.Fatalf("the earlier release's CA is valid for %s, want %s and the hour's backdate", got, caValidity)
	}
	if keys := slices.Sorted(maps.Keys(f.secret(t).Data)); !slices.Equal(keys, []string{"ca.crt", "ca.key", "trusted.crt"}) {
		t.Fatalf("the earlier release's Secret has keys %q, want ca.crt, ca.key, trusted.crt", keys)
	}
	f.options.CAValidity = DefaultCAValidity
	return previous, leaf.Raw
}

// The upgrade from a release whose default CA validity was ten years
// (87600h) to this one's year: a replica of this release, started with no
// CA in memory, trusts the Secret's ten-year CA and rotates it at once, in
// the one reconcile, to a CA of a year endorsed by it (ca.sig), trusted
// beside it in trusted.crt and the caBundle. The earlier release's replica,
// still serving a leaf of the old CA, is trusted throughout and moves to
// the new CA, which it takes as the old one endorsed it. Once every replica
// serves the new CA (revokeGrace after the caBundle trusted it), the
// ten-year CA is dropped from trusted.crt and the caBundle, though it is
// valid for years yet: a ten-year CA planted while every replica restarts
// looks the same, and is trusted no longer. The next rotation, due by time
// eight months on, is as any other.
func TestCAOfAnEarlierReleaseIsRotatedAtOnceByTheUpgrade(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	previous, previousLeaf := earlierReleaseAtRest(ctx, t, f, 87600*time.Hour)
	old := f.signingCA(t)

	upgraded := f.manager()
	events := record.NewFakeRecorder(10)
	upgraded.events = events
	f.observe(t, upgraded)
	reconcile(ctx, t, upgraded)
	wantWrites(t, f, "the upgraded replica's first reconcile", updateSecret, patchCRD)
	secret := f.secret(t)
	if keys := slices.Sorted(maps.Keys(secret.Data)); !slices.Equal(keys,
		[]string{"ca.crt", "ca.key", "ca.sig", "trusted.crt", "trusted.sig"}) {
		t.Errorf("Secret keys %q, want ca.crt, ca.key, ca.sig, trusted.crt, trusted.sig", keys)
	}
	next := f.signingCA(t)
	if !next.NotBefore.Equal(t0.Add(-time.Hour)) || !next.NotAfter.Equal(t0.Add(8760*time.Hour)) {
		t.Errorf("the new CA is valid from %s to %s, want from an hour before t0 to a year after",
			next.NotBefore, next.NotAfter)
	}
	if want := slices.Concat(pemOf(t, next), pemOf(t, old)); !bytes.Equal(secret.Data["trusted.crt"], want) {
		t.Errorf("trusted.crt holds %d CAs, want the new one, then the ten-year one",
			len(parseCerts(t, secret.Data["trusted.crt"])))
	}
	if got := f.caBundle(t); !bytes.Equal(got, secret.Data["trusted.crt"]) {
		t.Errorf("caBundle holds %d CAs, want trusted.crt", len(parseCerts(t, got)))
	}
	wantEndorsedBy(t, secret.Data["ca.sig"], next, old)
	if trusted, foreign := trustDecision(next, []*x509.Certificate{next, old}, secret.Data["trusted.sig"]); len(trusted) != 2 ||
		len(foreign) != 0 {
		t.Errorf("trusted.sig vouches for %d CAs of 2, %d foreign", len(trusted), len(foreign))
	}
	if got := refusedCAs(t); len(got) != 0 {
		t.Errorf("samplecontroller_webhook_refused_cas %v, want none", got)
	}
	if got := drain(events); len(got) != 0 {
		t.Errorf("events %q, want none", got)
	}
	// The earlier release's replica serves on, trusted by the new caBundle.
	if got := f.servesTrusted(t, previous); !bytes.Equal(got.Raw, previousLeaf) {
		t.Error("the earlier release's replica changed its leaf before it saw the new caBundle")
	}

	// Each replica moves to the new CA once it sees the caBundle trust it:
	// the upgraded one at once (it serves nothing yet), the other a settle
	// later. Nothing more is written.
	f.observe(t, upgraded)
	reconcile(ctx, t, upgraded)
	if err := f.servesTrusted(t, upgraded).CheckSignatureFrom(next); err != nil {
		t.Errorf("the upgraded replica's leaf is not the new CA's: %v", err)
	}
	f.observe(t, previous)
	reconcile(ctx, t, previous)
	f.clock.Step(settle)
	reconcile(ctx, t, previous)
	wantWrites(t, f, "both replicas move to the new CA")
	if err := f.servesTrusted(t, previous).CheckSignatureFrom(next); err != nil {
		t.Errorf("the earlier release's replica's leaf is not the new CA's: %v", err)
	}

	// A replica that has served the new CA since it saw the caBundle
	// trust it, revokeGrace ago, drops the ten-year CA from the Secret and
	// the caBundle. The other replica then writes nothing.
	// It asks to be woken then: no event would come.
	f.clock.Step(revokeGrace - settle - time.Second)
	if next := reconcile(ctx, t, upgraded); next != time.Second {
		t.Errorf("a second before every replica is known to have moved: next in %s, want 1s", next)
	}
	wantWrites(t, f, "a second before every replica is known to have moved")
	f.clock.Step(time.Second)
	reconcile(ctx, t, upgraded)
	wantWrites(t, f, "the ten-year CA dropped", updateSecret, patchCRD)
	secret = f.secret(t)
	if want := pemOf(t, next); !bytes.Equal(secret.Data["trusted.crt"], want) {
		t.Errorf("trusted.crt holds %d CAs, want the new one alone", len(parseCerts(t, secret.Data["trusted.crt"])))
	}
	if keys := slices.Sorted(maps.Keys(secret.Data)); !slices.Equal(keys, []string{"ca.crt", "ca.key", "ca.sig", "trusted.crt"}) {
		t.Errorf("Secret keys %q after the drop, want ca.crt, ca.key, ca.sig, trusted.crt", keys)
	}
	if got := f.caBundle(t); !bytes.Equal(got, pemOf(t, next)) {
		t.Errorf("caBundle holds %d CAs, want the new one alone", len(parseCerts(t, got)))
	}
	for _, m := range []*Manager{previous, upgraded} {
		f.observe(t, m)
		reconcile(ctx, t, m)
		if err := f.servesTrusted(t, m).CheckSignatureFrom(next); err != nil {
			t.Errorf("a replica's leaf is not the new CA's after the drop: %v", err)
		}
	}
	wantWrites(t, f, "both replicas after the drop")
	if got := refusedCAs(t); len(got) != 0 {
		t.Errorf("samplecontroller_webhook_refused_cas %v after the drop, want none", got)
	}
	if got := drain(events); len(got) != 0 {
		t.Errorf("events %q after the drop, want none", got)
	}

	// Eight months on, two thirds of the year, a replica restarted then.
	// (On its own clock: the others' work queues would tick through the
	// months 500 ms at a time on theirs.)
	o := f.options
	o.Clock = clocktesting.NewFakeClock(t0.Add(5840 * time.Hour))
	later := New(f.client, f.dyn, o)
	f.observe(t, later)
	reconcile(ctx, t, later)
	wantWrites(t, f, "the rotation due by time", updateSecret, patchCRD)
	third := f.signingCA(t)
	if want := slices.Concat(pemOf(t, third), pemOf(t, next)); !bytes.Equal(f.secret(t).Data["trusted.crt"], want) {
		t.Errorf("trusted.crt after the next rotation holds %d CAs, want its CA, then the one it replaced",
			len(parseCerts(t, f.secret(t).Data["trusted.crt"])))
	}
	if got := f.caBundle(t); !bytes.Equal(got, f.secret(t).Data["trusted.crt"]) {
		t.Errorf("caBundle after the next rotation holds %d CAs, want trusted.crt", len(parseCerts(t, got)))
	}
	wantEndorsedBy(t, f.secret(t).Data["ca.sig"], third, next)
}

// A CA longer-lived than any release made by default (twenty years, an
// earlier release run with -webhook-ca-validity=175200h) is refused as
// before, reason lifetime: the upgraded replica writes nothing, and serves
// a leaf of it as the caBundle trusts it already.
func TestCALongerThanAnyReleaseMadeIsRefusedAfterTheUpgrade(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	earlierReleaseAtRest(ctx, t, f, 175200*time.Hour)
	old := f.signingCA(t)
	bundle := f.caBundle(t)

	upgraded := f.manager()
	events := record.NewFakeRecorder(10)
	upgraded.events = events
	for range 2 {
		f.observe(t, upgraded)
		reconcile(ctx, t, upgraded)
	}
	wantWrites(t, f, "the upgraded replica")
	if got := f.caBundle(t); !bytes.Equal(got, bundle) {
		t.Errorf("caBundle holds %d CAs, want the twenty-year CA alone, as before", len(parseCerts(t, got)))
	}
	if err := f.servesTrusted(t, upgraded).CheckSignatureFrom(old); err != nil {
		t.Errorf("the upgraded replica's leaf is not the twenty-year CA's: %v", err)
	}
	if got, want := refusedCAs(t), map[string]float64{"signing/lifetime": 1}; !maps.Equal(got, want) {
		t.Errorf("samplecontroller_webhook_refused_cas %v, want %v", got, want)
	}
	want := fmt.Sprintf("Warning RefusedCA ca.crt holds CA %q (SHA-256 %s), which the controller could not have made: "+
		"it is valid for 175201h0m0s, longer than the 87600h0m0s an earlier release made a CA valid for and the 1h0m0s "+
		"backdate. It is not trusted: the caBundle of CRD foos.samplecontroller.k8s.io keeps the CAs it had, and nothing "+
		"is written. Find who wrote the Secret, then revoke the CA.", old.Subject.String(), fingerprint(old))
	if got := drain(events); !slices.Equal(got, []string{want}) {
		t.Errorf("events %q\nwant %q", got, []string{want})
	}
}

// No earlier release wrote ca.sig: a ten-year CA that comes with one is not
// an earlier release's, and is refused for its lifetime, even endorsed with
// the key of the CA the replica trusts (which the token that wrote it can
// read). Refused by the replica that trusts that CA, which keeps it and
// writes nothing, and by a replica started since, which trusts none yet:
// each a Warning, the metric signing/lifetime. Without ca.sig the running
// replica refuses it as unendorsed (TestPlantedCAOfTheControllersKind...).
func TestTenYearCAThatComesWithACASigIsRefused(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	f.options.CAValidity = DefaultCAValidity
	m := f.manager()
	events := record.NewFakeRecorder(10)
	m.events = events
	leaf := atRest(ctx, t, f, m)
	bundle := f.caBundle(t)
	had := f.secret(t).Data

	template := replicaTemplate(t0)
	template.NotAfter = template.NotBefore.Add(87601 * time.Hour)
	plantedPEM, plantedKeyPEM := selfSigned(t, generateKey(t, ""), template)
	planted := parseCerts(t, plantedPEM)[0]
	secret := f.secret(t).DeepCopy()
	secret.Data = map[string][]byte{"ca.crt": plantedPEM, "ca.key": plantedKeyPEM, "trusted.crt": plantedPEM,
		"ca.sig": succession(t, had["ca.crt"], had["ca.key"], plantedPEM)}
	wantUntrustedSecretIgnored(ctx, t, f, m, secret, "a ten-year CA with a ca.sig", bundle, leaf)
	want := fmt.Sprintf("Warning RefusedCA ca.crt holds CA %q (SHA-256 %s), which the controller could not have made: "+
		"it is valid for 87601h0m0s, longer than the CA validity of 8760h0m0s and the 1h0m0s backdate. It is not "+
		"trusted: the caBundle of CRD foos.samplecontroller.k8s.io keeps the CAs it had, and nothing is written. Find "+
		"who wrote the Secret, then revoke the CA.", planted.Subject.String(), fingerprint(planted))
	if got := drain(events); !slices.Equal(got, []string{want}) {
		t.Errorf("events %q\nwant %q", got, []string{want})
	}
	if got, want := refusedCAs(t), map[string]float64{"signing/lifetime": 1}; !maps.Equal(got, want) {
		t.Errorf("samplecontroller_webhook_refused_cas %v, want %v", got, want)
	}

	fresh := f.manager()
	freshEvents := record.NewFakeRecorder(10)
	fresh.events = freshEvents
	for range 2 {
		f.observe(t, fresh)
		reconcile(ctx, t, fresh)
	}
	wantWrites(t, f, "a replica started since")
	if got := f.caBundle(t); !bytes.Equal(got, bundle) {
		t.Errorf("a replica started since: caBundle holds %d CAs, want the CA it had", len(parseCerts(t, got)))
	}
	if got := drain(freshEvents); !slices.Equal(got, []string{want}) {
		t.Errorf("a replica started since: events %q\nwant %q", got, []string{want})
	}
}
