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
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	namespace  = "sample-system"
	secretName = "sample-controller-webhook-ca"
	crdName    = "foos.samplecontroller.k8s.io"
	dnsName    = "sample-controller-webhook.sample-system.svc"
)

// t0 is when every test starts. Certificates hold whole seconds.
var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// The lifetimes of the tests: a CA made at t is valid from t-1h (the
// backdate) to t+300h and renewed at t+200h; a leaf issued at t is valid to
// t+30h and reissued at t+20h. The backdate is no part of either life.
const (
	testCAValidity   = 300 * time.Hour
	testLeafValidity = 30 * time.Hour
)

// fixture is one API server's state, the fakes, shared by the managers a
// test makes, and the log of their writes.
type fixture struct {
	client  *k8sfake.Clientset
	dyn     *dynamicfake.FakeDynamicClient
	clock   *clocktesting.FakeClock
	options Options

	mu     sync.Mutex
	writes []string
}

// newFixture holds crd (nil: none) and secrets.
func newFixture(t *testing.T, crd *unstructured.Unstructured, secrets ...runtime.Object) *fixture {
	t.Helper()
	var crds []runtime.Object
	if crd != nil {
		crds = append(crds, crd)
	}
	f := &fixture{
		client: k8sfake.NewClientset(secrets...),
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{crdGVR: "CustomResourceDefinitionList"}, crds...),
		clock: clocktesting.NewFakeClock(t0),
	}
	f.options = Options{
		Namespace: namespace, SecretName: secretName, CRDName: crdName,
		DNSNames: []string{dnsName}, IPs: []net.IP{net.ParseIP("10.96.0.42")},
		CAValidity: testCAValidity, LeafValidity: testLeafValidity,
		Clock: f.clock,
	}
	f.enforceResourceVersions()
	// Prepended last, the recorder sees every request first.
	f.client.PrependReactor("*", "*", f.record)
	f.dyn.PrependReactor("*", "*", f.record)
	return f
}

// manager returns a manager of the fixture's options on its fakes, as one
// replica. Its caches are filled by observe, when the test says.
func (f *fixture) manager() *Manager {
	return New(f.client, f.dyn, f.options)
}

// record logs the writes, in order, as "verb resource name".
func (f *fixture) record(action k8stesting.Action) (bool, runtime.Object, error) {
	var name string
	switch action.GetVerb() {
	case "create", "update":
		obj, err := meta.Accessor(action.(interface{ GetObject() runtime.Object }).GetObject())
		if err != nil {
			return true, nil, err
		}
		name = obj.GetName()
	case "patch":
		name = action.(k8stesting.PatchAction).GetName()
	default:
		return false, nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, action.GetVerb()+" "+action.GetResource().Resource+" "+name)
	return false, nil, nil
}

// takeWrites returns the writes logged since it was last called.
func (f *fixture) takeWrites() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	writes := f.writes
	f.writes = nil
	return writes
}

// enforceResourceVersions makes Secret writes behave as the API server's:
// each gets a new resourceVersion, and an update that carries another one
// than stored fails with a Conflict. The fake's tracker does neither.
func (f *fixture) enforceResourceVersions() {
	tracker := f.client.Tracker()
	last := 1 // the Secrets a test starts with are at "1"
	f.client.PrependReactor("create", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		secret := action.(k8stesting.CreateAction).GetObject().(*corev1.Secret).DeepCopy()
		last++
		secret.ResourceVersion = strconv.Itoa(last)
		if err := tracker.Create(secretsGVR, secret, secret.Namespace); err != nil {
			return true, nil, err
		}
		return true, secret, nil
	})
	f.client.PrependReactor("update", "secrets", func(action k8stesting.Action) (bool, runtime.Object, error) {
		secret := action.(k8stesting.UpdateAction).GetObject().(*corev1.Secret).DeepCopy()
		stored, err := tracker.Get(secretsGVR, secret.Namespace, secret.Name)
		if err != nil {
			return true, nil, err
		}
		if stored.(*corev1.Secret).ResourceVersion != secret.ResourceVersion {
			return true, nil, apierrors.NewConflict(secretsGVR.GroupResource(), secret.Name,
				errors.New("the object has been modified; please apply your changes to the latest version and try again"))
		}
		last++
		secret.ResourceVersion = strconv.Itoa(last)
		if err := tracker.Update(secretsGVR, secret, secret.Namespace); err != nil {
			return true, nil, err
		}
		return true, secret, nil
	})
}

// observe puts the Secret and the CRD as the API server has them now into
// m's caches, as its watches would: the test decides when a manager sees a
// write.
func (f *fixture) observe(t *testing.T, m *Manager) {
	t.Helper()
	f.observeSecret(t, m)
	f.observeCRD(t, m)
}

func (f *fixture) observeSecret(t *testing.T, m *Manager) {
	t.Helper()
	if secret := f.secret(t); secret != nil {
		if err := m.secrets.GetStore().Update(secret); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) observeCRD(t *testing.T, m *Manager) {
	t.Helper()
	crd, err := f.dyn.Tracker().Get(crdGVR, "", crdName)
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := m.crd.GetStore().Update(crd); err != nil {
		t.Fatal(err)
	}
}

// secret returns the Secret the API server holds, nil if none.
func (f *fixture) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	obj, err := f.client.Tracker().Get(secretsGVR, namespace, secretName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*corev1.Secret)
}

// caBundle returns the CRD's caBundle as the API server holds it, decoded.
func (f *fixture) caBundle(t *testing.T) []byte {
	t.Helper()
	obj, err := f.dyn.Tracker().Get(crdGVR, "", crdName)
	if err != nil {
		t.Fatal(err)
	}
	encoded, _, err := unstructured.NestedString(obj.(*unstructured.Unstructured).Object,
		"spec", "conversion", "webhook", "clientConfig", "caBundle")
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		t.Fatal(err)
	}
	return bundle
}

// fooCRD is the Foo CRD with the conversion strategy given; with Webhook,
// the webhook's Service and no caBundle.
func fooCRD(strategy string) *unstructured.Unstructured {
	conversion := map[string]any{"strategy": strategy}
	if strategy == "Webhook" {
		conversion["webhook"] = map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig": map[string]any{
				"service": map[string]any{"namespace": namespace, "name": "sample-controller-webhook", "path": "/convert"},
			},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": crdName},
		"spec": map[string]any{
			"group":      "samplecontroller.k8s.io",
			"names":      map[string]any{"kind": "Foo", "plural": "foos"},
			"scope":      "Namespaced",
			"conversion": conversion,
		},
	}}
}

// handshake connects to m's GetCertificate as the API server would: trusting
// the CAs of bundle only, for dnsName, with the clock at now. It returns the
// certificate served, once verified.
func handshake(m *Manager, bundle []byte, now time.Time) (*x509.Certificate, error) {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	serverConn, clientConn := net.Pipe()
	defer serverConn.Close()
	server := tls.Server(serverConn, &tls.Config{
		GetCertificate: m.GetCertificate, MinVersion: tls.VersionTLS12,
		Time: func() time.Time { return now }, SessionTicketsDisabled: true,
	})
	client := tls.Client(clientConn, &tls.Config{
		RootCAs: roots, ServerName: dnsName, MinVersion: tls.VersionTLS12,
		Time: func() time.Time { return now },
	})
	serverDone := make(chan struct{})
	go func() {
		defer close(serverDone)
		_ = server.Handshake() // its failures are the client's to see
	}()
	err := client.Handshake()
	_ = clientConn.Close()
	<-serverDone
	if err != nil {
		return nil, err
	}
	return client.ConnectionState().PeerCertificates[0], nil
}

// servesTrusted checks that m serves a leaf the API server accepts with the
// caBundle it holds now, and returns that leaf.
func (f *fixture) servesTrusted(t *testing.T, m *Manager) *x509.Certificate {
	t.Helper()
	leaf, err := handshake(m, f.caBundle(t), f.clock.Now())
	if err != nil {
		t.Fatalf("handshake trusting the CRD's caBundle: %v", err)
	}
	if err := m.Ready(); err != nil {
		t.Errorf("Ready: %v, want nil", err)
	}
	return leaf
}

// parseCerts parses a PEM bundle.
func parseCerts(t *testing.T, pemBytes []byte) []*x509.Certificate {
	t.Helper()
	certs, err := cert.ParseCertsPEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	return certs
}

// signingCA returns the signing CA of the Secret the API server holds.
func (f *fixture) signingCA(t *testing.T) *x509.Certificate {
	t.Helper()
	certs := parseCerts(t, f.secret(t).Data["ca.crt"])
	if len(certs) != 1 {
		t.Fatalf("ca.crt holds %d certificates, want 1", len(certs))
	}
	return certs[0]
}

// testCA makes a CA, independently of the code under test, valid from
// notBefore to notAfter; it returns its certificate and key in PEM.
func testCA(t *testing.T, name string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    notBefore, NotAfter: notAfter,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err = cert.EncodeCertificates(c)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// replicaTemplate is the CA a replica of this controller makes at madeAt
// with testCAValidity, written out here rather than taken from
// newAuthority: valid from an hour before, named for the Unix time.
func replicaTemplate(madeAt time.Time) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          big.NewInt(madeAt.UnixNano()),
		Subject:               pkix.Name{CommonName: "sample-controller-webhook-ca@" + strconv.FormatInt(madeAt.Unix(), 10)},
		NotBefore:             madeAt.Add(-time.Hour),
		NotAfter:              madeAt.Add(testCAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
}

// replicaCA makes the CA another replica makes at madeAt, in PEM.
func replicaCA(t *testing.T, madeAt time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return selfSigned(t, key, replicaTemplate(madeAt))
}

// selfSigned makes a CA of template signed by key itself, in PEM.
func selfSigned(t *testing.T, key crypto.Signer, template *x509.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// endorsement is trusted.sig for the CA of caPEM, signed by keyPEM, as a
// replica that rotated to that key writes it.
func endorsement(t *testing.T, keyPEM, caPEM []byte) []byte {
	t.Helper()
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := endorse(key.(crypto.Signer), parseCerts(t, caPEM))
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// succession is ca.sig for the CA of nextPEM, endorsed by the CA of
// certPEM and keyPEM, as a replica that trusted that CA writes it when it
// makes the next.
func succession(t *testing.T, certPEM, keyPEM, nextPEM []byte) []byte {
	t.Helper()
	sig, err := succeed(parseCerts(t, nextPEM)[0],
		[]endorser{{cert: parseCerts(t, certPEM)[0], key: parseKey(t, keyPEM)}})
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func parseKey(t *testing.T, keyPEM []byte) crypto.Signer {
	t.Helper()
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return key.(crypto.Signer)
}

func pemOf(t *testing.T, c *x509.Certificate) []byte {
	t.Helper()
	out, err := cert.EncodeCertificates(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
