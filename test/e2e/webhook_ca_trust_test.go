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
// caBundle, nor does a signing CA the controller could not have made; revoke-now moves every replica to a new CA and
// drops the old, without a failed read, and the CA it made renews under the same replicas.

import (
	"bytes"
	"context"
	"crypto"
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
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

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
// every readInterval until stopped, and counts the reads that failed.
type alphaReader struct {
	reads, failed atomic.Int64
	lastErr       atomic.Value
	stop, done    chan struct{}
}

// readInterval is the pause between two reads of an alphaReader: the
// shorter, the narrower a window of failing calls that could pass between
// two reads, and the sooner readsMore has its ten reads.
const readInterval = 100 * time.Millisecond

func startAlphaReader(t *testing.T, ns, name string) *alphaReader {
	t.Helper()
	r := &alphaReader{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			select {
			case <-r.stop:
				return
			case <-time.After(readInterval):
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
	return selfSignedCA(t, &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}, key)
}

// selfSignedCA signs template with key, and returns the certificate and
// its PEM.
func selfSignedCA(t *testing.T, template *x509.Certificate, key crypto.Signer) (*x509.Certificate, []byte) {
	t.Helper()
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
	wantOneWarning(t, ns, secretName, certauthority.ReasonForeignCA, fmt.Sprintf("trusted.crt holds CA %q "+
		"(SHA-256 %x), which the signing CA did not endorse: it is left out of the caBundle of CRD %s. Someone other "+
		"than the controller wrote it; remove it from the Secret.",
		planted.Subject.String(), sha256Of(planted), samplecontroller.FooCRDName))
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

// wantOneWarning fails t unless the Secret ns/name has one event of
// reason, a Warning reported once, that says message.
func wantOneWarning(t *testing.T, ns, name, reason, message string) {
	t.Helper()
	events, err := secretEvents(context.Background(), ns, name, reason)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Type != corev1.EventTypeWarning || events[0].Count != 1 ||
		events[0].Message != message {
		t.Errorf("events on the Secret: %s\nwant one Warning, once: %s", describeEvents(events), message)
	}
}

// refusedCAs is samplecontroller_webhook_refused_cas in samples, summed
// over the series that match.
func refusedCAs(samples []framework.Sample, match func(map[string]string) bool) float64 {
	return framework.Sum(samples, "samplecontroller_webhook_refused_cas", match)
}

// swapSigningCA rewrites the CA Secret name through secrets, as whoever
// may update it would: certPEM the signing CA, keyPEM its key, and certPEM
// alone trusted. as names the client's user for a failure.
func swapSigningCA(t *testing.T, secrets corev1client.SecretInterface, name, as string, certPEM, keyPEM []byte) {
	t.Helper()
	ctx := context.Background()
	secret, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the CA Secret as %s: %v", as, err)
	}
	secret.Data = map[string][]byte{"ca.crt": certPEM, "ca.key": keyPEM, "trusted.crt": certPEM}
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the swap as %s: %v", as, err)
	}
}

// waitRefusedSigningCA waits until the Secret ns/name has a Warning event
// RefusedCA and c's samplecontroller_webhook_refused_cas counts one CA in
// all: the signing one, refused for reason.
func waitRefusedSigningCA(t *testing.T, c *framework.Controller, ns, name, reason string) {
	t.Helper()
	eventually(t, convergeTimeout, "the Warning event and the metric", func(ctx context.Context) (bool, error) {
		events, err := secretEvents(ctx, ns, name, certauthority.ReasonRefusedCA)
		if err != nil || len(events) == 0 {
			return false, err
		}
		samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
		if err != nil {
			return false, err
		}
		refused := refusedCAs(samples, func(l map[string]string) bool {
			return l["ca"] == "signing" && l["reason"] == reason
		})
		all := refusedCAs(samples, func(map[string]string) bool { return true })
		if refused != 1 || all != 1 {
			return false, fmt.Errorf("samplecontroller_webhook_refused_cas %v signing/%s, %v in all; want 1 and 1",
				refused, reason, all)
		}
		return true, nil
	})
}

// revokeNow revokes every CA the caBundle of the Secret ns/name trusts, by
// the one annotation docs/operations.md gives, and returns its value.
func revokeNow(t *testing.T, ns, name string) string {
	t.Helper()
	request := time.Now().UTC().Format(time.RFC3339)
	kubectl(t, "annotate", "secret", name, "-n", ns, certauthority.RevokeAnnotation+"="+request, "--overwrite")
	return request
}

// waitRevoked waits until the revocation request of the Secret ns/name is
// done: the Secret marked revoked, its signing CA none of replaced,
// trusted.crt that CA alone, the caBundle equal to trusted.crt, and more
// (when not nil) holds of the Secret and that CA; then the Secret must no longer be
// marked revoking. It returns the signing CA.
func waitRevoked(t *testing.T, ns, name, request, what string, replaced []*x509.Certificate,
	more func(context.Context, *corev1.Secret, *x509.Certificate) error) *x509.Certificate {
	t.Helper()
	var next *x509.Certificate
	// The replicas' own work: the settle (15 s) and the grace of 60 s
	// after the new caBundle is seen; the wait allows for a slow machine.
	eventually(t, 3*time.Minute, what, func(ctx context.Context) (bool, error) {
		s, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got := s.Annotations[certauthority.RevokedAnnotation]; got != request {
			return false, fmt.Errorf("%s is %q, want %q", certauthority.RevokedAnnotation, got, request)
		}
		signing := certsOf(t, s.Data["ca.crt"])
		if len(signing) != 1 {
			return false, fmt.Errorf("ca.crt holds %q, want one CA", subjects(signing))
		}
		for _, r := range replaced {
			if signing[0].Equal(r) {
				return false, fmt.Errorf("the signing CA is still %s", r.Subject.CommonName)
			}
		}
		if trusted := certsOf(t, s.Data["trusted.crt"]); len(trusted) != 1 || !trusted[0].Equal(signing[0]) {
			return false, fmt.Errorf("trusted.crt holds %q, want the new CA alone", subjects(trusted))
		}
		bundle, err := crdCABundle(ctx, t)
		if err != nil || !bytes.Equal(bundle, s.Data["trusted.crt"]) {
			return false, fmt.Errorf("caBundle holds %q, want trusted.crt (%v)", subjects(certsOf(t, bundle)), err)
		}
		if more != nil {
			if err := more(ctx, s, signing[0]); err != nil {
				return false, err
			}
		}
		next = signing[0]
		return true, nil
	})
	if _, ok := mustSecret(t, ns, name).Annotations[certauthority.RevokingAnnotation]; ok {
		t.Errorf("%s left on the Secret after the revocation", certauthority.RevokingAnnotation)
	}
	return next
}

// renewingCAValidity is the CA and serving certificate validity of the
// replicas of TestWebhookCARevokedThenRenewedUnderTwoReplicasWithoutAFailedRead.
// A CA renews two thirds into its life: the one the revocation makes must
// renew after the revocation has dropped the old, the grace of 60 s after
// the new caBundle is seen, and each second beyond is waited for. The
// renewal coming first would not make either proof pass untrue, only
// later: the revocation would then finish on the renewed CA, and the
// renewal proven would be the next one.
const renewingCAValidity = 105 * time.Second

// Two replicas serve the webhook and a reader in v1alpha1 reads throughout.
// Revoke-now, one annotation as docs/operations.md gives it: afterwards the
// caBundle holds the new CA alone, both replicas serve certificates it
// signed, and no read failed. Then that CA, made to last
// renewingCAValidity, is renewed under the same replicas without a failed
// read: the CRD trusts the next CA before any replica serves a certificate
// it signed (pkg/certauthority), and both end up serving one.
func TestWebhookCARevokedThenRenewedUnderTwoReplicasWithoutAFailedRead(t *testing.T) {
	ns := newNamespace(t, "revoke-renew-ca")
	ensureStandardCRD(t)
	secretName := "revoked-then-renewed-ca"
	args := []string{"-namespace=" + ns, "-leader-elect=true", "-leader-elect-namespace=" + ns,
		"-leader-elect-id=revoke-renew", "-webhook-namespace=" + ns, "-webhook-ca-secret=" + secretName,
		"-webhook-ca-validity=" + renewingCAValidity.String(), "-webhook-cert-validity=" + renewingCAValidity.String()}
	a, b := startController(t, "replica-a", args...), startController(t, "replica-b", args...)
	waitControllerReady(t, a)
	waitControllerReady(t, b)
	foo := createFoo(t, newFoo(ns, "read", "read", int32p(1)))
	reader := startAlphaReader(t, ns, foo.Name)
	// bothServe is nil once both replicas serve a certificate of ca.
	bothServe := func(ca *x509.Certificate) error {
		for _, c := range []*framework.Controller{a, b} {
			served, err := servedIssuer(c)
			if err != nil || served != ca.Subject.String() {
				return fmt.Errorf("%s serves a certificate of %q, want %q (%v)", c.Name, served, ca.Subject, err)
			}
		}
		return nil
	}

	var revokedTo *x509.Certificate
	if !t.Run("RevokeNowMovesEveryReplicaWithoutAFailedRead", func(t *testing.T) {
		old := caOf(t, ns, secretName)
		reader.readsMore(t, "before the revocation")
		request := revokeNow(t, ns, secretName)
		revokedTo = waitRevoked(t, ns, secretName, request, "the old CA dropped and both replicas moved",
			[]*x509.Certificate{old}, func(_ context.Context, _ *corev1.Secret, next *x509.Certificate) error {
				return bothServe(next)
			})
		reader.readsMore(t, "through the revocation")
		if !strings.Contains(a.Log()+b.Log(), "Revoked every conversion webhook CA but the signing one") {
			t.Error("neither replica logged the revocation")
		}
	}) {
		t.Fatal("the revocation failed: the renewal of the CA it makes is not tried")
	}

	t.Run("WebhookCARenewsWithoutAFailedRead", func(t *testing.T) {
		if revokedTo == nil {
			t.Fatal("the CA renewed is the one the revocation makes: run the subtest before this one too")
		}
		// The renewal is the controller's own work, due two thirds into
		// the CA's life, and the settle after; the wait allows for a slow
		// machine on top.
		eventually(t, 3*time.Minute, "both replicas serving a certificate of the next CA",
			func(context.Context) (bool, error) {
				next := caOf(t, ns, secretName)
				if next.Equal(revokedTo) {
					return false, fmt.Errorf("the CA is still the one the revocation made")
				}
				err := bothServe(next)
				return err == nil, err
			})
		reader.readsMore(t, "through the CA renewal")
	})
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
	bundle, err := crdCABundle(context.Background(), t)
	if err != nil {
		t.Fatal(err)
	}

	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	swapped, swappedPEM := selfSignedCA(t, &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: fmt.Sprintf("sample-controller-webhook-ca@%d", time.Now().Unix())},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}, key)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	swapSigningCA(t, cluster.Kube.CoreV1().Secrets(ns), secretName, "the suite's admin", swappedPEM, keyPEM)
	waitRefusedSigningCA(t, c, ns, secretName, "key")
	reader.readsMore(t, "with a weak CA swapped into the Secret")
	wantOneWarning(t, ns, secretName, certauthority.ReasonRefusedCA, fmt.Sprintf("ca.crt holds CA %q (SHA-256 %x), "+
		"which the controller could not have made: its key is RSA 1024-bit, not ECDSA P-256. It is not trusted: the "+
		"caBundle of CRD %s keeps the CAs it had, and nothing is written. Find who wrote the Secret, then revoke the CA.",
		swapped.Subject.String(), sha256Of(swapped), samplecontroller.FooCRDName))
	if got, err := crdCABundle(context.Background(), t); err != nil || !bytes.Equal(got, bundle) {
		t.Errorf("caBundle holds %q, want the signing CA %s alone, as before (%v)", subjects(certsOf(t, got)),
			signer.Subject.CommonName, err)
	}

	request := revokeNow(t, ns, secretName)
	waitRevoked(t, ns, secretName, request, "the swapped CA replaced and the revocation done",
		[]*x509.Certificate{swapped, signer}, func(ctx context.Context, _ *corev1.Secret, _ *x509.Certificate) error {
			samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
			if err != nil {
				return err
			}
			if all := refusedCAs(samples, func(map[string]string) bool { return true }); all != 0 {
				return fmt.Errorf("samplecontroller_webhook_refused_cas %v, want 0", all)
			}
			return nil
		})
	reader.readsMore(t, "through the revocation of the swapped CA")
}
