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

// Package foocache is what the Foo informer's cache keeps of each Foo
// (Transform) and how the controller looks Foos up in it (Indexers).
//
// The cache holds every Foo for as long as the controller runs, so its
// memory grows with the number of Foos. Most of a Foo as served is never
// read: managedFields, labels and annotations (kubectl's
// last-applied-configuration alone repeats the whole object). Transform, the
// Foo informer's transform, trims each Foo to the fields the controller reads
// before it enters the cache and reaches the event handlers.
//
// It is an allow-list: a field not kept reads as its zero value everywhere
// the controller looks at a cached Foo (listers, indexes, event handlers).
// Code that starts reading another field of a cached Foo must add it to trim
// first; the tests compare the status and the event reference computed from
// trimmed and from complete Foos. A Foo is rebuilt from the allow-list, so
// whatever a newer API version adds is dropped by default, and a trimmed
// Foo passes through unchanged, as client-go requires of a transform that
// may see an object twice.
//
// A Foo is trimmed in place rather than copied: its Go type is its size, and
// a copy would only double the objects alive during the initial sync.
package foocache

import (
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// Transform is the Foo informer's transform: it trims a Foo in place;
// anything else, a cache.DeletedFinalStateUnknown tombstone (whose Foo was
// trimmed when it entered the cache) among them, passes through unchanged.
func Transform(obj interface{}) (interface{}, error) {
	if foo, ok := obj.(*samplev1beta1.Foo); ok && foo != nil {
		return trim(foo), nil
	}
	return obj, nil
}

// trim trims a Foo, in place, to what the controller reads:
//   - name and namespace: the cache key, the Deployment's namespace, the
//     pod labels and the owner reference;
//   - uid: the owner reference and ownership checks, the controller-UID
//     index, the controller's per-Foo memories of status writes;
//   - resourceVersion: the precondition of status writes, and whether the
//     cache has seen the controller's last one (pkg/expectations);
//   - name, namespace, uid and resourceVersion also make the reference to
//     the Foo in its events;
//   - generation: status.observedGeneration, and whether an update is a
//     spec change (onFooUpdate);
//   - the whole spec (deployment.name and replicas);
//   - the whole status: a sync compares it with the status it computes and
//     writes when they differ, so a field left out would be rewritten on
//     every sync; and the status it writes replaces the whole status,
//     carrying over the conditions other controllers added, so those are
//     read too. No more of it than the CRD admits, though (boundStatus):
//     anyone who may write foos/status could otherwise make each Foo's
//     status as large as etcd allows, and the cache holds every Foo;
//   - deletionTimestamp: a Foo being deleted is left to the garbage
//     collector; and the finalizers, what holds it meanwhile (the first
//     thing a fork with clean-up of its own reads). Both cost nothing on
//     a Foo without them.
//
// Labels and annotations are not kept: nothing reads them, and they are
// most of what a Foo applied with kubectl carries: keeping them would cost
// more than the rest of a cached Foo (BenchmarkCachedBytesPerLabelledFoo;
// docs/performance.md has the bytes). Code that selects Foos by a label adds
// Labels here, and pays for them.
//
// TypeMeta is not kept: events about a Foo name it by kind and apiVersion,
// which reference.GetReference looks up in the scheme when the object does
// not carry them (the root's init registers the Foo types there). Cached
// objects carry them inconsistently anyway: client-go clears them on the
// objects it decodes from a watch.
func trim(foo *samplev1beta1.Foo) *samplev1beta1.Foo {
	*foo = samplev1beta1.Foo{
		ObjectMeta: metav1.ObjectMeta{
			Name:              foo.Name,
			Namespace:         foo.Namespace,
			UID:               foo.UID,
			ResourceVersion:   foo.ResourceVersion,
			Generation:        foo.Generation,
			DeletionTimestamp: foo.DeletionTimestamp,
			Finalizers:        foo.Finalizers,
		},
		Spec:   foo.Spec,
		Status: boundStatus(foo.Status),
	}
	return foo
}

// boundStatus cuts a status to the CRD's bounds (samplecontroller's
// MaxConditions, MaxConditionMessageLength, MaxSelectorLength), which the
// API server enforces, for the Foos it may still hold beyond them: written
// before the CRD had them, or under an older CRD. It keeps the Ready
// condition and the first MaxConditions-1 others, in their order, so that
// the status the controller computes from it (the others and its Ready) is
// one the CRD admits; it cuts each message as the controller cuts its own;
// and it keeps no selector longer than the bound (the controller writes a
// short one, and rewrites a selector that differs). The status the
// controller then writes carries no more of the others than the cache
// kept. Within the bounds, the status is kept as it is.
func boundStatus(status samplev1beta1.FooStatus) samplev1beta1.FooStatus {
	if utf8.RuneCountInString(status.Selector) > samplecontroller.MaxSelectorLength {
		status.Selector = ""
	}
	others := 0
	for _, c := range status.Conditions {
		if c.Type != samplecontroller.ConditionReady {
			others++
		}
	}
	if others > samplecontroller.MaxConditions-1 {
		// A new array: the one decoded would keep every condition alive.
		kept := make([]metav1.Condition, 0, samplecontroller.MaxConditions)
		others = 0
		for _, c := range status.Conditions {
			if c.Type != samplecontroller.ConditionReady {
				if others == samplecontroller.MaxConditions-1 {
					continue
				}
				others++
			}
			kept = append(kept, c)
		}
		status.Conditions = kept
	}
	for i := range status.Conditions {
		status.Conditions[i].Message = samplecontroller.CutConditionMessage(status.Conditions[i].Message)
	}
	return status
}

// ByDeploymentName is the index of the Foo cache that finds the Foos that
// ask for a Deployment name ("namespace/name"), so that a Foo refused a
// taken name is retried as soon as it is freed.
const ByDeploymentName = "deploymentName"

// Indexers are the indexes of the Foo cache.
func Indexers() cache.Indexers {
	return cache.Indexers{ByDeploymentName: indexByDeploymentName}
}

func indexByDeploymentName(obj interface{}) ([]string, error) {
	foo, ok := obj.(*samplev1beta1.Foo)
	if !ok || foo.Spec.Deployment.Name == "" {
		return nil, nil
	}
	return []string{foo.Namespace + "/" + foo.Spec.Deployment.Name}, nil
}

// SetUp sets what informer, a Foo informer not yet started, caches of each
// Foo (Transform) and the index AskingFor reads (Indexers).
func SetUp(informer cache.SharedIndexInformer) error {
	if err := informer.SetTransform(Transform); err != nil {
		return err
	}
	return informer.AddIndexers(Indexers())
}

// AskingFor returns the Foos in indexer, the Foo cache, that ask for the
// Deployment name of object, whatever its kind (ByDeploymentName).
func AskingFor(indexer cache.Indexer, object metav1.Object) ([]interface{}, error) {
	return indexer.ByIndex(ByDeploymentName, object.GetNamespace()+"/"+object.GetName())
}
