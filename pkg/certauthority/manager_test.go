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
	"maps"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"
)

// The writes the tests expect.
const (
	createSecret = "create secrets sample-controller-webhook-ca"
	updateSecret = "update secrets sample-controller-webhook-ca"
	patchCRD     = "patch customresourcedefinitions foos.samplecontroller.k8s.io"
)

func reconcile(ctx context.Context, t *testing.T, m *Manager) time.Duration {
	t.Helper()
	next, err := m.reconcile(ctx)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return next
}

func wantWrites(t *testing.T, f *fixture, step string, want ...string) {
	t.Helper()
	if got := f.takeWrites(); !slices.Equal(got, want) {
		t.Errorf("%s: writes %q, want %q", step, got, want)
	}
}

// wantUntrustedSecretIgnored writes secret, as someone other than the
// controller would, and checks that m, reconciling it three times, writes
// nothing, keeps the caBundle it had and serves the leaf it served.
func wantUntrustedSecretIgnored(ctx context.Context, t *testing.T, f *fixture, m *Manager, secret *corev1.Secret,
	step string, bundle []byte, leaf *x509.Certificate) {
	t.Helper()
	if _, err := f.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.takeWrites()
	for range 3 {
		f.observe(t, m)
		reconcile(ctx, t, m)
	}
	wantWrites(t, f, step)
	if got := f.caBundle(t); !bytes.Equal(got, bundle) {
		t.Errorf("%s: caBundle:\n%s\nwant it as it was:\n%s", step, got, bundle)
	}
	if got := f.servesTrusted(t, m); !got.Equal(leaf) {
		t.Errorf("%s: the leaf changed", step)
	}
}

// atRest brings m to rest: the Secret made, the caBundle written and seen,
// a leaf served. It returns that leaf.
func atRest(ctx context.Context, t *testing.T, f *fixture, m *Manager) *x509.Certificate {
	t.Helper()
	f.observe(t, m)
	reconcile(ctx, t, m)
	f.observe(t, m)
	reconcile(ctx, t, m)
	f.takeWrites()
	return f.servesTrusted(t, m)
}

func TestNoSecretCreatesTheCAWritesTheCABundleAndServesATrustedLeaf(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	m := f.manager()
	f.observe(t, m) // the CRD, as the caches hold it once synced

	if next := reconcile(ctx, t, m); next != 0 {
		t.Errorf("first reconcile: next in %s, want none (the CRD event comes next)", next)
	}
	wantWrites(t, f, "first reconcile", createSecret, patchCRD)
	// The caBundle just written has not been seen yet.
	if _, err := m.GetCertificate(nil); err == nil {
		t.Error("a leaf is served before the caBundle holding its CA was seen")
	}
	if err := m.Ready(); err == nil || !strings.Contains(err.Error(), "for the caBundle of CRD foos.samplecontroller.k8s.io to hold the signing CA") {
		t.Errorf("Ready: %v, want it waiting for the caBundle", err)
	}

	secret := f.secret(t)
	if secret.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret type %q, want Opaque", secret.Type)
	}
	if keys := slices.Sorted(maps.Keys(secret.Data)); !slices.Equal(keys, []string{"ca.crt", "ca.key", "trusted.crt"}) {
		t.Errorf("Secret keys %q, want ca.crt, ca.key, trusted.crt", keys)
	}
	if !bytes.Equal(secret.Data["trusted.crt"], secret.Data["ca.crt"]) {
		t.Errorf("trusted.crt:\n%s\nwant the signing CA alone:\n%s", secret.Data["trusted.crt"], secret.Data["ca.crt"])
	}
	if bundle := f.caBundle(t); !bytes.Equal(bundle, secret.Data["trusted.crt"]) {
		t.Errorf("caBundle:\n%s\nwant trusted.crt:\n%s", bundle, secret.Data["trusted.crt"])
	}
	ca := f.signingCA(t)
	if !ca.NotAfter.Equal(t0.Add(300*time.Hour)) || !ca.NotBefore.Equal(t0.Add(-time.Hour)) {
		t.Errorf("CA valid %s to %s, want from an hour before t0 to 300 h after", ca.NotBefore, ca.NotAfter)
	}

	f.observe(t, m)
	if next := reconcile(ctx, t, m); next != 20*time.Hour {
		t.Errorf("next reconcile in %s, want 20h0m0s (the leaf two thirds through its 30 h)", next)
	}
	wantWrites(t, f, "second reconcile")
	leaf := f.servesTrusted(t, m)
	if err := leaf.CheckSignatureFrom(ca); err != nil {
		t.Errorf("leaf not signed by the Secret's CA: %v", err)
	}
	if !slices.Equal(leaf.DNSNames, []string{dnsName}) {
		t.Errorf("leaf DNS names %q, want %q", leaf.DNSNames, dnsName)
	}
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("10.96.0.42")) {
		t.Errorf("leaf IPs %v, want [10.96.0.42]", leaf.IPAddresses)
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("leaf extended key usages %v, want server auth only", leaf.ExtKeyUsage)
	}
	if !leaf.NotAfter.Equal(t0.Add(30 * time.Hour)) {
		t.Errorf("leaf valid until %s, want t0+29h", leaf.NotAfter)
	}

	// The patch set the caBundle and left the rest of the webhook alone.
	crd, err := f.dyn.Resource(crdGVR).Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if service, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "name"); service != "sample-controller-webhook" {
		t.Errorf("webhook Service %q after the patch, want sample-controller-webhook", service)
	}
}

func TestAtRestReconcileWritesNothing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	m := f.manager()
	atRest(ctx, t, f, m)
	served, err := m.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}

	f.clock.Step(18 * time.Hour)
	for range 2 {
		f.observe(t, m)
		if next := reconcile(ctx, t, m); next != 2*time.Hour {
			t.Errorf("next reconcile in %s, want 2h0m0s (t0+20h)", next)
		}
	}
	wantWrites(t, f, "at rest")
	if again, _ := m.GetCertificate(nil); again != served {
		t.Error("the leaf was reissued before its time")
	}
}

func TestConversionStrategyNoneWritesNothingAndServesNoLeaf(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("None"))
	m := f.manager()
	f.observe(t, m)
	if next := reconcile(ctx, t, m); next != 0 {
		t.Errorf("next reconcile in %s, want none", next)
	}
	wantWrites(t, f, "strategy None")
	if _, err := m.GetCertificate(nil); err == nil {
		t.Error("GetCertificate served a leaf")
	}
	if err := m.Ready(); err == nil || !strings.Contains(err.Error(), `CRD foos.samplecontroller.k8s.io has conversion strategy "None", not Webhook`) {
		t.Errorf("Ready: %v, want it to name the strategy", err)
	}
	if _, err := handshake(m, nil, t0); err == nil {
		t.Error("a TLS handshake succeeded without a leaf")
	}
}

func TestMissingCRDWaitsWithoutWriting(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, nil)
	m := f.manager()
	reconcile(ctx, t, m)
	wantWrites(t, f, "no CRD")
	if err := m.Ready(); err == nil || !strings.Contains(err.Error(), "waiting for CRD foos.samplecontroller.k8s.io to exist") {
		t.Errorf("Ready: %v, want it waiting for the CRD", err)
	}
}

func TestCARotationSwitchesTheLeafOnlyOnceTheCABundleIsSeenToTrustTheNewCA(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	f.options.LeafValidity = 1000 * time.Hour // capped by the CA's NotAfter
	m := f.manager()
	oldLeaf := atRest(ctx, t, f, m)
	oldCA := f.signingCA(t)
	oldBundle := f.caBundle(t)
	if !oldLeaf.NotAfter.Equal(t0.Add(300 * time.Hour)) {
		t.Fatalf("leaf valid until %s, want the CA's NotAfter, t0+300h", oldLeaf.NotAfter)
	}

	// 200 h: the CA is two thirds through its life.
	f.clock.Step(200 * time.Hour)
	reconcile(ctx, t, m)
	wantWrites(t, f, "rotation", updateSecret, patchCRD)
	newCA := f.signingCA(t)
	if newCA.Equal(oldCA) {
		t.Fatal("the signing CA was not replaced")
	}
	trusted := parseCerts(t, f.secret(t).Data["trusted.crt"])
	if len(trusted) != 2 || !trusted[0].Equal(newCA) || !trusted[1].Equal(oldCA) {
		t.Fatalf("trusted.crt holds %d certificates, want the new CA then the old one", len(trusted))
	}
	if !bytes.Equal(f.caBundle(t), f.secret(t).Data["trusted.crt"]) {
		t.Error("caBundle is not trusted.crt")
	}
	// The patch is written but not seen: the old leaf is still served,
	// trusted by the old caBundle and by the new one.
	if leaf := f.servesTrusted(t, m); !leaf.Equal(oldLeaf) {
		t.Error("the leaf changed before the new caBundle was seen")
	}
	if _, err := handshake(m, oldBundle, f.clock.Now()); err != nil {
		t.Errorf("handshake trusting the old caBundle only: %v", err)
	}

	// Seen: the old leaf is served on while the new caBundle settles in
	// every API server.
	f.observe(t, m)
	if next := reconcile(ctx, t, m); next != 15*time.Second {
		t.Errorf("next reconcile in %s, want 15s (the caBundle settled)", next)
	}
	if leaf := f.servesTrusted(t, m); !leaf.Equal(oldLeaf) {
		t.Error("the leaf changed as soon as the new caBundle was seen, before it settled")
	}
	f.clock.Step(15*time.Second - time.Nanosecond)
	reconcile(ctx, t, m)
	if leaf := f.servesTrusted(t, m); !leaf.Equal(oldLeaf) {
		t.Error("the leaf changed before the new caBundle settled")
	}
	f.clock.Step(time.Nanosecond)
	if next := reconcile(ctx, t, m); next != 200*time.Hour-15*time.Second {
		t.Errorf("next reconcile in %s, want 199h59m45s (new CA at t0+400h)", next)
	}
	wantWrites(t, f, "after the caBundle was seen")
	newLeaf := f.servesTrusted(t, m)
	if err := newLeaf.CheckSignatureFrom(newCA); err != nil {
		t.Errorf("leaf not signed by the new CA: %v", err)
	}
	if !newLeaf.NotAfter.Equal(t0.Add(500 * time.Hour)) {
		t.Errorf("new leaf valid until %s, want the new CA's NotAfter, t0+500h", newLeaf.NotAfter)
	}
	if _, err := handshake(m, oldBundle, f.clock.Now()); err == nil {
		t.Error("the new leaf verifies against the old caBundle: it is not the new CA's")
	}
}

func TestLeafIsReissuedTwoThirdsThroughItsLife(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	m := f.manager()
	first := atRest(ctx, t, f, m)

	f.clock.Step(20*time.Hour - time.Second)
	reconcile(ctx, t, m)
	if leaf := f.servesTrusted(t, m); !leaf.Equal(first) {
		t.Error("leaf reissued a second early")
	}
	f.clock.Step(time.Second)
	if next := reconcile(ctx, t, m); next != 20*time.Hour {
		t.Errorf("next reconcile in %s, want 20h0m0s", next)
	}
	wantWrites(t, f, "leaf reissue")
	second := f.servesTrusted(t, m)
	if second.Equal(first) {
		t.Fatal("leaf not reissued at t0+20h")
	}
	if err := second.CheckSignatureFrom(f.signingCA(t)); err != nil {
		t.Errorf("reissued leaf not signed by the same CA: %v", err)
	}
	if !second.NotAfter.Equal(t0.Add(50 * time.Hour)) {
		t.Errorf("reissued leaf valid until %s, want t0+50h", second.NotAfter)
	}
}

func TestReplicasRacingToCreateTheSecretShareOneCA(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	a, b := f.manager(), f.manager()
	f.observe(t, a)
	f.observe(t, b)

	// Neither has seen a Secret: both create one, b's fails and b adopts
	// a's. b's cache still shows the CRD without a caBundle, so b writes
	// the same caBundle again.
	reconcile(ctx, t, a)
	created := f.secret(t).DeepCopy()
	reconcile(ctx, t, b)
	wantWrites(t, f, "race", createSecret, patchCRD, createSecret, patchCRD)
	if !bytes.Equal(f.secret(t).Data["ca.key"], created.Data["ca.key"]) {
		t.Fatal("the Secret created first was replaced")
	}

	ca := f.signingCA(t)
	for name, m := range map[string]*Manager{"a": a, "b": b} {
		f.observe(t, m)
		reconcile(ctx, t, m)
		if err := f.servesTrusted(t, m).CheckSignatureFrom(ca); err != nil {
			t.Errorf("%s's leaf is not signed by the Secret's CA: %v", name, err)
		}
	}
	wantWrites(t, f, "after the race")
}

func TestConcurrentRotationKeepsTheFirstReplicasCA(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	f.options.LeafValidity = 1000 * time.Hour
	a, b := f.manager(), f.manager()
	atRest(ctx, t, f, a)
	f.observe(t, b)
	reconcile(ctx, t, b)
	oldCA := f.signingCA(t)

	// Both see the CA due; a rotates first, b's update carries the
	// resourceVersion of the Secret it read, and conflicts.
	f.clock.Step(200 * time.Hour)
	reconcile(ctx, t, a)
	rotated := f.secret(t).DeepCopy()
	reconcile(ctx, t, b)
	wantWrites(t, f, "concurrent rotation", updateSecret, patchCRD, updateSecret, patchCRD)
	secret := f.secret(t)
	if !bytes.Equal(secret.Data["ca.crt"], rotated.Data["ca.crt"]) || secret.ResourceVersion != rotated.ResourceVersion {
		t.Fatal("b replaced the CA a rotated to")
	}
	newCA := f.signingCA(t)
	trusted := parseCerts(t, secret.Data["trusted.crt"])
	if len(trusted) != 2 || !trusted[0].Equal(newCA) || !trusted[1].Equal(oldCA) {
		t.Errorf("trusted.crt holds %d certificates, want the new CA then the old one", len(trusted))
	}
	for _, m := range []*Manager{a, b} {
		f.observe(t, m)
		reconcile(ctx, t, m)
	}
	f.clock.Step(settle)
	for name, m := range map[string]*Manager{"a": a, "b": b} {
		reconcile(ctx, t, m)
		if err := f.servesTrusted(t, m).CheckSignatureFrom(newCA); err != nil {
			t.Errorf("%s's leaf is not signed by the new CA: %v", name, err)
		}
	}
	wantWrites(t, f, "after the rotation was seen")
}

func TestStaleSecretCacheDoesNotTakeANewCAOutOfTheCABundle(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	m := f.manager()
	atRest(ctx, t, f, m)
	oldCAPEM, oldKeyPEM := f.secret(t).Data["ca.crt"], f.secret(t).Data["ca.key"]

	// Another replica put a new CA in the Secret, endorsed by the old, and
	// in the caBundle; m sees the CRD's event before the Secret's.
	newCAPEM, newKeyPEM := replicaCA(t, t0.Add(time.Minute))
	trusted := slices.Concat(newCAPEM, oldCAPEM)
	secret := f.secret(t).DeepCopy()
	secret.Data = map[string][]byte{"ca.crt": newCAPEM, "ca.key": newKeyPEM, "trusted.crt": trusted,
		"trusted.sig": endorsement(t, newKeyPEM, oldCAPEM), "ca.sig": succession(t, oldCAPEM, oldKeyPEM, newCAPEM)}
	if _, err := f.client.CoreV1().Secrets(namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	crd := fooCRD("Webhook")
	if err := unstructured.SetNestedField(crd.Object, base64.StdEncoding.EncodeToString(trusted), "spec", "conversion", "webhook", "clientConfig", "caBundle"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.dyn.Resource(crdGVR).Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.takeWrites()
	f.observeCRD(t, m)

	reconcile(ctx, t, m)
	f.clock.Step(settle)
	reconcile(ctx, t, m)
	wantWrites(t, f, "stale Secret cache")
	if !bytes.Equal(f.caBundle(t), trusted) {
		t.Error("the caBundle lost the new CA")
	}
	newCA := parseCerts(t, newCAPEM)[0]
	if err := f.servesTrusted(t, m).CheckSignatureFrom(newCA); err != nil {
		t.Errorf("leaf not signed by the new CA, read from the API server: %v", err)
	}
}

func TestSecretThatDoesNotParseIsNotOverwritten(t *testing.T) {
	caPEM, keyPEM := testCA(t, "a CA", t0.Add(-time.Hour), t0.Add(299*time.Hour))
	_, otherKeyPEM := testCA(t, "another CA", t0.Add(-time.Hour), t0.Add(299*time.Hour))
	otherCAPEM, _ := testCA(t, "yet another CA", t0.Add(-time.Hour), t0.Add(299*time.Hour))
	for _, tc := range []struct {
		name string
		data map[string][]byte
		want string
	}{
		{"someone else's Secret", map[string][]byte{"password": []byte("hunter2")},
			"ca.crt: data does not contain any valid RSA or ECDSA certificates"},
		{"key of another CA", map[string][]byte{"ca.crt": caPEM, "ca.key": otherKeyPEM, "trusted.crt": caPEM},
			"ca.key is not the key of ca.crt"},
		{"signing CA not trusted", map[string][]byte{"ca.crt": caPEM, "ca.key": keyPEM, "trusted.crt": otherCAPEM},
			"trusted.crt does not hold ca.crt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName, ResourceVersion: "1"},
				Data:       tc.data,
			}
			f := newFixture(t, fooCRD("Webhook"), secret)
			m := f.manager()
			f.observe(t, m)
			_, err := m.reconcile(ctx)
			want := "secret sample-system/sample-controller-webhook-ca holds no CA this manager can use, leaving it as it is: " + tc.want
			if err == nil || err.Error() != want {
				t.Errorf("reconcile: %v, want %s", err, want)
			}
			wantWrites(t, f, tc.name)
			if got := f.secret(t); got.ResourceVersion != "1" {
				t.Errorf("Secret at resourceVersion %s, want 1, untouched", got.ResourceVersion)
			}
			if err := m.Ready(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Ready: %v, want it to say %q", err, tc.want)
			}
			if _, err := m.GetCertificate(nil); err == nil {
				t.Error("a leaf is served")
			}
		})
	}
}

func TestRotationDropsExpiredCAsFromTrusted(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	f.options.LeafValidity = 1000 * time.Hour
	m := f.manager()
	atRest(ctx, t, f, m)
	first := f.signingCA(t) // expires at t0+300h

	f.clock.Step(200 * time.Hour)
	reconcile(ctx, t, m)
	second := f.signingCA(t) // made at t0+200h
	f.observe(t, m)
	reconcile(ctx, t, m)
	f.clock.Step(settle)
	reconcile(ctx, t, m)
	f.takeWrites()

	f.clock.Step(200*time.Hour - settle) // t0+400h: first has expired
	reconcile(ctx, t, m)
	wantWrites(t, f, "second rotation", updateSecret, patchCRD)
	third := f.signingCA(t)
	trusted := parseCerts(t, f.secret(t).Data["trusted.crt"])
	if len(trusted) != 2 || !trusted[0].Equal(third) || !trusted[1].Equal(second) {
		t.Errorf("trusted.crt holds %d certificates, want the third CA then the second", len(trusted))
	}
	for _, c := range trusted {
		if c.Equal(first) {
			t.Error("trusted.crt still holds the expired first CA")
		}
	}
	f.servesTrusted(t, m)
}

func TestRunServesATrustedLeafFromInformerEvents(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	f := newFixture(t, fooCRD("Webhook"))
	m := f.manager()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	// The create and the patch come back as watch events, which queue the
	// reconcile that issues the leaf.
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return m.Ready() == nil, nil
	})
	if err != nil {
		t.Fatalf("not ready: %v (%v)", err, m.Ready())
	}
	f.servesTrusted(t, m)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	// The Secret and the CRD come on two watches, in either order: the
	// reconcile of the first event may see the other object as it was
	// before this manager wrote it, and repeat that write (a create refused
	// as AlreadyExists, an identical patch).
	writes := f.takeWrites()
	if len(writes) < 2 || writes[0] != createSecret || writes[1] != patchCRD || len(writes) > 4 ||
		slices.ContainsFunc(writes, func(w string) bool { return w != createSecret && w != patchCRD }) {
		t.Errorf("Run: writes %q, want a create of the Secret then a patch of the CRD, each repeated once at most", writes)
	}
	if rv := f.secret(t).ResourceVersion; rv != "2" {
		t.Errorf("Secret at resourceVersion %s, want 2: created once, never replaced", rv)
	}
}

func TestStoredVersionsAreTheCachedCRDs(t *testing.T) {
	crd := fooCRD("Webhook")
	if err := unstructured.SetNestedStringSlice(crd.Object, []string{"v1alpha1", "v1beta1"}, "status", "storedVersions"); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, crd)
	m := f.manager()
	if got := m.StoredVersions(); got != nil {
		t.Errorf("StoredVersions() before the CRD is cached = %q, want nil", got)
	}
	f.observeCRD(t, m)
	if got, want := m.StoredVersions(), []string{"v1alpha1", "v1beta1"}; !slices.Equal(got, want) {
		t.Errorf("StoredVersions() = %q, want %q", got, want)
	}
}
