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
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-samples/sample-controller/pkg/serving"
)

const (
	metricsConfigMap = "sample-controller-metrics-ca"
	metricsDNSName   = "sample-controller-metrics.sample-system.svc"
	createConfigMap  = "create configmaps " + metricsConfigMap
	updateConfigMap  = "update configmaps " + metricsConfigMap
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func metricsCA(m *Manager) *MetricsCA {
	return m.NewMetricsCA(MetricsOptions{
		ConfigMapName: metricsConfigMap, Key: "ca.crt",
		DNSNames: []string{metricsDNSName}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
}

// publishedBundle returns the ConfigMap's ca.crt as the API server holds it,
// nil if there is no ConfigMap.
func (f *fixture) publishedBundle(t *testing.T) []byte {
	t.Helper()
	obj, err := f.client.Tracker().Get(configMapsGVR, namespace, metricsConfigMap)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return []byte(obj.(*corev1.ConfigMap).Data["ca.crt"])
}

// observeConfigMap puts the ConfigMap as the API server holds it into p's
// cache, as its watch would.
func (f *fixture) observeConfigMap(t *testing.T, p *MetricsCA) {
	t.Helper()
	obj, err := f.client.Tracker().Get(configMapsGVR, namespace, metricsConfigMap)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.configMaps.GetStore().Update(obj); err != nil {
		t.Fatal(err)
	}
}

func syncMetrics(ctx context.Context, t *testing.T, p *MetricsCA) time.Duration {
	t.Helper()
	next, err := p.sync(ctx)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return next
}

// verifiedBy checks that p serves a certificate a scraper given bundle
// verifies for the metrics Service's name at now, as Prometheus' ca_file
// and server_name do, and returns it.
func verifiedBy(t *testing.T, p *MetricsCA, bundle []byte, now time.Time) *x509.Certificate {
	t.Helper()
	served := p.Certificate()
	if served == nil {
		t.Fatal("no metrics certificate")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatalf("the published bundle holds no certificate: %q", bundle)
	}
	if _, err := served.Leaf.Verify(x509.VerifyOptions{
		Roots: roots, DNSName: metricsDNSName, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		t.Fatalf("a scraper given the published bundle refuses the metrics certificate: %v", err)
	}
	return served.Leaf
}

// The bundle is published as the CRD's caBundle, once; the metrics
// certificate is signed by the CA for the metrics Service, verifiable with
// it; at rest nothing is written; a bundle edited by hand is put back.
func TestMetricsCAPublishesTheCABundleAndServesAVerifiableCertificate(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	m := f.manager()
	atRest(ctx, t, f, m)
	p := metricsCA(m)

	next := syncMetrics(ctx, t, p)
	wantWrites(t, f, "first sync", createConfigMap)
	if got, want := f.publishedBundle(t), f.caBundle(t); !bytes.Equal(got, want) {
		t.Fatalf("published %q, want the CRD's caBundle %q", got, want)
	}
	leaf := verifiedBy(t, p, f.publishedBundle(t), t0)
	if !bytes.Equal(leaf.RawIssuer, f.signingCA(t).RawSubject) || len(leaf.DNSNames) != 1 ||
		leaf.DNSNames[0] != metricsDNSName {
		t.Errorf("metrics certificate for %v issued by %q, want for [%s] by the signing CA", leaf.DNSNames,
			leaf.Issuer, metricsDNSName)
	}
	if want := 20 * time.Hour; next != want {
		t.Errorf("next deadline in %s, want %s (two thirds of the leaf's life)", next, want)
	}

	f.observeConfigMap(t, p)
	syncMetrics(ctx, t, p)
	wantWrites(t, f, "at rest")
	if p.Certificate().Leaf != leaf {
		t.Error("at rest the metrics certificate changed")
	}

	// Someone writes another CA into the ConfigMap: it is put back.
	cm, err := f.client.CoreV1().ConfigMaps(namespace).Get(ctx, metricsConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := testCA(t, "foreign", t0.Add(-time.Hour), t0.Add(time.Hour))
	cm.Data["ca.crt"] = string(foreign)
	if _, err := f.client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.takeWrites()
	f.observeConfigMap(t, p)
	syncMetrics(ctx, t, p)
	wantWrites(t, f, "after a foreign edit", updateConfigMap)
	if got, want := f.publishedBundle(t), f.caBundle(t); !bytes.Equal(got, want) {
		t.Errorf("published %q after the foreign edit, want the CRD's caBundle back", got)
	}
}

// A rotated CA is published at once, next to the old one, but the metrics
// certificate moves to it only after metricsSettle, while scrapers' mounted
// ConfigMaps catch up; a certificate whose CA the bundle dropped is replaced
// at once.
func TestMetricsCertificateFollowsARotatedCAAfterItSettlesAndARevokedOneAtOnce(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	f.options.LeafValidity = testCAValidity // the leaf lives as long as the CA
	m := f.manager()
	atRest(ctx, t, f, m)
	p := metricsCA(m)
	syncMetrics(ctx, t, p)
	f.observeConfigMap(t, p)
	oldCA := f.signingCA(t)
	oldLeaf := verifiedBy(t, p, f.publishedBundle(t), t0)
	f.takeWrites()

	// The manager rotates the CA two thirds through its life and writes
	// the caBundle with both.
	f.clock.Step(200*time.Hour + time.Second)
	now := f.clock.Now()
	f.observe(t, m)
	reconcile(ctx, t, m)
	f.observe(t, m)
	reconcile(ctx, t, m)
	f.takeWrites()
	newCA := f.signingCA(t)
	if newCA.Equal(oldCA) {
		t.Fatal("the manager did not rotate the CA")
	}

	next := syncMetrics(ctx, t, p)
	wantWrites(t, f, "rotation", updateConfigMap)
	f.observeConfigMap(t, p)
	if got := parseCerts(t, f.publishedBundle(t)); len(got) != 2 || !got[0].Equal(newCA) || !got[1].Equal(oldCA) {
		t.Fatalf("published %d CAs after the rotation, want the new then the old", len(got))
	}
	if p.Certificate().Leaf != oldLeaf || next != metricsSettle {
		t.Errorf("right after the rotation: serving the old certificate %v, next in %s; want the old one, next in %s",
			p.Certificate().Leaf == oldLeaf, next, metricsSettle)
	}
	f.clock.Step(metricsSettle - time.Second)
	syncMetrics(ctx, t, p)
	if p.Certificate().Leaf != oldLeaf {
		t.Error("switched to the new CA before metricsSettle")
	}
	f.clock.Step(time.Second)
	syncMetrics(ctx, t, p)
	wantWrites(t, f, "switch")
	newLeaf := verifiedBy(t, p, f.publishedBundle(t), f.clock.Now())
	if !bytes.Equal(newLeaf.RawIssuer, newCA.RawSubject) || !newLeaf.NotBefore.Equal(now.Add(metricsSettle-backdate)) {
		t.Errorf("after metricsSettle: certificate by %q from %v, want by the new CA", newLeaf.Issuer, newLeaf.NotBefore)
	}

	// Revocation: the caBundle drops a CA; a certificate of it is replaced
	// at the next sync, with no settle (it is no longer trusted anyway).
	g := newFixture(t, fooCRD("Webhook"))
	g.options.LeafValidity = testCAValidity
	gm := g.manager()
	atRest(ctx, t, g, gm)
	gp := metricsCA(gm)
	syncMetrics(ctx, t, gp)
	g.observeConfigMap(t, gp)
	revoked := gp.Certificate().Leaf
	// Another CA replaces the Secret's and is the caBundle's only one, as
	// a revocation leaves them.
	certPEM, keyPEM := testCA(t, "replacement", t0.Add(-time.Hour), t0.Add(testCAValidity))
	secret := g.secret(t).DeepCopy()
	secret.Data[caCertKey], secret.Data[caKeyKey], secret.Data[trustedKey] = certPEM, keyPEM, certPEM
	if err := gm.secrets.GetStore().Update(secret); err != nil {
		t.Fatal(err)
	}
	crd := fooCRD("Webhook")
	if err := unstructured.SetNestedField(crd.Object, base64.StdEncoding.EncodeToString(certPEM),
		"spec", "conversion", "webhook", "clientConfig", "caBundle"); err != nil {
		t.Fatal(err)
	}
	if err := gm.crd.GetStore().Update(crd); err != nil {
		t.Fatal(err)
	}
	g.takeWrites()
	syncMetrics(ctx, t, gp)
	wantWrites(t, g, "revocation", updateConfigMap)
	replaced := verifiedBy(t, gp, g.publishedBundle(t), t0)
	if replaced == revoked || !bytes.Equal(replaced.RawIssuer, parseCerts(t, certPEM)[0].RawSubject) {
		t.Errorf("the certificate of the dropped CA is still served")
	}
}

// StartMetricsCertificate signs for the metrics Service of the CA's
// namespace, publishing the bundle in the ConfigMap scrapers are told of; it
// signs nothing where there is no CA to sign with, or nothing to sign for:
// no metrics server, plain HTTP, a certificate given in files.
func TestMetricsCertificateIsForTheMetricsServiceAndOnlyWhereOneIsServed(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, fooCRD("Webhook"))
	m := f.manager()
	secure := serving.MetricsOptions{BindAddress: ":8443", Secure: true}
	for _, tc := range []struct {
		name string
		ca   *Manager
		o    serving.MetricsOptions
	}{
		{"no CA: no webhook served", nil, secure},
		{"no metrics server", m, serving.MetricsOptions{BindAddress: "0", Secure: true}},
		{"plain HTTP", m, serving.MetricsOptions{BindAddress: ":8080"}},
		{"a certificate in files", m, serving.MetricsOptions{BindAddress: ":8443", Secure: true,
			CertFile: "tls.crt", KeyFile: "tls.key"}},
	} {
		if p := metricsCertificate(tc.ca, tc.o); p != nil {
			t.Errorf("%s: a metrics certificate is kept, want none", tc.name)
		}
	}

	atRest(ctx, t, f, m)
	p := metricsCertificate(m, secure)
	if p == nil {
		t.Fatal("no metrics certificate kept for HTTPS with a CA")
	}
	syncMetrics(ctx, t, p)
	wantWrites(t, f, "first sync", createConfigMap)
	verifiedBy(t, p, f.publishedBundle(t), t0)
}
