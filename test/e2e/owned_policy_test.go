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
	"math"
	"slices"
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
)

// deploymentsPolicy is the admission policy of artifacts/deploy/owned-policy.yaml
// that confines the ServiceAccount's Deployments.
var deploymentsPolicy = samplecontroller.OwnedWritesPolicyName("deployments")

// A stolen token of the deployed ServiceAccount does a Foo's work and nothing
// more: the API server refuses, as that account, a Deployment in
// kube-system, one with host access, a volume, another ServiceAccount, a
// privileged container or another image, more replicas than a Foo may ask
// for, a finalizer, an annotation, a label or an owner reference of its
// own, one no Foo controls, a patch of a Foo's Deployment beyond the fields
// the Foo owns or its bounds, or removing another manager's container, a
// delete of a Deployment no Foo controls, and one that orphans its pods.
// What it may create lives only where a Foo does: the garbage collector
// deletes one whose Foo does not exist, the controller one its Foo does not
// ask for. The controller, with that token alone, still creates, repairs,
// scales to the Foo's bounds and replaces a Foo's Deployment, and keeps the
// field and the container another manager set.
func TestDeploymentPolicyLetsTheServiceAccountDoAFoosWorkAlone(t *testing.T) {
	ensureStandardCRD(t)
	applyDeployArtifacts(t)
	ctx := context.Background()
	ns := newNamespace(t, "owned-policy")
	kubeconfig := serviceAccountKubeconfig(t, deployNamespace, deployServiceAccount)
	saKube := kubeClientFor(t, kubeconfig)
	waitPolicyChecked(t, deploymentsPolicy)

	// A Foo to own the Deployments tried below, at its least replicas: the
	// policy reads the controller reference, not the Foo.
	foo := createFoo(t, newFoo(ns, "owner", "owner", int32p(1)))
	asked := func(edit func(*appsv1.Deployment)) *appsv1.Deployment {
		d := desired.NewDeployment(foo)
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
		{"with the host's network", "spec.template.spec may hold automountServiceAccountToken, containers alone",
			podSpec(func(s *corev1.PodSpec) { s.HostNetwork = true })},
		{"with the host's PIDs", "spec.template.spec may hold automountServiceAccountToken, containers alone",
			podSpec(func(s *corev1.PodSpec) { s.HostPID = true })},
		{"with a hostPath volume of /", "spec.template.spec may hold automountServiceAccountToken, containers alone",
			podSpec(func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			})},
		{"as another ServiceAccount", "spec.template.spec may hold automountServiceAccountToken, containers alone",
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
		{"with 2147483647 replicas", "spec.replicas must be at least 1 and at most 10, as a Foo's spec.replicas is",
			func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](math.MaxInt32) }},
		{"with no replica", "spec.replicas must be at least 1 and at most 10, as a Foo's spec.replicas is",
			func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](0) }},
		{"with a finalizer", "metadata may hold labels, name, namespace, ownerReferences alone",
			func(d *appsv1.Deployment) { d.Finalizers = []string{"example.com/keep"} }},
		{"with an annotation", "metadata may hold labels, name, namespace, ownerReferences alone",
			func(d *appsv1.Deployment) { d.Annotations = map[string]string{"example.com/backup": "true"} }},
		{"with another label", "metadata.labels may hold app, app.kubernetes.io/managed-by, controller alone",
			func(d *appsv1.Deployment) { d.Labels["team"] = "payments" }},
		{"with a second owner, blocking its deletion", "metadata.ownerReferences must be its controller reference alone",
			func(d *appsv1.Deployment) {
				d.OwnerReferences = append(d.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1",
					Kind: "Deployment", Name: "payments", UID: "uid-payments", BlockOwnerDeletion: ptr.To(true)})
			}},
		{"owned by a Foo of a version never served", "metadata.ownerReferences must be its controller reference alone",
			func(d *appsv1.Deployment) { d.OwnerReferences[0].APIVersion = samplecontroller.GroupName + "/v9" }},
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
	// One whose Foo does not exist is admitted (admission cannot read the
	// Foo), and deleted by the garbage collector.
	ghost := asked(func(d *appsv1.Deployment) { d.Name, d.OwnerReferences[0].UID = "ghost", "uid-no-such-foo" })
	if _, err := saKube.AppsV1().Deployments(ns).Create(ctx, ghost, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a create of a Deployment a Foo of another UID would ask for as %s: %v", deployServiceAccount, err)
	}
	waitDeploymentGone(t, ns, ghost.Name)

	// The controller, with the token alone: it creates the Foo's Deployment.
	startController(t, "controller", controllerArgs(ns, "-kubeconfig="+kubeconfig, "-webhook-bind-address=0",
		"-resync-period=2s")...)
	foo = waitFooReady(t, ns, foo.Name)
	deployments := saKube.AppsV1().Deployments(ns)
	// Another manager's field and container, kept through the repairs
	// below, and its drift of the image, which the first repair undoes
	// after handing the controller's fields from its create to its apply: a
	// write that leaves the drifted image as it is.
	if _, err := cluster.Kube.AppsV1().Deployments(ns).Patch(ctx, "owner", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"annotations":{"team":"payments"}},`+
			`"spec":{"containers":[{"name":"nginx","image":"nginx:drifted"},{"name":"sidecar","image":"busybox:stable"}]}}}}`),
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
	patches := []struct {
		what      string
		patchType types.PatchType
		patch     string
		message   string
	}{
		{"of the image", types.StrategicMergePatchType,
			`{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"registry.invalid/miner:1"}]}}}}`,
			"spec.template.spec.containers[name=nginx].image may change only to 'nginx:latest'"},
		{"adding a volume", types.StrategicMergePatchType,
			`{"spec":{"template":{"spec":{"volumes":[{"name":"root","hostPath":{"path":"/"}}]}}}}`,
			"at spec.template.spec only automountServiceAccountToken, containers may change"},
		{"of another manager's field", types.StrategicMergePatchType,
			`{"spec":{"template":{"metadata":{"annotations":{"team":"attacker"}}}}}`,
			"at spec.template.metadata only labels may change"},
		{"removing another manager's container", types.StrategicMergePatchType,
			`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}`,
			"spec.template.spec.containers must keep nginx, and each element named other than nginx as it was"},
		{"of the strategy", types.StrategicMergePatchType, `{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}`,
			"at spec only replicas, selector, template may change"},
		{"to 1000 replicas", types.MergePatchType, `{"spec":{"replicas":1000}}`,
			"spec.replicas may change only to a value at least 1 and at most 10, as a Foo's spec.replicas is"},
		{"adding a finalizer", types.MergePatchType, `{"metadata":{"finalizers":["example.com/keep"]}}`,
			"at metadata only labels, name, namespace, ownerReferences may change"},
		{"of the owner", types.StrategicMergePatchType, `{"metadata":{"ownerReferences":null}}`, "changes none of its owners"},
		{"adding an owner, blocking its deletion", types.StrategicMergePatchType,
			`{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"payments",` +
				`"uid":"uid-payments","blockOwnerDeletion":true}]}}`,
			"changes none of its owners"},
	}
	for _, p := range patches {
		_, err := deployments.Patch(ctx, "owner", p.patchType, []byte(p.patch),
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
	// Nor one that leaves the Foo's pods to no one; a delete in the
	// foreground or the background is its own.
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground,
		metav1.DeletePropagationBackground} {
		err := deployments.Delete(ctx, "owner", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll},
			PropagationPolicy: &policy})
		if policy != metav1.DeletePropagationOrphan {
			if err != nil {
				t.Errorf("a delete of a Foo's Deployment, propagation %s, as %s: %v", policy, deployServiceAccount, err)
			}
			continue
		}
		if problem := refusalBy(deploymentsPolicy, err, "deletes a Deployment with what it owns: no orphaning delete"); problem != nil {
			t.Errorf("an orphaning delete of a Foo's Deployment as %s: %v", deployServiceAccount, problem)
		}
	}
	// A Deployment of the Foo's it does not ask for, which the account may
	// create: the controller deletes it.
	intruder := asked(func(d *appsv1.Deployment) { d.Name, d.Namespace = "intruder", ns })
	if _, err := deployments.Create(ctx, intruder, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a create of a Deployment the Foo controls as %s: %v", deployServiceAccount, err)
	}
	waitDeploymentGone(t, ns, intruder.Name)

	// Its own work goes on: a repair of what the Foo owns, to its most
	// replicas, with the other manager's field and container kept, then a
	// new name, whose old Deployment it deletes.
	updateFoo(t, ns, foo.Name, func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(samplev1beta1.MaxReplicas) })
	foo = waitFooReady(t, ns, foo.Name)
	d, err := cluster.Kube.AppsV1().Deployments(ns).Get(ctx, "owner", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Annotations["team"]; got != "payments" {
		t.Errorf("another manager's annotation is %q after the repair, want payments", got)
	}
	if !slices.ContainsFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "sidecar" }) {
		t.Errorf("containers %+v after the repair, want another manager's sidecar kept", d.Spec.Template.Spec.Containers)
	}
	if *d.Spec.Replicas != samplev1beta1.MaxReplicas {
		t.Errorf("replicas %d after the repair, want %d", *d.Spec.Replicas, samplev1beta1.MaxReplicas)
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
	d := desired.NewDeployment(foo)
	return d
}

// waitDeploymentPolicyInForce waits until the API server enforces the
// Deployments' admission policy on saKube, a client of the deployed
// ServiceAccount: it loads a new policy through an informer, a moment after
// it is created, and again after it restarts. It tries, in dry run, a Foo's
// Deployment of more replicas than a Foo may ask for in the namespace ns:
// a rule of the newest policy, not of one the API server may still hold.
func waitDeploymentPolicyInForce(t *testing.T, saKube kubernetes.Interface, ns string) {
	t.Helper()
	d := fooDeployment(t, ns, "policy-probe")
	d.Spec.Replicas = ptr.To[int32](math.MaxInt32)
	eventually(t, convergeTimeout, "policy "+deploymentsPolicy+" in force", func(ctx context.Context) (bool, error) {
		_, err := saKube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return refusalBy(deploymentsPolicy, err, "spec.replicas must be at least 1 and at most 10") == nil, nil
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
