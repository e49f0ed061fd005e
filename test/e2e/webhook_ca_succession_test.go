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

// A signing CA of the controller's own kind, planted in the CA Secret by the
// holder of the controller's token, is refused for want of an endorsement
// by a CA the replica trusts (pkg/certauthority, ca.sig): it never reaches
// the caBundle, and the shipped alert fires on a real Prometheus.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/certauthority"
	"github.com/kube-samples/sample-controller/test/framework"
)

// plantedCA makes the CA whoever holds the controller's token would swap in
// to pass for the controller's: an ECDSA P-256 key, the subject
// CN=sample-controller-webhook-ca@<Unix time>, self-signed, valid from an
// hour ago for ten years and that hour, as an earlier release made its CAs:
// the one lifetime beyond the CA validity that a replica with no CA yet
// takes from a Secret with no ca.sig, to rotate it at once. It returns it,
// its PEM and its key's.
func plantedCA(t *testing.T) (*x509.Certificate, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: fmt.Sprintf("sample-controller-webhook-ca@%d", now.Unix())},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(certauthority.LegacyCAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
	}
	c, certPEM := selfSignedCA(t, template, key)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return c, certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// watchCABundles records every caBundle the Foo CRD holds from now until
// the test ends; the returned function gives those seen so far, decoded.
func watchCABundles(t *testing.T) func() [][]byte {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := crds(t).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", samplecontroller.FooCRDName).String()})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen [][]byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			crd, ok := e.Object.(*unstructured.Unstructured)
			if !ok || (e.Type != watch.Added && e.Type != watch.Modified) {
				continue
			}
			encoded, _, _ := unstructured.NestedString(crd.Object, caBundlePath...)
			bundle, _ := base64.StdEncoding.DecodeString(encoded)
			mu.Lock()
			seen = append(seen, bundle)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), seen...)
	}
}

// The deployed ServiceAccount's token, under the shipped RBAC and
// policies, may rewrite the CA Secret: it swaps in a CA of the controller's
// own kind (P-256, its subject, an earlier release's ten years) and key, and
// the update is admitted. The controller, running with that token too,
// refuses it: no CA it trusts endorsed it, and the ten years make it no
// earlier release's CA to a replica that trusts one already. One Warning RefusedCA says so, the metric counts it
// (ca signing, reason unendorsed), SampleControllerWebhookCAUntrusted fires
// on a Prometheus running the shipped job and rules, the caBundle never
// holds the planted CA, and reads through the webhook go on. Revoke-now
// replaces it by a CA of the controller's, endorsed by the one it had, and
// the alert resolves.
func TestPlantedCAOfTheControllersKindNeverReachesTheCABundleAndTheAlertFires(t *testing.T) {
	if _, err := os.Stat(filepath.Join(cluster.Root, "_output", "bin", "prometheus")); err != nil {
		t.Fatalf("%v: run make tools (it builds Prometheus from hack/tools/prometheus)", err)
	}
	ensureStandardCRD(t)
	applyDeployArtifacts(t)
	ctx := context.Background()
	kubeconfig := serviceAccountKubeconfig(t, deployNamespace, deployServiceAccount)
	saKube := kubeClientFor(t, kubeconfig)
	waitCRDWritePolicyInForce(t, crdsAs(t, kubeconfig))
	waitOwnNamespacePolicyInForce(t, saKube)
	waitOwnNamesPolicyInForce(t, saKube)
	waitOwnEventsPolicyInForce(t, saKube)

	// The controller as deployed: its token, and its CA Secret in its
	// namespace, the one its Role names.
	ns := newNamespace(t, "planted-ca")
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := startController(t, "controller", controllerArgs(ns, "-kubeconfig="+kubeconfig,
		"-webhook-namespace="+deployNamespace, "-metrics-bind-address="+addr)...)
	waitControllerReady(t, c)
	secretName := samplecontroller.WebhookCASecretName
	signer := caOf(t, deployNamespace, secretName)
	prom, _ := startShippedPrometheus(t, c, addr, deployNamespace)
	reader := startAlphaReader(t, ns, createFoo(t, newFoo(ns, "read", "read", int32p(1))).Name)
	reader.readsMore(t, "before the swap")
	bundle, err := crdCABundle(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	bundles := watchCABundles(t)

	planted, plantedPEM, plantedKeyPEM := plantedCA(t)
	swapSigningCA(t, saKube.CoreV1().Secrets(deployNamespace), secretName,
		deployServiceAccount+" (which RBAC and the policies admit)", plantedPEM, plantedKeyPEM)
	waitRefusedSigningCA(t, c, deployNamespace, secretName, "unendorsed")
	t.Run("the alert fires", func(t *testing.T) {
		a := waitAlert(t, prom, "SampleControllerWebhookCAUntrusted", map[string]string{"namespace": deployNamespace}, "firing")
		if a.Value != "1e+00" && a.Value != "1" {
			t.Errorf("value %s, want 1: one CA refused", a.Value)
		}
	})
	reader.readsMore(t, "with a planted CA in the Secret")
	wantOneWarning(t, deployNamespace, secretName, certauthority.ReasonRefusedCA, fmt.Sprintf("ca.crt holds CA %q "+
		"(SHA-256 %x), which the controller could not have made: no CA this replica trusts endorsed it in ca.sig, as a "+
		"replica that makes a CA does. It is not trusted: the caBundle of CRD %s keeps the CAs it had, and nothing is "+
		"written. Find who wrote the Secret, then revoke the CA.",
		planted.Subject.String(), sha256Of(planted), samplecontroller.FooCRDName))
	if got, err := crdCABundle(ctx, t); err != nil || !bytes.Equal(got, bundle) {
		t.Errorf("caBundle holds %q, want the signing CA %s alone, as before (%v)", subjects(certsOf(t, got)),
			signer.Subject.CommonName, err)
	}

	// Revoke-now, as docs/api-versions.md gives it.
	request := revokeNow(t, deployNamespace, secretName)
	waitRevoked(t, deployNamespace, secretName, request, "the planted CA replaced and the revocation done",
		[]*x509.Certificate{planted, signer}, func(_ context.Context, s *corev1.Secret, next *x509.Certificate) error {
			if len(s.Data["ca.sig"]) == 0 {
				return fmt.Errorf("the new CA %s has no ca.sig: nothing endorsed it", next.Subject.CommonName)
			}
			return nil
		})
	t.Run("the alert resolves", func(t *testing.T) {
		waitAlert(t, prom, "SampleControllerWebhookCAUntrusted", map[string]string{"namespace": deployNamespace}, "")
	})
	reader.readsMore(t, "through the revocation of the planted CA")
	for _, seen := range bundles() {
		for _, ca := range certsOf(t, seen) {
			if ca.Equal(planted) {
				t.Fatalf("the caBundle held the planted CA: %q", subjects(certsOf(t, seen)))
			}
		}
	}
}
