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

// Two versions of the Foo API served at once: v1beta1, which etcd stores and
// the controller speaks, and v1alpha1, deprecated, converted by the
// controller's webhook (pkg/conversionwebhook) on every read and write in it.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// deprecationWarning is what kubectl prints for every request in v1alpha1:
// the CRD's deprecationWarning, from the marker on the v1alpha1 type.
const deprecationWarning = "Warning: samplecontroller.k8s.io/v1alpha1 Foo is deprecated; use samplecontroller.k8s.io/v1beta1"

// alphaFoos is the v1alpha1 client of a namespace's Foos.
func alphaFoos(ns string) interface {
	Create(context.Context, *samplev1alpha1.Foo, metav1.CreateOptions) (*samplev1alpha1.Foo, error)
	Get(context.Context, string, metav1.GetOptions) (*samplev1alpha1.Foo, error)
	Update(context.Context, *samplev1alpha1.Foo, metav1.UpdateOptions) (*samplev1alpha1.Foo, error)
	Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*samplev1alpha1.Foo, error)
} {
	return cluster.Sample.SamplecontrollerV1alpha1().Foos(ns)
}

// A Foo created in either version is read, updated and patched in the
// other, by the generated clients and by kubectl, with nothing lost: labels,
// annotations, spec and the status the controller wrote.
func TestFooIsReadAndWrittenInEitherVersion(t *testing.T) {
	ns := newNamespace(t, "versions")
	ensureStandardCRD(t)
	c := startController(t, "controller", controllerArgs(ns)...)
	waitControllerReady(t, c)
	ctx := context.Background()
	beta := cluster.Sample.SamplecontrollerV1beta1().Foos(ns)

	// Created in v1alpha1, read in v1beta1.
	_, err := alphaFoos(ns).Create(ctx, &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: "from-alpha", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"note": "kept"}},
		Spec: samplev1alpha1.FooSpec{DeploymentName: "alpha-web", Replicas: int32p(2)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fromAlpha := waitFooReady(t, ns, "from-alpha")
	if fromAlpha.Spec.Deployment.Name != "alpha-web" || specReplicas(fromAlpha) != 2 ||
		fromAlpha.Labels["team"] != "a" || fromAlpha.Annotations["note"] != "kept" {
		t.Errorf("read in v1beta1: %s, labels %v, annotations %v", describeFoo(fromAlpha), fromAlpha.Labels, fromAlpha.Annotations)
	}
	waitManagedDeployment(t, ns, "alpha-web", fromAlpha)

	// Created in v1beta1, read in v1alpha1, status included.
	createFoo(t, newFoo(ns, "from-beta", "beta-web", int32p(1)))
	waitFooReady(t, ns, "from-beta")
	old, err := alphaFoos(ns).Get(ctx, "from-beta", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := metav1.Condition{}
	for _, c := range old.Status.Conditions {
		if c.Type == samplecontroller.ConditionReady {
			ready = c
		}
	}
	if old.Spec.DeploymentName != "beta-web" || ptrInt(old.Spec.Replicas) != 1 || ready.Status != metav1.ConditionTrue ||
		old.Status.AvailableReplicas != 1 {
		t.Errorf("read in v1alpha1: spec %+v (replicas %d), status %+v", old.Spec, ptrInt(old.Spec.Replicas), old.Status)
	}

	// Updated in v1alpha1: the controller, which reads v1beta1, scales.
	old.Spec.Replicas = int32p(3)
	if _, err := alphaFoos(ns).Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFoo(t, ns, "from-beta", "3 available replicas", func(f *samplev1beta1.Foo) bool {
		return specReplicas(f) == 3 && f.Status.AvailableReplicas == 3 && isReady(f)
	})

	// Patched in v1beta1, read in v1alpha1: the Deployment moves.
	if _, err := beta.Patch(ctx, "from-alpha", types.MergePatchType,
		[]byte(`{"spec":{"deployment":{"name":"alpha-web-2"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	moved, err := alphaFoos(ns).Get(ctx, "from-alpha", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if moved.Spec.DeploymentName != "alpha-web-2" || moved.Labels["team"] != "a" || moved.Annotations["note"] != "kept" {
		t.Errorf("read in v1alpha1 after a v1beta1 patch: spec %+v, labels %v, annotations %v", moved.Spec, moved.Labels, moved.Annotations)
	}
	waitManagedDeployment(t, ns, "alpha-web-2", getFoo(t, ns, "from-alpha"))
	waitDeploymentGone(t, ns, "alpha-web")

	// Patched in v1alpha1 (a JSON merge patch of the old field).
	if _, err := alphaFoos(ns).Patch(ctx, "from-alpha", types.MergePatchType,
		[]byte(`{"spec":{"deploymentName":"alpha-web-3"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := getFoo(t, ns, "from-alpha").Spec.Deployment.Name; got != "alpha-web-3" {
		t.Errorf("after a v1alpha1 patch, spec.deployment.name is %q, want alpha-web-3", got)
	}

	// kubectl, in v1alpha1 by the resource's full name: the deprecation
	// warning on every request, and the fields of the old shape.
	manifest := fmt.Sprintf("apiVersion: samplecontroller.k8s.io/v1alpha1\nkind: Foo\nmetadata:\n  name: by-kubectl\n"+
		"  namespace: %s\nspec:\n  deploymentName: kubectl-web\n  replicas: 2\n", ns)
	out, err := cluster.Kubectl(manifest, "apply", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, deprecationWarning) {
		t.Errorf("kubectl apply of a v1alpha1 Foo printed no deprecation warning:\n%s", out)
	}
	if got := getFoo(t, ns, "by-kubectl").Spec.Deployment.Name; got != "kubectl-web" {
		t.Errorf("applied in v1alpha1, spec.deployment.name reads %q in v1beta1, want kubectl-web", got)
	}
	out = kubectl(t, "get", "foos.v1alpha1."+samplecontroller.GroupName, "from-beta", "-n", ns,
		"-o", "jsonpath={.spec.deploymentName}/{.spec.replicas}")
	if !strings.Contains(out, "beta-web/3") || !strings.Contains(out, deprecationWarning) {
		t.Errorf("kubectl get in v1alpha1: %q, want beta-web/3 and the deprecation warning", out)
	}
	out = kubectl(t, "get", "foos."+samplecontroller.GroupName, "by-kubectl", "-n", ns,
		"-o", "jsonpath={.apiVersion} {.spec.deployment.name}")
	if strings.TrimSpace(out) != "samplecontroller.k8s.io/v1beta1 kubectl-web" {
		t.Errorf("kubectl get in the preferred version: %q, want v1beta1 and kubectl-web", out)
	}
	waitFooReady(t, ns, "by-kubectl")
}

func ptrInt(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

// With no replica serving the webhook, what needs no conversion goes on (the
// controller reads and writes v1beta1, what etcd stores), and what does is
// refused with an error that names the conversion webhook; nothing is
// written half. Once a replica serves again, v1alpha1 works again, and the
// Foo and its Deployment are as they were: not re-created, not written twice.
func TestWebhookDownRefusesOnlyTheOtherVersionAndLosesNothing(t *testing.T) {
	ns := newNamespace(t, "webhook-down")
	ensureStandardCRD(t)
	c := startController(t, "controller", controllerArgs(ns)...)
	waitControllerReady(t, c)
	ctx := context.Background()
	foo := createFoo(t, newFoo(ns, "kept", "kept", int32p(1)))
	foo = waitFooReady(t, ns, foo.Name)
	before := waitManagedDeployment(t, ns, "kept", foo)
	if _, err := alphaFoos(ns).Get(ctx, foo.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("v1alpha1 read with the webhook up: %v", err)
	}

	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(time.Minute); err != nil {
		t.Fatal(err)
	}

	// The stored version needs no webhook.
	if _, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("v1beta1 list with the webhook down: %v", err)
	}
	updateFoo(t, ns, foo.Name, func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(2) })

	// The other version: a read, a list and a write, each refused. The
	// API server names the conversion webhook and the version it converts
	// from (v1beta1 for a read, v1alpha1 for a write), then why.
	names := func(err string) bool {
		return strings.Contains(err, "conversion webhook for samplecontroller.k8s.io/") &&
			strings.Contains(err, ", Kind=Foo failed")
	}
	_, getErr := alphaFoos(ns).Get(ctx, foo.Name, metav1.GetOptions{})
	_, listErr := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{})
	_, createErr := alphaFoos(ns).Create(ctx, &samplev1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Name: "not-made"},
		Spec: samplev1alpha1.FooSpec{DeploymentName: "not-made"}}, metav1.CreateOptions{})
	for what, err := range map[string]error{"get": getErr, "list": listErr, "create": createErr} {
		if err == nil || !names(err.Error()) {
			t.Errorf("v1alpha1 %s with the webhook down: %v, want an error naming the conversion webhook", what, err)
		}
	}
	out := kubectlFails(t, "", "get", "foos.v1alpha1."+samplecontroller.GroupName, "-n", ns)
	if !names(out) {
		t.Errorf("kubectl get in v1alpha1 with the webhook down:\n%s\nwant it to name the conversion webhook", out)
	}
	if _, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Get(ctx, "not-made", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Foo created in v1alpha1 with the webhook down: %v, want NotFound", err)
	}

	// Back: v1alpha1 is served again, and the change made meanwhile is
	// carried out on the same Deployment.
	c = startController(t, "controller-again", controllerArgs(ns)...)
	waitControllerReady(t, c)
	eventually(t, convergeTimeout, "a v1alpha1 read again", func(ctx context.Context) (bool, error) {
		old, err := alphaFoos(ns).Get(ctx, foo.Name, metav1.GetOptions{})
		return err == nil && old.Spec.DeploymentName == "kept", err
	})
	waitFoo(t, ns, foo.Name, "2 available replicas", func(f *samplev1beta1.Foo) bool {
		return f.Status.AvailableReplicas == 2 && isReady(f)
	})
	after, err := getDeployment(ctx, ns, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID {
		t.Errorf("Deployment re-created: UID %s, was %s", after.UID, before.UID)
	}
	deployments, err := cluster.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deployments.Items) != 1 {
		t.Errorf("%d Deployments in %s, want the one", len(deployments.Items), ns)
	}
}

// caOf returns the signing CA in the webhook's CA Secret ns/name.
func caOf(t *testing.T, ns, name string) *x509.Certificate {
	t.Helper()
	var ca *x509.Certificate
	eventually(t, convergeTimeout, "the CA Secret "+ns+"/"+name, func(ctx context.Context) (bool, error) {
		s, err := cluster.Kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		block, _ := pem.Decode(s.Data["ca.crt"])
		if block == nil {
			return false, fmt.Errorf("no PEM in ca.crt")
		}
		ca, err = x509.ParseCertificate(block.Bytes)
		return err == nil, err
	})
	return ca
}

// servedIssuer is the issuer of the certificate the controller's webhook
// serves now.
func servedIssuer(c *framework.Controller) (string, error) {
	addr := strings.TrimPrefix(c.WebhookURL(), "https://")
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only the certificate is read
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Issuer.String(), nil
}
