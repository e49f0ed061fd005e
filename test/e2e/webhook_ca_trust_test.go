//go:build e2e

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

package e2e

// Only the controller's own CAs are trusted (pkg/certauthority): a CA written
// into the CA Secret by hand, or into the CRD's caBundle, never reaches the
// caBundle, nor does a signing CA the controller could not have made; revoke-now moves every replica to a new CA and drops the old,
// without a failed read.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/certauthority"
	"github.com/kube-samples/sample-controller/test/framework"
)

// startControllerWithItsOwnCA starts a controller serving the webhook in a
// new namespace named for name, with a CA Secret of that name there, waits
// until it is ready, and starts a reader of a Foo in v1alpha1 through the
// webhook; it returns them with the controller's signing CA.
func startControllerWithItsOwnCA(t *testing.T, name string) (ns, secretName string, c *framework.Controller,
	signer *x509.Certificate, reader *alphaReader) {
	t.Helper()
	ns = newNamespace(t, name)
	ensureStandardCRD(t)
	secretName = name
	c = startController(t, "controller", controllerArgs(ns, "-webhook-namespace="+ns, "-webhook-ca-secret="+secretName)...)
	waitControllerReady(t, c)
	foo := createFoo(t, newFoo(ns, "read", "read", int32p(1)))
	return ns, secretName, c, caOf(t, ns, secretName), startAlphaReader(t, ns, foo.Name)
}

// alphaReader reads a Foo in v1alpha1, through the conversion webhook,
// every 200 ms until stopped, and counts the reads that failed.
type alphaReader struct {
	reads, failed atomic.Int64
	lastErr       atomic.Value
	stop, done    chan struct{}
}

func startAlphaReader(t *testing.T, ns, name string) *alphaReader {
	t.Helper()
	r := &alphaReader{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			r.reads.Add(1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if _, err := alphaFoos(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
				r.failed.Add(1)
				r.lastErr.Store(err.Error())
			}
			cancel()
		}
	}()
	t.Cleanup(r.stopReading)
	return r
}

func (r *alphaReader) stopReading() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

// readsMore waits for ten more reads, then fails the test if any read so
// far failed.
func (r *alphaReader) readsMore(t *testing.T, during string) {
	t.Helper()
	n := r.reads.Load()
	eventually(t, convergeTimeout, "reads after "+during, func(context.Context) (bool, error) {
		return r.reads.Load() > n+10, nil
	})
	if f := r.failed.Load(); f != 0 {
		t.Errorf("%d of %d v1alpha1 reads failed %s; the last: %v", f, r.reads.Load(), during, r.lastErr.Load())
	}
}

// foreignCA makes a CA the controller never saw, as PEM.
func foreignCA(t *testing.T, name string) (*x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// certsOf parses a PEM bundle.
func certsOf(t *testing.T, bundle []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

// subjects names each certificate by its subject's common name.
func subjects(certs []*x509.Certificate) []string {
	out := make([]string, 0, len(certs))
	for _, c := range certs {
		out = append(out, c.Subject.CommonName)
	}
	return out
}

// crdCABundle is the Foo CRD's caBundle, decoded.
func crdCABundle(ctx context.Context, t *testing.T) ([]byte, error) {
	crd, err := crds(t).Get(ctx, samplecontroller.FooCRDName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	encoded, _, _ := unstructured.NestedString(crd.Object, caBundlePath...)
	return base64.StdEncoding.DecodeString(encoded)
}

// foreignCAGauge is samplecontroller_webhook_foreign_cas of c.
func foreignCAGauge(ctx context.Context, c *framework.Controller) (float64, error) {
	samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
	if err != nil {
		return 0, err
	}
	return framework.Sum(samples, "samplecontroller_webhook_foreign_cas", func(map[string]string) bool { return true }), nil
}

// secretEvents are the events on the Secret ns/name with reason.
func secretEvents(ctx context.Context, ns, name, reason string) ([]corev1.Event, error) {
	list, err := cluster.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "Secret", "involvedObject.name": name, "reason": reason}.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// A CA appended by hand to trusted.crt never reaches the caBundle: the
// controller reports it once, with a Warning event on the Secret and
// samplecontroller_webhook_foreign_cas, and reads go on. A CA put in the
// caBundle and the Secret then deleted: the Secret made again trusts the
// controller's CAs, not that one, and the caBundle follows.
func TestForeignCANeverReachesTheCABundle(t *testing.T) {
	ns, secretName, c, signer, reader := startControllerWithItsOwnCA(t, "foreign-ca")
	secrets := cluster.Kube.CoreV1().Secrets(ns)
	ctx := context.Background()

	planted, plantedPEM := foreignCA(t, "planted-in-the-secret")
	secret, err := secrets.Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data["trusted.crt"] = slices.Concat(secret.Data["trusted.crt"], plantedPEM)
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, convergeTimeout, "the Warning event and the metric", func(ctx context.Context) (bool, error) {
		events, err := secretEvents(ctx, ns, secretName, certauthority.ReasonForeignCA)
		if err != nil || len(events) == 0 {
			return false, err
		}
		gauge, err := foreignCAGauge(ctx, c)
		if err != nil || gauge != 1 {
			return false, fmt.Errorf("samplecontroller_webhook_foreign_cas %v, want 1 (%v)", gauge, err)
		}
		return true, nil
	})
	// More reconciles: two more changes of the Secret.
	for i := range 2 {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e-touch":"%d"}}}`, i)
		if _, err := secrets.Patch(ctx, secretName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reader.readsMore(t, "with a foreign CA in the Secret")
	events, err := secretEvents(ctx, ns, secretName, certauthority.ReasonForeignCA)
	if err != nil {
		t.Fatal(err)
	}
	wantMessage := fmt.Sprintf("trusted.crt holds CA %q (SHA-256 %x), which the signing CA did not endorse: it is "+
		"left out of the caBundle of CRD %s. Someone other than the controller wrote it; remove it from the Secret.",
		planted.Subject.String(), sha256Of(planted), samplecontroller.FooCRDName)
	if len(events) != 1 || events[0].Type != corev1.EventTypeWarning || events[0].Count != 1 ||
		events[0].Message != wantMessage {
		t.Errorf("events on the Secret: %s\nwant one Warning, once: %s", describeEvents(events), wantMessage)
	}
	bundle, err := crdCABundle(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	if got := subjects(certsOf(t, bundle)); !slices.Equal(got, []string{signer.Subject.CommonName}) {
		t.Errorf("caBundle holds %q, want the signing CA %s alone", got, signer.Subject.CommonName)
	}

	// The caBundle patched to trust another CA, and the Secret deleted.
	other, otherPEM := foreignCA(t, "planted-in-the-cabundle")
	patch := fmt.Sprintf(`{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":%q}}}}}`,
		base64.StdEncoding.EncodeToString(slices.Concat(bundle, otherPEM)))
	if _, err := crds(t).Patch(ctx, samplecontroller.FooCRDName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := secrets.Delete(ctx, secretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var trusted []byte
	eventually(t, convergeTimeout, "the Secret made again and the caBundle equal to its trusted.crt",
		func(ctx context.Context) (bool, error) {
			s, err := secrets.Get(ctx, secretName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, err
			}
			if err != nil {
				return false, err
			}
			trusted = s.Data["trusted.crt"]
			bundle, err := crdCABundle(ctx, t)
			if err != nil || !bytes.Equal(bundle, trusted) {
				return false, fmt.Errorf("caBundle %q, trusted.crt %q (%v)", subjects(certsOf(t, bundle)),
					subjects(certsOf(t, trusted)), err)
			}
			return true, nil
		})
	next := caOf(t, ns, secretName)
	if got, want := subjects(certsOf(t, trusted)), []string{next.Subject.CommonName, signer.Subject.CommonName}; next.Equal(signer) ||
		!slices.Equal(got, want) {
		t.Errorf("trusted.crt of the Secret made again holds %q, want a new CA then the one before, %q", got, want)
	}
	for _, c := range certsOf(t, trusted) {
		if c.Equal(other) || c.Equal(planted) {
			t.Errorf("trusted.crt holds the planted CA %s", c.Subject.CommonName)
		}
	}
	eventually(t, convergeTimeout, "samplecontroller_webhook_foreign_cas 0", func(ctx context.Context) (bool, error) {
		gauge, err := foreignCAGauge(ctx, c)
		return err == nil && gauge == 0, err
	})
	reader.readsMore(t, "with the Secret deleted and a foreign CA in the caBundle")
}

// Revoke-now, with two replicas serving the webhook and a reader in
// v1alpha1 every 200 ms: one annotation, as docs/operations.md gives it,
// and afterwards the caBundle holds the new CA alone, both replicas serve
// certificates it signed, and no read failed.
func TestRevokeNowMovesEveryReplicaWithoutAFailedRead(t *testing.T) {
	ns := newNamespace(t, "revoke-ca")
	ensureStandardCRD(t)
	secretName := "revoked-ca"
	args := []string{"-namespace=" + ns, "-leader-elect=true", "-leader-elect-namespace=" + ns,
		"-leader-elect-id=revoke", "-webhook-namespace=" + ns, "-webhook-ca-secret=" + secretName}
	a, b := startController(t, "replica-a", args...), startController(t, "replica-b", args...)
	waitControllerReady(t, a)
	waitControllerReady(t, b)
	foo := createFoo(t, newFoo(ns, "read", "read", int32p(1)))
	old := caOf(t, ns, secretName)
	reader := startAlphaReader(t, ns, foo.Name)
	reader.readsMore(t, "before the revocation")

	request := time.Now().UTC().Format(time.RFC3339)
	kubectl(t, "annotate", "secret", secretName, "-n", ns, certauthority.RevokeAnnotation+"="+request, "--overwrite")

	// The replicas' own work: settle (15 s) and the grace of 60 s after
	// the new caBundle is seen; the wait allows for a slow machine.
	eventually(t, 3*time.Minute, "the old CA dropped and both replicas moved", func(ctx context.Context) (bool, error) {
		s, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got := s.Annotations[certauthority.RevokedAnnotation]; got != request {
			return false, fmt.Errorf("%s is %q, want %q", certauthority.RevokedAnnotation, got, request)
		}
		next := caOf(t, ns, secretName)
		trusted := certsOf(t, s.Data["trusted.crt"])
		if len(trusted) != 1 || !trusted[0].Equal(next) || next.Equal(old) {
			return false, fmt.Errorf("trusted.crt holds %q, want the new CA alone", subjects(trusted))
		}
		bundle, err := crdCABundle(ctx, t)
		if err != nil || !bytes.Equal(bundle, s.Data["trusted.crt"]) {
			return false, fmt.Errorf("caBundle holds %q, want trusted.crt (%v)", subjects(certsOf(t, bundle)), err)
		}
		for _, c := range []*framework.Controller{a, b} {
			served, err := servedIssuer(c)
			if err != nil || served != next.Subject.String() {
				return false, fmt.Errorf("%s serves a certificate of %q, want %q (%v)", c.Name, served, next.Subject, err)
			}
		}
		return true, nil
	})
	if _, ok := mustSecret(t, ns, secretName).Annotations[certauthority.RevokingAnnotation]; ok {
		t.Errorf("%s left on the Secret after the revocation", certauthority.RevokingAnnotation)
	}
	reader.readsMore(t, "through the revocation")
	if !strings.Contains(a.Log()+b.Log(), "Revoked every conversion webhook CA but the signing one") {
		t.Error("neither replica logged the revocation")
	}
}

func mustSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s, err := cluster.Kube.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sha256Of(c *x509.Certificate) []byte {
	sum := sha256.Sum256(c.Raw)
	return sum[:]
}

// A signing CA swapped into the Secret that the controller could not have
// made (an RSA 1024-bit key, under the controller's own subject) is
// refused: a Warning event RefusedCA and samplecontroller_webhook_refused_cas
// report it, the caBundle keeps the CA it had, and reads go on. Revoke-now
// replaces it by a CA of the controller's.
func TestSwappedWeakCAIsRefusedAndKeptOutOfTheCABundle(t *testing.T) {
	ns, secretName, c, signer, reader := startControllerWithItsOwnCA(t, "swapped-ca")
	secrets := cluster.Kube.CoreV1().Secrets(ns)
	ctx := context.Background()
	bundle, err := crdCABundle(ctx, t)
	if err != nil {
		t.Fatal(err)
	}

	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: fmt.Sprintf("sample-controller-webhook-ca@%d", time.Now().Unix())},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	swapped, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	swappedPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	secret, err := secrets.Get(ctx, secretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data = map[string][]byte{"ca.crt": swappedPEM, "ca.key": keyPEM, "trusted.crt": swappedPEM}
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, convergeTimeout, "the Warning event and the metric", func(ctx context.Context) (bool, error) {
		events, err := secretEvents(ctx, ns, secretName, certauthority.ReasonRefusedCA)
		if err != nil || len(events) == 0 {
			return false, err
		}
		samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
		if err != nil {
			return false, err
		}
		refused := framework.Sum(samples, "samplecontroller_webhook_refused_cas", func(l map[string]string) bool {
			return l["ca"] == "signing" && l["reason"] == "key"
		})
		all := framework.Sum(samples, "samplecontroller_webhook_refused_cas", func(map[string]string) bool { return true })
		if refused != 1 || all != 1 {
			return false, fmt.Errorf("samplecontroller_webhook_refused_cas %v signing/key, %v in all; want 1 and 1", refused, all)
		}
		return true, nil
	})
	reader.readsMore(t, "with a weak CA swapped into the Secret")
	events, err := secretEvents(ctx, ns, secretName, certauthority.ReasonRefusedCA)
	if err != nil {
		t.Fatal(err)
	}
	wantMessage := fmt.Sprintf("ca.crt holds CA %q (SHA-256 %x), which the controller could not have made: its key is "+
		"RSA 1024-bit, not ECDSA P-256. It is not trusted: the caBundle of CRD %s keeps the CAs it had, and nothing is "+
		"written. Find who wrote the Secret, then revoke the CA.",
		swapped.Subject.String(), sha256Of(swapped), samplecontroller.FooCRDName)
	if len(events) != 1 || events[0].Type != corev1.EventTypeWarning || events[0].Message != wantMessage {
		t.Errorf("events on the Secret: %s\nwant one Warning: %s", describeEvents(events), wantMessage)
	}
	if got, err := crdCABundle(ctx, t); err != nil || !bytes.Equal(got, bundle) {
		t.Errorf("caBundle holds %q, want the signing CA %s alone, as before (%v)", subjects(certsOf(t, got)),
			signer.Subject.CommonName, err)
	}

	request := time.Now().UTC().Format(time.RFC3339)
	kubectl(t, "annotate", "secret", secretName, "-n", ns, certauthority.RevokeAnnotation+"="+request, "--overwrite")
	eventually(t, 3*time.Minute, "the swapped CA replaced and the revocation done", func(ctx context.Context) (bool, error) {
		s, err := secrets.Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got := s.Annotations[certauthority.RevokedAnnotation]; got != request {
			return false, fmt.Errorf("%s is %q, want %q", certauthority.RevokedAnnotation, got, request)
		}
		next := caOf(t, ns, secretName)
		got, err := crdCABundle(ctx, t)
		if err != nil || next.Equal(swapped) || next.Equal(signer) || !bytes.Equal(got, s.Data["trusted.crt"]) ||
			len(certsOf(t, got)) != 1 {
			return false, fmt.Errorf("caBundle holds %q, want the new CA alone (%v)", subjects(certsOf(t, got)), err)
		}
		samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
		if err != nil {
			return false, err
		}
		if all := framework.Sum(samples, "samplecontroller_webhook_refused_cas", func(map[string]string) bool { return true }); all != 0 {
			return false, fmt.Errorf("samplecontroller_webhook_refused_cas %v, want 0", all)
		}
		return true, nil
	})
	reader.readsMore(t, "through the revocation of the swapped CA")
}
