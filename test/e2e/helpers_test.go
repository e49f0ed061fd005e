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

// Helpers shared by the scenarios: the Foo CRD and its variants, Foos,
// Deployments, events and the controller's metrics.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/test/framework"
)

const (
	// crdManifest and exampleFooManifest are the files a user applies,
	// relative to the repository root (kubectl runs there).
	crdManifest        = "artifacts/examples/crd.yaml"
	exampleFooManifest = "artifacts/examples/example-foo.yaml"

	// nodeName is the fake node of hack/local-up.sh.
	nodeName = "kwok-node-0"

	// convergeTimeout bounds the wait for the controller and the cluster's
	// own controllers to bring about a state: a few seconds normally, more
	// on a loaded two-core machine.
	convergeTimeout = 60 * time.Second
	// gcTimeout bounds a wait for the garbage collector of
	// kube-controller-manager to delete what a deleted Foo owned. The
	// collector learns of a new resource (a freshly created CRD) only when
	// it next resyncs with discovery, every 30 s.
	gcTimeout = 90 * time.Second
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ---------------------------------------------------------------- the CRD

// crds is the dynamic client for CustomResourceDefinitions (the module does
// not depend on the apiextensions clientset).
func crds(t *testing.T) dynamic.ResourceInterface {
	t.Helper()
	client, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	return client.Resource(crdGVR)
}

// standardCRD returns artifacts/examples/crd.yaml, the CRD users install.
func standardCRD(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cluster.Root, crdManifest))
	if err != nil {
		t.Fatal(err)
	}
	js, err := utilyaml.ToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := crd.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	if crd.GetName() != samplev1alpha1.FooCRDName {
		t.Fatalf("%s holds %q, not %s", crdManifest, crd.GetName(), samplev1alpha1.FooCRDName)
	}
	return crd
}

// editFooVersion lets edit change the CRD's one version (v1alpha1) in place.
func editFooVersion(t *testing.T, crd *unstructured.Unstructured, edit func(version map[string]interface{})) {
	t.Helper()
	versions, found, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil || !found || len(versions) != 1 {
		t.Fatalf("%s: expected exactly one version, got %d (found=%v, err=%v)", crdManifest, len(versions), found, err)
	}
	version := versions[0].(map[string]interface{})
	edit(version)
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
}

// putCRD makes the Foo CRD's spec what desired says: it creates the CRD if
// it is missing (waiting out a deletion in progress), else it updates it.
func putCRD(t *testing.T, desired *unstructured.Unstructured) {
	t.Helper()
	client := crds(t)
	eventually(t, 2*convergeTimeout, "the Foo CRD to be written", func(ctx context.Context) (bool, error) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current, err := client.Get(ctx, samplev1alpha1.FooCRDName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = client.Create(ctx, desired.DeepCopy(), metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			if current.GetDeletionTimestamp() != nil {
				return fmt.Errorf("CRD %s is being deleted", samplev1alpha1.FooCRDName)
			}
			updated := current.DeepCopy()
			updated.Object["spec"] = desired.DeepCopy().Object["spec"]
			annotations := updated.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			for k, v := range desired.GetAnnotations() {
				annotations[k] = v
			}
			updated.SetAnnotations(annotations)
			_, err = client.Update(ctx, updated, metav1.UpdateOptions{})
			return err
		})
		return err == nil, err
	})
}

// deleteCRD deletes the Foo CRD, and with it every Foo, and waits until the
// API server no longer serves Foos.
func deleteCRD(t *testing.T) {
	t.Helper()
	client := crds(t)
	err := client.Delete(context.Background(), samplev1alpha1.FooCRDName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, 2*convergeTimeout, "the Foo CRD to be gone", func(ctx context.Context) (bool, error) {
		_, err := client.Get(ctx, samplev1alpha1.FooCRDName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	waitFooDiscovery(t, "no Foo API", func(r map[string]bool) bool { return len(r) == 0 })
}

// waitCRDEstablished waits until the Foo CRD is Established with the names
// accepted.
func waitCRDEstablished(t *testing.T) {
	t.Helper()
	client := crds(t)
	eventually(t, convergeTimeout, "the Foo CRD to be Established", func(ctx context.Context) (bool, error) {
		crd, err := client.Get(ctx, samplev1alpha1.FooCRDName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		want := map[string]bool{"Established": false, "NamesAccepted": false}
		for _, c := range conditions {
			c, _ := c.(map[string]interface{})
			if typ, _ := c["type"].(string); c["status"] == "True" {
				if _, ok := want[typ]; ok {
					want[typ] = true
				}
			}
		}
		return want["Established"] && want["NamesAccepted"], nil
	})
}

// fooDiscovery returns the resources the API server's discovery lists for
// samplecontroller.k8s.io/v1alpha1 (e.g. foos, foos/status, foos/scale); none
// when the group is not served. The controller reads the same document at
// start.
func fooDiscovery(ctx context.Context) (map[string]bool, error) {
	list, err := cluster.Kube.Discovery().ServerResourcesForGroupVersion(samplev1alpha1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	resources := map[string]bool{}
	for _, r := range list.APIResources {
		resources[r.Name] = true
	}
	return resources, nil
}

// waitFooDiscovery waits until discovery's Foo resources satisfy ok.
func waitFooDiscovery(t *testing.T, what string, ok func(resources map[string]bool) bool) {
	t.Helper()
	eventually(t, convergeTimeout, "discovery to show "+what, func(ctx context.Context) (bool, error) {
		resources, err := fooDiscovery(ctx)
		if err != nil {
			return false, err
		}
		return ok(resources), nil
	})
}

// withSubresources is the discovery of the standard CRD.
func withSubresources(r map[string]bool) bool {
	return r["foos"] && r["foos/status"] && r["foos/scale"]
}

// badNameFoo is a Foo that only the standard CRD's schema rejects.
func badNameFoo(ns, name string) *samplev1alpha1.Foo {
	return newFoo(ns, name, "Bad_Name", nil)
}

// waitSchemaEnforced waits until the API server validates Foos with the
// given (enforced=true) or a schema-less CRD, probing with a server-side dry
// run: the CRD's storage is rebuilt a moment after the CRD changes.
func waitSchemaEnforced(t *testing.T, enforced bool) {
	t.Helper()
	eventually(t, convergeTimeout, fmt.Sprintf("Foo validation enforced=%v", enforced), func(ctx context.Context) (bool, error) {
		_, err := cluster.Sample.SamplecontrollerV1alpha1().Foos(metav1.NamespaceDefault).Create(ctx,
			badNameFoo(metav1.NamespaceDefault, "schema-probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			return !enforced, nil
		case apierrors.IsInvalid(err):
			return enforced, nil
		default:
			return false, err
		}
	})
}

// ensureStandardCRD installs artifacts/examples/crd.yaml unless it is
// already what is served (an identical update changes nothing), and waits
// until Foos are served with its schema and subresources.
func ensureStandardCRD(t *testing.T) {
	t.Helper()
	putCRD(t, standardCRD(t))
	waitStandardCRD(t)
}

// waitStandardCRD waits until the standard CRD is established and in force:
// discovery lists foos with status and scale, and the schema is enforced.
func waitStandardCRD(t *testing.T) {
	t.Helper()
	waitCRDEstablished(t)
	waitFooDiscovery(t, "foos, foos/status and foos/scale", withSubresources)
	waitSchemaEnforced(t, true)
}

// restoreStandardCRDAtEnd puts the standard CRD back when the test ends,
// however it ends, for the tests that change or delete it.
func restoreStandardCRDAtEnd(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		putCRD(t, standardCRD(t))
		waitStandardCRD(t)
	})
}

// ---------------------------------------------------------------- Foos

func int32p(i int32) *int32 { return &i }

// newFoo returns a Foo asking for the Deployment depName; replicas nil leaves
// spec.replicas out.
func newFoo(ns, name, depName string, replicas *int32) *samplev1alpha1.Foo {
	return &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: depName, Replicas: replicas},
	}
}

// createFoo creates foo with client-go.
func createFoo(t *testing.T, foo *samplev1alpha1.Foo) *samplev1alpha1.Foo {
	t.Helper()
	created, err := cluster.Sample.SamplecontrollerV1alpha1().Foos(foo.Namespace).Create(context.Background(), foo, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func getFoo(t *testing.T, ns, name string) *samplev1alpha1.Foo {
	t.Helper()
	foo, err := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return foo
}

// updateFoo changes a Foo with mutate, retrying on conflicts.
func updateFoo(t *testing.T, ns, name string, mutate func(*samplev1alpha1.Foo)) *samplev1alpha1.Foo {
	t.Helper()
	foos := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns)
	var updated *samplev1alpha1.Foo
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		foo, err := foos.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(foo)
		updated, err = foos.Update(context.Background(), foo, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return updated
}

func deleteFoo(t *testing.T, ns, name string) {
	t.Helper()
	err := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

func readyCondition(foo *samplev1alpha1.Foo) *metav1.Condition {
	return meta.FindStatusCondition(foo.Status.Conditions, samplev1alpha1.ConditionReady)
}

func specReplicas(foo *samplev1alpha1.Foo) int32 {
	if foo.Spec.Replicas == nil {
		return 1
	}
	return *foo.Spec.Replicas
}

// describeFoo sums up a Foo's status for failure messages.
func describeFoo(foo *samplev1alpha1.Foo) string {
	c := readyCondition(foo)
	ready := "no Ready condition"
	if c != nil {
		ready = fmt.Sprintf("Ready=%s reason=%s observedGeneration=%d message=%q", c.Status, c.Reason, c.ObservedGeneration, c.Message)
	}
	return fmt.Sprintf("Foo %s/%s generation=%d status{observedGeneration=%d replicas=%d available=%d selector=%q} %s",
		foo.Namespace, foo.Name, foo.Generation, foo.Status.ObservedGeneration, foo.Status.Replicas,
		foo.Status.AvailableReplicas, foo.Status.Selector, ready)
}

// waitFoo polls a Foo until ok says it is as wanted; it returns that Foo.
func waitFoo(t *testing.T, ns, name, what string, ok func(*samplev1alpha1.Foo) bool) *samplev1alpha1.Foo {
	t.Helper()
	var last *samplev1alpha1.Foo
	eventually(t, convergeTimeout, fmt.Sprintf("Foo %s/%s %s", ns, name, what), func(ctx context.Context) (bool, error) {
		foo, err := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = foo
		if ok(foo) {
			return true, nil
		}
		return false, fmt.Errorf("%s", describeFoo(foo))
	})
	return last
}

// isReady: Ready=True reason Available, status describing the current
// generation, every replica the spec asks for available.
func isReady(foo *samplev1alpha1.Foo) bool {
	c := readyCondition(foo)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == samplev1alpha1.ReasonAvailable &&
		c.ObservedGeneration == foo.Generation &&
		foo.Status.ObservedGeneration == foo.Generation &&
		foo.Status.AvailableReplicas == specReplicas(foo) &&
		foo.Status.Replicas == specReplicas(foo)
}

func waitFooReady(t *testing.T, ns, name string) *samplev1alpha1.Foo {
	t.Helper()
	return waitFoo(t, ns, name, "Ready (Available, all replicas available, current generation)", isReady)
}

// waitFooNotReady waits for Ready=False with the given reason, for the
// current generation.
func waitFooNotReady(t *testing.T, ns, name, reason string) *samplev1alpha1.Foo {
	t.Helper()
	return waitFoo(t, ns, name, "Ready=False reason "+reason, func(foo *samplev1alpha1.Foo) bool {
		c := readyCondition(foo)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason &&
			c.ObservedGeneration == foo.Generation && foo.Status.ObservedGeneration == foo.Generation
	})
}

// ---------------------------------------------------------------- Deployments

func getDeployment(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	return cluster.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
}

// checkControlledBy says why d is not controlled by foo as the controller
// sets it up (nil if it is): exactly one owner reference, the Foo's, with
// controller and blockOwnerDeletion set.
func checkControlledBy(d *appsv1.Deployment, foo *samplev1alpha1.Foo) error {
	refs := d.OwnerReferences
	if len(refs) != 1 {
		return fmt.Errorf("Deployment %s has %d owner references, want 1: %+v", d.Name, len(refs), refs)
	}
	ref := refs[0]
	if ref.APIVersion != samplev1alpha1.SchemeGroupVersion.String() || ref.Kind != "Foo" || ref.Name != foo.Name ||
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
func checkManagedDeployment(d *appsv1.Deployment, foo *samplev1alpha1.Foo) error {
	if err := checkControlledBy(d, foo); err != nil {
		return err
	}
	wantLabels := map[string]string{samplev1alpha1.LabelApp: "nginx", samplev1alpha1.LabelController: foo.Name, samplev1alpha1.LabelManagedBy: samplev1alpha1.ControllerName}
	for k, v := range wantLabels {
		if d.Labels[k] != v {
			return fmt.Errorf("Deployment %s label %s=%q, want %q (labels %v)", d.Name, k, d.Labels[k], v, d.Labels)
		}
	}
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) != 2 ||
		d.Spec.Selector.MatchLabels[samplev1alpha1.LabelApp] != "nginx" || d.Spec.Selector.MatchLabels[samplev1alpha1.LabelController] != foo.Name {
		return fmt.Errorf("Deployment %s selector %v", d.Name, d.Spec.Selector)
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

// waitManagedDeployment waits until the Deployment name is the one the
// controller makes for foo, and returns it.
func waitManagedDeployment(t *testing.T, ns, name string, foo *samplev1alpha1.Foo) *appsv1.Deployment {
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
	var names []string
	for _, mf := range obj.GetManagedFields() {
		names = append(names, mf.Manager+"/"+string(mf.Operation))
	}
	sort.Strings(names)
	return names
}

// touchedByController reports whether the controller ever wrote the object.
func touchedByController(obj metav1.Object) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == samplev1alpha1.ControllerName {
			return true
		}
	}
	return false
}

// waitGarbageCollectorKnowsFoos waits until kube-controller-manager's
// garbage collector collects what a deleted Foo owned: it creates a Foo (in
// a namespace without a controller) owning a ConfigMap, deletes the Foo and
// waits for the ConfigMap to go. A test that needs the collector to act
// quickly on a Foo's deletion calls this first.
func waitGarbageCollectorKnowsFoos(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	foo := createFoo(t, newFoo(ns, "gc-probe", "gc-probe", nil))
	cm, err := cluster.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "gc-probe",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: samplev1alpha1.SchemeGroupVersion.String(), Kind: "Foo", Name: foo.Name, UID: foo.UID,
		}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteFoo(t, ns, foo.Name)
	eventually(t, gcTimeout, "the garbage collector to collect a deleted Foo's ConfigMap", func(ctx context.Context) (bool, error) {
		_, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// ---------------------------------------------------------------- events

// fooEvents lists the events recorded on the Foo with this uid, optionally
// only those with the given reason.
func fooEvents(ctx context.Context, ns string, uid string, reason string) ([]corev1.Event, error) {
	selector := fields.Set{"involvedObject.uid": uid}
	if reason != "" {
		selector["reason"] = reason
	}
	list, err := cluster.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector.AsSelector().String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func describeEvents(events []corev1.Event) string {
	var lines []string
	for _, e := range events {
		lines = append(lines, fmt.Sprintf("%s %s count=%d source=%s: %s", e.Type, e.Reason, e.Count, e.Source.Component, e.Message))
	}
	return "[" + strings.Join(lines, "; ") + "]"
}

// waitEvent waits until the Foo has at least one event with this reason.
func waitEvent(t *testing.T, foo *samplev1alpha1.Foo, reason string) {
	t.Helper()
	eventually(t, convergeTimeout, fmt.Sprintf("a %s event on Foo %s", reason, foo.Name), func(ctx context.Context) (bool, error) {
		events, err := fooEvents(ctx, foo.Namespace, string(foo.UID), reason)
		if err != nil {
			return false, err
		}
		return len(events) > 0, nil
	})
}

// expectOneEvent checks that the Foo has exactly one event with this reason,
// of type eventType, from the controller, recorded once (count 1).
func expectOneEvent(t *testing.T, foo *samplev1alpha1.Foo, eventType, reason string) corev1.Event {
	t.Helper()
	events, err := fooEvents(context.Background(), foo.Namespace, string(foo.UID), reason)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 {
		t.Fatalf("Foo %s: %d %s events, want exactly 1: %s", foo.Name, len(events), reason, describeEvents(events))
	}
	e := events[0]
	if e.Type != eventType || e.Count != 1 || e.Source.Component != samplev1alpha1.ControllerName {
		t.Fatalf("Foo %s: event %s, want type %s, count 1, source %s", foo.Name, describeEvents(events), eventType, samplev1alpha1.ControllerName)
	}
	return e
}

// waitEventCount waits until the Foo has exactly one event with this reason
// and message, seen count times (the event recorder folds repeats of an
// event into one Event with a count).
func waitEventCount(t *testing.T, foo *samplev1alpha1.Foo, reason, message string, count int32) {
	t.Helper()
	eventually(t, convergeTimeout, fmt.Sprintf("event %s %q on Foo %s, count %d", reason, message, foo.Name, count), func(ctx context.Context) (bool, error) {
		events, err := fooEvents(ctx, foo.Namespace, string(foo.UID), reason)
		if err != nil {
			return false, err
		}
		var matching []corev1.Event
		for _, e := range events {
			if e.Message == message {
				matching = append(matching, e)
			}
		}
		if len(matching) != 1 || matching[0].Count != count || matching[0].Source.Component != samplev1alpha1.ControllerName {
			return false, fmt.Errorf("events %s", describeEvents(events))
		}
		return true, nil
	})
}

// namespaceEvents lists the events in a namespace.
func namespaceEvents(t *testing.T, ns string) []corev1.Event {
	t.Helper()
	list, err := cluster.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// ---------------------------------------------------------------- controller

// scrape reads the controller's /metrics.
func scrape(t *testing.T, c *framework.Controller) []framework.Sample {
	t.Helper()
	var samples []framework.Sample
	eventually(t, 10*time.Second, "the controller's metrics", func(ctx context.Context) (bool, error) {
		var err error
		samples, err = framework.ScrapeURL(ctx, c.MetricsURL())
		return err == nil, err
	})
	return samples
}

// writeRequests sums the controller's API requests that change state.
func writeRequests(samples []framework.Sample) float64 {
	return framework.Sum(samples, "rest_client_requests_total", func(l map[string]string) bool {
		return framework.IsWriteVerb(l["method"])
	})
}

// reconciles sums the controller's Foo syncs with the given result
// ("success", "error"; "" for all).
func reconciles(samples []framework.Sample, result string) float64 {
	return framework.Sum(samples, "samplecontroller_reconcile_total", func(l map[string]string) bool {
		return result == "" || l["result"] == result
	})
}

// waitControllerReady waits until the controller answers /readyz with 200
// (its caches are synced).
func waitControllerReady(t *testing.T, c *framework.Controller) {
	t.Helper()
	eventually(t, convergeTimeout, c.Name+" /readyz", func(ctx context.Context) (bool, error) {
		if c.Exited() {
			return false, fmt.Errorf("controller exited: %s", framework.Trim(c.Log(), 2000))
		}
		code, body, err := c.Probe(ctx, "/readyz")
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("/readyz: %d: %s", code, body)
		}
		return true, nil
	})
}

// ---------------------------------------------------------------- misc

// consistently checks cond every 250 ms over the whole window d and fails
// the test the first time it does not hold. It measures that something does
// NOT happen within a defined window.
func consistently(t *testing.T, d time.Duration, what string, cond func(context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cond(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !time.Now().Before(deadline) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// kubectlFails runs kubectl and fails the test unless kubectl exits
// non-zero; it returns kubectl's output.
func kubectlFails(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := cluster.Kubectl(stdin, args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded, want an error; output:\n%s", strings.Join(args, " "), out)
	}
	return out
}

// fooManifest is a Foo as a user writes it; extraSpec lines (indented by
// two spaces) are added to the spec.
func fooManifest(ns, name, deploymentName string, extraSpec ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: samplecontroller.k8s.io/v1alpha1\nkind: Foo\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  deploymentName: %s\n",
		name, ns, deploymentName)
	for _, line := range extraSpec {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	return b.String()
}

// controllerArgs are the flags of a controller confined to one namespace
// and not competing for a Lease with anyone.
func controllerArgs(ns string, extra ...string) []string {
	return append([]string{"-namespace=" + ns, "-leader-elect=false"}, extra...)
}
