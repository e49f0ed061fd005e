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

// Deployments, the controller's and other people's, and their pods.

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

func getDeployment(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	return cluster.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
}

// checkControlledBy says why d is not controlled by foo as the controller
// sets it up (nil if it is): exactly one owner reference, the Foo's, with
// controller and blockOwnerDeletion set.
func checkControlledBy(d *appsv1.Deployment, foo *samplev1beta1.Foo) error {
	refs := d.OwnerReferences
	if len(refs) != 1 {
		return fmt.Errorf("Deployment %s has %d owner references, want 1: %+v", d.Name, len(refs), refs)
	}
	ref := refs[0]
	if ref.APIVersion != samplev1beta1.SchemeGroupVersion.String() || ref.Kind != samplecontroller.FooKind || ref.Name != foo.Name ||
		ref.UID != foo.UID || ref.Controller == nil || !*ref.Controller ||
		ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		return fmt.Errorf("Deployment %s owner reference %+v (controller=%v blockOwnerDeletion=%v) is not the controller reference of Foo %s uid %s",
			d.Name, ref, ptrBool(ref.Controller), ptrBool(ref.BlockOwnerDeletion), foo.Name, foo.UID)
	}
	return nil
}

func ptrBool(b *bool) string {
	if b == nil {
		return "<nil>"
	}
	return fmt.Sprint(*b)
}

// checkManagedDeployment says why d is not the Deployment the controller
// makes for foo (nil if it is): owner, labels, selector, replicas, image.
func checkManagedDeployment(d *appsv1.Deployment, foo *samplev1beta1.Foo) error {
	if err := checkControlledBy(d, foo); err != nil {
		return err
	}
	controller := d.Labels[samplecontroller.LabelController]
	if err := checkControllerLabel(controller, foo.Name); err != nil {
		return fmt.Errorf("Deployment %s: %w", d.Name, err)
	}
	wantLabels := map[string]string{samplecontroller.LabelApp: "nginx", samplecontroller.LabelManagedBy: samplecontroller.ControllerName}
	for k, v := range wantLabels {
		if d.Labels[k] != v {
			return fmt.Errorf("Deployment %s label %s=%q, want %q (labels %v)", d.Name, k, d.Labels[k], v, d.Labels)
		}
	}
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) != 2 ||
		d.Spec.Selector.MatchLabels[samplecontroller.LabelApp] != "nginx" || d.Spec.Selector.MatchLabels[samplecontroller.LabelController] != controller {
		return fmt.Errorf("Deployment %s selector %v", d.Name, d.Spec.Selector)
	}
	if pod := d.Spec.Template.Labels; pod[samplecontroller.LabelApp] != "nginx" || pod[samplecontroller.LabelController] != controller {
		return fmt.Errorf("Deployment %s pod template labels %v, want %s=nginx and %s=%s", d.Name, pod,
			samplecontroller.LabelApp, samplecontroller.LabelController, controller)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != specReplicas(foo) {
		return fmt.Errorf("Deployment %s spec.replicas %v, want %d", d.Name, d.Spec.Replicas, specReplicas(foo))
	}
	containers := d.Spec.Template.Spec.Containers
	if len(containers) != 1 || containers[0].Name != "nginx" || containers[0].Image != "nginx:latest" {
		return fmt.Errorf("Deployment %s containers %+v, want one nginx:latest named nginx", d.Name, containers)
	}
	return nil
}

// controllerLabelHash is what follows the 52 kept characters of a long Foo
// name in its controller label: a dash and 10 hex digits of a hash.
var controllerLabelHash = regexp.MustCompile(`^-[0-9a-f]{10}$`)

// checkControllerLabel says why value is not the controller label of the Foo
// named fooName: the name itself up to 63 characters (a label value's
// limit); for a longer name, its first 52 characters, a dash and 10 hex
// digits (TestAPIServerAcceptsMappedDeployments has exact values).
func checkControllerLabel(value, fooName string) error {
	if len(fooName) <= 63 {
		if value != fooName {
			return fmt.Errorf("label controller=%q, want the Foo name %q", value, fooName)
		}
		return nil
	}
	rest, ok := strings.CutPrefix(value, fooName[:52])
	if !ok || !controllerLabelHash.MatchString(rest) {
		return fmt.Errorf("label controller=%q, want %q followed by a dash and 10 hex digits", value, fooName[:52])
	}
	return nil
}

// waitManagedDeployment waits until the Deployment name is the one the
// controller makes for foo, and returns it.
func waitManagedDeployment(t *testing.T, ns, name string, foo *samplev1beta1.Foo) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	eventually(t, convergeTimeout, fmt.Sprintf("Deployment %s/%s managed for Foo %s", ns, name, foo.Name), func(ctx context.Context) (bool, error) {
		var err error
		if d, err = getDeployment(ctx, ns, name); err != nil {
			return false, err
		}
		return checkManagedDeployment(d, foo) == nil, checkManagedDeployment(d, foo)
	})
	return d
}

// waitDeploymentGone waits until the Deployment name no longer exists.
func waitDeploymentGone(t *testing.T, ns, name string) {
	t.Helper()
	waitDeploymentGoneWithin(t, convergeTimeout, ns, name)
}

func waitDeploymentGoneWithin(t *testing.T, timeout time.Duration, ns, name string) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("Deployment %s/%s to be gone", ns, name), func(ctx context.Context) (bool, error) {
		d, err := getDeployment(ctx, ns, name)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("still there: uid %s, owners %+v, deletionTimestamp %v", d.UID, d.OwnerReferences, d.DeletionTimestamp)
	})
}

// rolledOut reports whether the deployment controller is done with d: it
// observed the current spec and marked the rollout complete, so it will not
// write d again by itself.
func rolledOut(d *appsv1.Deployment) bool {
	if d.Status.ObservedGeneration != d.Generation || d.Spec.Replicas == nil ||
		d.Status.UpdatedReplicas != *d.Spec.Replicas || d.Status.AvailableReplicas != *d.Spec.Replicas ||
		d.Status.Replicas != *d.Spec.Replicas {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c.Status == corev1.ConditionTrue && c.Reason == "NewReplicaSetAvailable"
		}
	}
	return false
}

// limitDeployments creates a ResourceQuota that allows n Deployments in ns,
// and waits until the quota controller has counted them: until then,
// admission refuses every Deployment with "status unknown".
func limitDeployments(t *testing.T, ns, name string, n int64) *corev1.ResourceQuota {
	t.Helper()
	quotas := cluster.Kube.CoreV1().ResourceQuotas(ns)
	quota, err := quotas.Create(context.Background(), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/deployments.apps": *resource.NewQuantity(n, resource.DecimalSI)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, convergeTimeout, "quota "+name+" counted", func(ctx context.Context) (bool, error) {
		q, err := quotas.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, counted := q.Status.Used["count/deployments.apps"]
		return counted, nil
	})
	return quota
}

// unmanagedDeployment is a plain nginx Deployment owned by nobody and
// without the controller's labels, as another team would make it.
func unmanagedDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "web", "deployment": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"team": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: int32p(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}

// managers lists the field managers recorded on an object.
func managers(obj metav1.Object) []string {
	names := make([]string, 0, len(obj.GetManagedFields()))
	for _, mf := range obj.GetManagedFields() {
		names = append(names, mf.Manager+"/"+string(mf.Operation))
	}
	sort.Strings(names)
	return names
}

// touchedByController reports whether the controller ever wrote the object.
func touchedByController(obj metav1.Object) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == samplecontroller.ControllerName {
			return true
		}
	}
	return false
}

func podReady(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// deploymentsOf returns the Deployments of ns by name.
func deploymentsOf(t *testing.T, ns string) map[string]metav1.ObjectMeta {
	t.Helper()
	list, err := cluster.Kube.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]metav1.ObjectMeta{}
	for _, d := range list.Items {
		out[d.Name] = d.ObjectMeta
	}
	return out
}

// expectSameDeployments: not one Deployment re-created, rolled (a new
// generation) or written (a new resourceVersion beyond the status its own
// controller writes, which only a roll-out would bring).
func expectSameDeployments(t *testing.T, before, after map[string]metav1.ObjectMeta) {
	t.Helper()
	if len(after) != len(before) {
		t.Errorf("%d Deployments, was %d", len(after), len(before))
	}
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("Deployment %s gone", name)
		case a.UID != b.UID:
			t.Errorf("Deployment %s re-created (UID %s, was %s)", name, a.UID, b.UID)
		case a.Generation != b.Generation:
			t.Errorf("Deployment %s written: generation %d, was %d", name, a.Generation, b.Generation)
		}
	}
}
