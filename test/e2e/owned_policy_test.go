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
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// deploymentsPolicy is the admission policy of artifacts/deploy/owned-policy.yaml
// that confines the ServiceAccount's Deployments.
var deploymentsPolicy = samplecontroller.OwnedWritesPolicyName("deployments")

// A stolen token of the deployed ServiceAccount does a Foo's work and nothing
// more: the API server refuses, as that account, a Deployment in
// kube-system, one with host access, a volume, another ServiceAccount, a
// privileged container or another image, one no Foo controls, a patch of a
// Foo's Deployment beyond the fields the Foo owns, and a delete of a
// Deployment no Foo controls. The controller, with that token alone, still
// creates, repairs and replaces a Foo's Deployment, and keeps the field
// another manager set.
func TestDeploymentPolicyLetsTheServiceAccountDoAFoosWorkAlone(t *testing.T) {
	ensureStandardCRD(t)
	applyDeployArtifacts(t)
	ctx := context.Background()
	ns := newNamespace(t, "owned-policy")
	kubeconfig := serviceAccountKubeconfig(t, deployNamespace, deployServiceAccount)
	saKube := kubeClientFor(t, kubeconfig)
	waitPolicyChecked(t, deploymentsPolicy)

	// A Foo to own the Deployments tried below: the policy reads the
	// controller reference, not the Foo.
	foo := createFoo(t, newFoo(ns, "owner", "owner", int32p(1)))
	asked := func(edit func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		if err := owned.ToObject(desired.DeploymentFor(foo), d); err != nil {
			t.Fatal(err)
		}
		d.Name = "tried"
		edit(d)
		return d
	}
	podSpec := func(edit func(*corev1.PodSpec)) func(*appsv1.Deployment) {
		return func(d *appsv1.Deployment) { edit(&d.Spec.Template.Spec) }
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	create := func(ctx context.Context, d *appsv1.Deployment) error {
		_, err := saKube.AppsV1().Deployments(d.Namespace).Create(ctx, d, dryRun)
		return err
	}
	waitDeploymentPolicyInForce(t, saKube, ns)

	refused := []struct {
		what, message string
		edit          func(*appsv1.Deployment)
	}{
		{"in kube-system, privileged", "writes no Deployment in kube-system", func(d *appsv1.Deployment) {
			d.Namespace = metav1.NamespaceSystem
			d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}},
		{"with the host's network", "spec.template.spec may hold containers alone",
			podSpec(func(s *corev1.PodSpec) { s.HostNetwork = true })},
		{"with the host's PIDs", "spec.template.spec may hold containers alone",
			podSpec(func(s *corev1.PodSpec) { s.HostPID = true })},
		{"with a hostPath volume of /", "spec.template.spec may hold containers alone",
			podSpec(func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			})},
		{"as another ServiceAccount", "spec.template.spec may hold containers alone",
			podSpec(func(s *corev1.PodSpec) { s.ServiceAccountName = "default" })},
		{"privileged", "spec.template.spec.containers[name=nginx] may hold image, name alone",
			podSpec(func(s *corev1.PodSpec) {
				s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			})},
		{"with another image", "spec.template.spec.containers[name=nginx].image must be 'nginx:latest'",
			podSpec(func(s *corev1.PodSpec) { s.Containers[0].Image = "registry.invalid/miner:1" })},
		{"with a second container", "spec.template.spec.containers must be nginx alone",
			podSpec(func(s *corev1.PodSpec) {
				s.Containers = append(s.Containers, corev1.Container{Name: "sidecar", Image: "nginx:latest"})
			})},
		{"with another pod label", "spec.template.metadata.labels may hold app, controller alone",
			func(d *appsv1.Deployment) { d.Spec.Template.Labels["app.kubernetes.io/name"] = "payments" }},
		{"controlled by no Foo", "creates only a Deployment a Foo controls",
			func(d *appsv1.Deployment) { d.OwnerReferences = nil }},
	}
	for _, r := range refused {
		if problem := refusalBy(deploymentsPolicy, create(ctx, asked(r.edit)), r.message); problem != nil {
			t.Errorf("a create %s as %s: %v", r.what, deployServiceAccount, problem)
		}
	}
	// The same Deployment as the controller builds it passes.
	if err := create(ctx, asked(func(*appsv1.Deployment) {})); err != nil {
		t.Errorf("a create of the Deployment a Foo asks for as %s: %v", deployServiceAccount, err)
	}

	// The controller, with the token alone: it creates the Foo's Deployment.
	startController(t, "controller", controllerArgs(ns, "-kubeconfig="+kubeconfig, "-webhook-bind-address=0",
		"-resync-period=2s")...)
	foo = waitFooReady(t, ns, foo.Name)
	deployments := saKube.AppsV1().Deployments(ns)
	// Another manager's field, kept through the repairs below, and its drift
	// of the image, which the first repair undoes after handing the
	// controller's fields from its create to its apply: a write that leaves
	// the drifted image as it is.
	if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "owner", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"annotations":{"team":"payments"}},`+
			`"spec":{"containers":[{"name":"nginx","image":"nginx:drifted"}]}}}}`),
		metav1.PatchOptions{FieldManager: "payments"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, convergeTimeout, "the drifted image repaired", func(ctx context.Context) (bool, error) {
		d, err := cluster.Kube.AppsV1().Deployments(ns).Get(ctx, "owner", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if image := d.Spec.Template.Spec.Containers[0].Image; image != desired.ContainerImage {
			return false, fmt.Errorf("image %s", image)
		}
		return true, nil
	})
	patches := []struct{ what, patch, message string }{
		{"of the image", `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"registry.invalid/miner:1"}]}}}}`,
			"spec.template.spec.containers[name=nginx].image may change only to 'nginx:latest'"},
		{"adding a volume", `{"spec":{"template":{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}}}`,
			"at spec.template.spec only containers may change"},
		{"of another manager's field", `{"spec":{"template":{"metadata":{"annotations":{"team":"attacker"}}}}}`,
			"at spec.template.metadata only labels may change"},
		{"of the strategy", `{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`,
			"at spec only replicas, selector, template may change"},
		{"of the owner", `{"metadata":{"ownerReferences":null}}`, "changes none of its owners"},
	}
	for _, p := range patches {
		_, err := deployments.Patch(ctx, "owner", types.StrategicMergePatchType, []byte(p.patch),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if problem := refusalBy(deploymentsPolicy, err, p.message); problem != nil {
			t.Errorf("a patch %s as %s: %v", p.what, deployServiceAccount, problem)
		}
	}
	// Not its to delete: a Deployment no Foo controls.
	unmanaged, err := cluster.Kube.AppsV1().Deployments(ns).Create(ctx, unmanagedDeployment(ns, "not-a-foos", 1),
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = deployments.Delete(ctx, unmanaged.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	if problem := refusalBy(deploymentsPolicy, err, "deletes only a Deployment a Foo controls"); problem != nil {
		t.Errorf("a delete of a Deployment no Foo controls as %s: %v", deployServiceAccount, problem)
	}

	// Its own work goes on: a repair of what the Foo owns, with the other
	// manager's field kept, then a new name, whose old Deployment it deletes.
	updateFoo(t, ns, foo.Name, func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(2) })
	foo = waitFooReady(t, ns, foo.Name)
	d := waitManagedDeployment(t, ns, "owner", foo)
	if got := d.Spec.Template.Annotations["team"]; got != "payments" {
		t.Errorf("another manager's annotation is %q after the repair, want payments", got)
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d after the repair, want 2", *d.Spec.Replicas)
	}
	updateFoo(t, ns, foo.Name, func(f *samplev1beta1.Foo) { f.Spec.Deployment.Name = "renamed" })
	foo = waitFooReady(t, ns, foo.Name)
	waitManagedDeployment(t, ns, "renamed", foo)
	eventually(t, convergeTimeout, "the old Deployment deleted", func(ctx context.Context) (bool, error) {
		_, err := cluster.Kube.AppsV1().Deployments(ns).Get(ctx, "owner", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("deployment owner: %v", err)
	})
	if denied := deniedWrites(t, ns); denied != "" {
		t.Errorf("the controller's writes were refused: %s", denied)
	}
}

// fooDeployment is the Deployment a Foo named name in ns asks for, as the
// controller builds it: what the owned-object policy admits of the
// ServiceAccount. The Foo need not exist: admission reads the controller
// reference alone.
func fooDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	foo := newFoo(ns, name, name, int32p(1))
	foo.UID = types.UID("uid-" + name)
	d := &appsv1.Deployment{}
	if err := owned.ToObject(desired.DeploymentFor(foo), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// waitDeploymentPolicyInForce waits until the API server enforces the
// Deployments' admission policy on saKube, a client of the deployed
// ServiceAccount: it loads a new policy through an informer, a moment after
// it is created, and again after it restarts. It tries, in dry run, a Foo's
// Deployment with the host's network in the namespace ns.
func waitDeploymentPolicyInForce(t *testing.T, saKube kubernetes.Interface, ns string) {
	t.Helper()
	d := fooDeployment(t, ns, "policy-probe")
	d.Spec.Template.Spec.HostNetwork = true
	eventually(t, convergeTimeout, "policy "+deploymentsPolicy+" in force", func(ctx context.Context) (bool, error) {
		_, err := saKube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return refusalBy(deploymentsPolicy, err, "spec.template.spec may hold containers alone") == nil, nil
	})
}

// refusalByEither says why err is the refusal of neither the policy first
// nor second with their messages (nil if it is one of them): a write that
// both refuse is refused by whichever the API server asks first.
func refusalByEither(err error, first, firstMessage, second, secondMessage string) error {
	problem := refusalBy(first, err, firstMessage)
	if problem == nil || refusalBy(second, err, secondMessage) == nil {
		return nil
	}
	return problem
}

// deniedWrites lists the Warning events the controller recorded about a
// refused write in ns, "" if none.
func deniedWrites(t *testing.T, ns string) string {
	t.Helper()
	events, err := cluster.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var denied string
	for _, e := range events.Items {
		switch e.Reason {
		case samplecontroller.ReasonFailedCreate, samplecontroller.ReasonFailedUpdate, samplecontroller.ReasonFailedDelete:
			denied += e.Reason + ": " + e.Message + "\n"
		}
	}
	return denied
}
