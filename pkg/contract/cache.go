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

package contract

import (
	"maps"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

// What the informer caches keep of each object.
//
// The caches hold every Foo and every managed Deployment for as long as the
// controller runs, so their memory grows with the number of Foos. Most of a
// cached object is never read: managedFields, annotations (kubectl's
// last-applied-configuration alone repeats the whole object), the pod
// template beyond labels and container images, the reasons, messages and
// timestamps of the Deployment's conditions. TrimForCache, the informer
// transform installed in main.go, trims each object to the fields the
// controller reads before the object enters the cache and reaches the event
// handlers.
//
// It is an allow-list: a field not kept below reads as its zero value
// everywhere the controller looks at a cached object (listers, indexes,
// event handlers). Code that starts reading another field of a cached Foo
// or Deployment must add it here first; the tests in cache_test.go compare
// the drift check, the status and the event reference computed from trimmed
// and from complete objects. Objects the controller gets from the API
// directly (the result of a create or an apply, a GET) are complete.
//
// The transform trims the object it is given, in place, rather than build a
// copy. client-go allows it: since 1.27 the transform sees each object before
// anyone else holds it. And memory asks for it: the initial sync (a
// watch-list stream) passes every object through the transform twice, once
// into a temporary store and again when that store's whole content replaces
// the informer's, so a copying transform would hold two copies of every
// object at that moment (docs/performance.md has the measurement). Each
// object is still rebuilt from an allow-list of its own fields, so whatever a
// newer API version adds is dropped by default, and trimming a trimmed object
// changes nothing, as client-go requires of a transform that may see an
// object twice. Most kept
// strings and slices are the decoded object's own; the decoders copy them out
// of the response buffer, so nothing else stays reachable.
//
// Rebuilding into a fresh appsv1.Deployment instead would save nothing: the
// struct is 1,232 bytes whatever it holds (the pod template is inline), and
// the decoded one becomes garbage only to be replaced by one as large
// (BenchmarkCachedBytesPerDeployment measured 3,296 bytes per Deployment
// both ways). What does pay is sharing: a Deployment's label maps are
// rebuilt from canonical strings, and its selector and pod template share
// one map: 2,790 bytes.

// TrimForCache is the informer transform of both informer factories: it
// trims a Deployment or a Foo; anything else, such as a
// cache.DeletedFinalStateUnknown tombstone (whose object was trimmed when it
// entered the cache), passes through unchanged.
func TrimForCache(obj interface{}) (interface{}, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o != nil {
			return trimDeployment(o), nil
		}
	case *samplev1alpha1.Foo:
		if o != nil {
			return trimFoo(o), nil
		}
	}
	return obj, nil
}

// trimDeployment trims a Deployment, in place, to what the controller reads:
//   - name and namespace: the cache key, deletes, log lines and event
//     messages;
//   - uid: the precondition of deleting a stale Deployment;
//   - resourceVersion: onDeploymentUpdate tells a resync from a change by it;
//   - generation and status.observedGeneration: whether the deployment
//     controller has seen the latest spec (ReadyCondition);
//   - labels: drift of the controller's labels (Drift);
//   - the controller reference (the owner reference with controller=true,
//     without blockOwnerDeletion): which Foo controls the Deployment (the
//     event handlers, the controller-UID index, IsControlledBy);
//   - spec.replicas, spec.selector.matchLabels, the pod template's labels,
//     and the name and image of each container: everything Drift
//     compares;
//   - status.replicas, updatedReplicas, availableReplicas, and the type and
//     status of the Progressing condition: what ReadyCondition and
//     DesiredStatus report.
func trimDeployment(d *appsv1.Deployment) *appsv1.Deployment {
	selector := d.Spec.Selector
	podLabels := interned(d.Spec.Template.Labels)
	if selector != nil {
		selector.MatchExpressions = nil
		selector.MatchLabels = sharedIfEqual(interned(selector.MatchLabels), podLabels)
	}
	*d = appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name,
			Namespace:       unique.Make(d.Namespace).Value(),
			UID:             d.UID,
			ResourceVersion: d.ResourceVersion,
			Generation:      d.Generation,
			Labels:          interned(d.Labels),
			OwnerReferences: controllerReferenceOnly(d.OwnerReferences),
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: d.Spec.Replicas,
			Selector: selector,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec:       corev1.PodSpec{Containers: containerNamesAndImages(d.Spec.Template.Spec.Containers)},
			},
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: d.Status.ObservedGeneration,
			Replicas:           d.Status.Replicas,
			UpdatedReplicas:    d.Status.UpdatedReplicas,
			AvailableReplicas:  d.Status.AvailableReplicas,
			Conditions:         progressingCondition(d.Status.Conditions),
		},
	}
	return d
}

// controllerReferenceOnly returns the owner reference metav1.GetControllerOf
// would find (the first with controller=true), without blockOwnerDeletion,
// or nil. Other owners are never read.
func controllerReferenceOnly(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for _, ref := range refs {
		if ref.Controller != nil && *ref.Controller {
			return []metav1.OwnerReference{{
				APIVersion: unique.Make(ref.APIVersion).Value(),
				Kind:       unique.Make(ref.Kind).Value(),
				Name:       ref.Name,
				UID:        ref.UID,
				Controller: ref.Controller,
			}}
		}
	}
	return nil
}

// containerNamesAndImages keeps each container's name and image, in order,
// in the same slice: the drift check looks up the controller's container by
// name among all of them and compares its image.
func containerNamesAndImages(containers []corev1.Container) []corev1.Container {
	for i, c := range containers {
		containers[i] = corev1.Container{Name: unique.Make(c.Name).Value(), Image: unique.Make(c.Image).Value()}
	}
	return containers
}

// progressingCondition keeps the type and status of the first Progressing
// condition, the only one deploymentTimedOut reads; its reason, message and
// timestamps go.
func progressingCondition(conditions []appsv1.DeploymentCondition) []appsv1.DeploymentCondition {
	for _, c := range conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return []appsv1.DeploymentCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return nil
}

// interned returns labels with each key and value replaced by its
// canonical copy (unique.Make): the label keys, and most values (the app,
// managed-by), are the same in every managed Deployment, so the cache keeps
// them once rather than once per Deployment. A value unique to one
// Deployment (the Foo's name) costs an entry in unique's table instead of
// nothing, but is shared by the three label maps of its Deployment.
func interned(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[unique.Make(k).Value()] = unique.Make(v).Value()
	}
	return out
}

// sharedIfEqual returns b when it holds the same labels as a, else a: the
// selector and the pod template's labels of a managed Deployment are the
// same, and one map serves both. Cached objects are read-only (client-go's
// rule), so two fields may share a map.
func sharedIfEqual(a, b map[string]string) map[string]string {
	if a != nil && b != nil && maps.Equal(a, b) {
		return b
	}
	return a
}

// trimFoo trims a Foo, in place, to what the controller reads:
//   - name and namespace: the cache key, the Deployment's namespace, the
//     pod labels and the owner reference;
//   - uid: the owner reference and ownership checks, the controller-UID
//     index, the controller's per-Foo memories of status writes;
//   - resourceVersion: the precondition of status writes, and whether the
//     cache has seen the controller's last one (statusWriteExpectations);
//   - name, namespace, uid and resourceVersion also make the reference to
//     the Foo in its events;
//   - generation: status.observedGeneration, and whether an update is a
//     spec change (onFooUpdate);
//   - the whole spec (deploymentName and replicas);
//   - the whole status: a sync compares it with the status it computes and
//     writes when they differ, so a field left out would be rewritten on
//     every sync.
//
// TypeMeta is not kept: events about a Foo name it by kind and apiVersion,
// which reference.GetReference looks up in the scheme when the object does
// not carry them (NewController registers the Foo types there). Cached
// objects carry them inconsistently anyway: client-go clears them on the
// objects it decodes from a watch.
func trimFoo(foo *samplev1alpha1.Foo) *samplev1alpha1.Foo {
	*foo = samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{
			Name:            foo.Name,
			Namespace:       foo.Namespace,
			UID:             foo.UID,
			ResourceVersion: foo.ResourceVersion,
			Generation:      foo.Generation,
		},
		Spec:   foo.Spec,
		Status: foo.Status,
	}
	return foo
}

// Cache indexes: besides its key, the controller looks objects up in the
// caches by these.
const (
	// FooByDeploymentName finds the Foos that ask for a Deployment name
	// ("namespace/name"), so that a Foo refused a taken name is retried as
	// soon as it is freed.
	FooByDeploymentName = "deploymentName"
	// DeploymentByControllingFoo finds the Deployments a Foo controls (by
	// the Foo's UID), whatever their name, so that renaming
	// spec.deploymentName removes the old one.
	DeploymentByControllingFoo = "controllerUID"
)

// FooIndexers are the indexes of the Foo cache.
func FooIndexers() cache.Indexers {
	return cache.Indexers{FooByDeploymentName: indexFooByDeploymentName}
}

// DeploymentIndexers are the indexes of the Deployment cache.
func DeploymentIndexers() cache.Indexers {
	return cache.Indexers{DeploymentByControllingFoo: indexDeploymentByControllingFoo}
}

func indexFooByDeploymentName(obj interface{}) ([]string, error) {
	foo, ok := obj.(*samplev1alpha1.Foo)
	if !ok || foo.Spec.DeploymentName == "" {
		return nil, nil
	}
	return []string{foo.Namespace + "/" + foo.Spec.DeploymentName}, nil
}

func indexDeploymentByControllingFoo(obj interface{}) ([]string, error) {
	deployment, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, nil
	}
	ref := ControllerRef(deployment)
	if ref == nil {
		return nil, nil
	}
	return []string{string(ref.UID)}, nil
}
