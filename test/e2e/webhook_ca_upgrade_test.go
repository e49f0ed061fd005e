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

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/certauthority"
	"github.com/kube-samples/sample-controller/test/framework"
)

// The upgrade from a release whose default CA validity was ten years, as a
// Deployment rolls it: a replica of that default makes a ten-year CA and
// serves it, a replica of this release's default (a year) starts beside it,
// and once it is ready the first stops; a reader in v1alpha1 reads through
// the webhook throughout. The new replica, which holds no CA in memory,
// trusts the ten-year CA and rotates it at once to one of a year, endorsed
// by it in ca.sig and trusted beside it; the old replica takes the new CA,
// as the CA it trusts endorsed it, and moves to it. Once both serve it, the
// ten-year CA leaves trusted.crt and the caBundle, while the old replica
// still runs. No read fails, and nothing is refused.
func TestUpgradeRotatesTheTenYearWebhookCAWithoutAFailedRead(t *testing.T) {
	ns := newNamespace(t, "ca-upgrade")
	ensureStandardCRD(t)
	secretName := "upgraded-ca"
	args := func(extra ...string) []string {
		return append([]string{"-namespace=" + ns, "-leader-elect=true", "-leader-elect-namespace=" + ns,
			"-leader-elect-id=ca-upgrade", "-webhook-namespace=" + ns, "-webhook-ca-secret=" + secretName}, extra...)
	}
	previous := startController(t, "previous", args("-webhook-ca-validity="+certauthority.LegacyCAValidity.String())...)
	waitControllerReady(t, previous)
	old := caOf(t, ns, secretName)
	if got := old.NotAfter.Sub(old.NotBefore); got != 87601*time.Hour {
		t.Fatalf("the earlier default made a CA valid for %s, want 87600h and the hour's backdate", got)
	}
	reader := startAlphaReader(t, ns, createFoo(t, newFoo(ns, "read", "read", int32p(1))).Name)
	reader.readsMore(t, "before the upgrade")

	upgraded := startController(t, "upgraded", args()...)
	waitControllerReady(t, upgraded)
	var next *x509.Certificate
	eventually(t, 2*time.Minute, "the ten-year CA rotated", func(ctx context.Context) (bool, error) {
		next = caOf(t, ns, secretName)
		if next.Equal(old) {
			return false, fmt.Errorf("the signing CA is still the ten-year one")
		}
		if got := next.NotAfter.Sub(next.NotBefore); got != certauthority.DefaultCAValidity+time.Hour {
			return false, fmt.Errorf("the next CA is valid for %s, want a year and the hour's backdate", got)
		}
		s, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		block, rest := pem.Decode(s.Data["ca.sig"])
		if block == nil || len(bytes.TrimSpace(rest)) != 0 || block.Type != "CA SUCCESSION" ||
			block.Headers["Endorser-SHA256"] != hex.EncodeToString(sha256Of(old)) {
			return false, fmt.Errorf("ca.sig %q, want one endorsement by the ten-year CA", s.Data["ca.sig"])
		}
		return true, nil
	})
	// Both replicas move in a settle, and the ten-year CA is dropped
	// revokeGrace (a minute) after that.
	eventually(t, 3*time.Minute, "both replicas serving the next CA, the ten-year one dropped", func(ctx context.Context) (bool, error) {
		s, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if trusted := certsOf(t, s.Data["trusted.crt"]); len(trusted) != 1 || !trusted[0].Equal(next) {
			return false, fmt.Errorf("trusted.crt holds %q, want the next CA alone", subjects(trusted))
		}
		if bundle, err := crdCABundle(ctx, t); err != nil || !bytes.Equal(bundle, s.Data["trusted.crt"]) {
			return false, fmt.Errorf("caBundle holds %q, want trusted.crt (%v)", subjects(certsOf(t, bundle)), err)
		}
		for _, c := range []*framework.Controller{previous, upgraded} {
			if served, err := servedIssuer(c); err != nil || served != next.Subject.String() {
				return false, fmt.Errorf("%s serves a certificate of %q, want %q (%v)", c.Name, served, next.Subject, err)
			}
		}
		return true, nil
	})
	reader.readsMore(t, "through the rotation and the drop")

	// The rolling update ends.
	if err := previous.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if exited := <-waitExit(previous, terminationGracePeriod); exited.err != nil || exited.code != 0 {
		t.Errorf("%s after SIGTERM: exit %d, %v", previous.Name, exited.code, exited.err)
	}
	reader.readsMore(t, "after the earlier replica stopped")
	samples, err := framework.ScrapeURL(context.Background(), upgraded.MetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	if refused := framework.Sum(samples, "samplecontroller_webhook_refused_cas",
		func(map[string]string) bool { return true }); refused != 0 {
		t.Errorf("samplecontroller_webhook_refused_cas %v in all, want 0", refused)
	}
	if !strings.Contains(upgraded.Log(), "Rotating a CA valid for longer than the CA validity, as an earlier release made it") {
		t.Errorf("%s did not log the rotation of the ten-year CA", upgraded.Name)
	}
	if !strings.Contains(previous.Log()+upgraded.Log(), "Dropped the CAs valid for longer than the CA validity") {
		t.Error("no replica logged the drop of the ten-year CA")
	}
	if strings.Contains(previous.Log()+upgraded.Log(), "Refusing a CA") {
		t.Error("a replica refused a CA")
	}
}
