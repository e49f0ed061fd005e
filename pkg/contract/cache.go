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
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

// What the informer caches keep of each object.
//
// The caches hold every Foo and every managed Deployment for as long as the
// controller runs, so their memory grows with the number of Foos. Most of a
// cached object is never read: managedFields, annotations (kubectl's
// last-applied-configuration alone repeats the whole object), the pod
// template beyond the fields the controller sets, the reasons, messages and
// timestamps of the Deployment's conditions. TrimForCache, the informer
// transform of NewDeploymentInformer and of the Foo informer, trims each
// object to the fields the controller reads before the object enters the
// cache and reaches the event handlers.
//
// It is an allow-list: a field not kept below reads as its zero value
// everywhere the controller looks at a cached object (listers, indexes,
// event handlers). Code that starts reading another field of a cached Foo
// must add it to trimFoo first; the tests in cache_test.go compare the status
// and the event reference computed from trimmed and from complete Foos.
// Deployments are cached as a type of their own, CachedDeployment, which has
// no field the controller does not read: code cannot read what the cache
// lacks, it does not compile. Of the Deployment's spec and labels it keeps
// the values at the fields DesiredDeployment sets, whatever they are
// (owned_fields.go): a field the mapping starts to set is cached with no
// edit here. Objects the controller gets from the API
// directly (the result of a create or an apply, a GET) are complete; a
// Deployment among them is read through NewCachedDeployment too, so the
// controller judges every Deployment by the same few fields.
//
// Each object is rebuilt from an allow-list of its own fields, so whatever a
// newer API version adds is dropped by default, and a trimmed object passes
// through unchanged, as client-go requires of a transform that may see an
// object twice (the initial sync of a watch-list stream passes every object
// through it once into a temporary store and again when that store's whole
// content replaces the informer's).
//
// A Foo is trimmed in place rather than copied: its Go type is its size, and a
// copy would only double the objects alive during the initial sync. A
// Deployment is not: an appsv1.Deployment is 1,232 bytes whatever it holds
// (the pod template is inline), and its labels are maps of some 300 bytes
// each however few they hold. Trimmed in place and with shared, interned
// label maps, a cached Deployment kept 2,790 bytes; a CachedDeployment keeps
// 856 (BenchmarkCachedBytesPerDeployment; docs/performance.md has the
// figures).
//
// It kept 824 when it had a hand-written field per owned field (the labels
// the controller sets as a sorted slice, replicas, the selector, each
// container's name and image), each value interned or shared. Those 32 bytes
// more a Deployment (some 0.3 MB over 10,000 Foos, under 4 %) buy that
// adding a field to the mapping touches the mapping and its tests alone, not
// the cache's type, its constructor, Drift, the fixtures and their tests: the
// owned values are kept as their JSON, some 300 bytes, which Drift reads
// back with the Deployment's schema. Kept. The larger price is CPU: walking
// a Deployment with its schema takes tens of microseconds per watch event
// and per Drift where the hand-written fields took a few (36 and 55 against
// 3.6 and 7.7, best of three on a shared 2-core machine). The schema is
// parsed once per process, and is the Deployment's part of client-go's
// schema alone (deploymentSchema): parsing client-go's schema of every
// built-in type, as this package did first, raised the controller's peak RSS
// by some 13 MiB at 1,000 Foos and its start by 0.2 s; the part keeps 150 KB
// where the whole kept 1.1 MB, and a fresh process parsing it grows its peak
// RSS by 2.6 MiB where the whole grew it by 16.5 (docs/performance.md).

// TrimForCache is the informer transform of both informers (installed by
// NewDeploymentInformer and NewController): it turns a Deployment into its CachedDeployment and trims a
// Foo; anything else, a CachedDeployment or a cache.DeletedFinalStateUnknown
// tombstone (whose object was trimmed when it entered the cache) among them,
// passes through unchanged.
func TrimForCache(obj interface{}) (interface{}, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o != nil {
			return NewCachedDeployment(o), nil
		}
	case *samplev1alpha1.Foo:
		if o != nil {
			return trimFoo(o), nil
		}
	}
	return obj, nil
}

// CachedDeployment is what the Deployment cache holds of a managed
// Deployment: the fields the controller reads, and nothing else.
//
// +k8s:deepcopy-gen=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CachedDeployment struct {
	// ObjectMeta keeps the name and namespace (the cache key, deletes, log
	// lines and event messages), the uid (the precondition of deleting a
	// stale Deployment), the resourceVersion (the precondition of a repair;
	// onDeploymentUpdate tells a resync from a change by it), the generation
	// (has the deployment controller seen the latest spec?) and the
	// controller reference alone among the owner references (which Foo
	// controls the Deployment: the event handlers, the controller-UID index,
	// ControlledBy). Its Labels stay empty: Owned has what is
	// read of them. Embedding it makes a CachedDeployment a metav1.Object,
	// which the informer's keys and tombstones need.
	metav1.ObjectMeta

	// Owned holds, as JSON, the Deployment's values at the fields the
	// controller owns (ownedPattern: what DesiredDeployment sets), and only
	// those: another team's labels, containers and defaults are not kept.
	// Drift compares the desired values with them. Empty only when they
	// could not be encoded, which Drift reports.
	Owned string

	Status CachedDeploymentStatus
}

// CachedDeploymentStatus is what ReadyCondition and DesiredStatus read of a
// Deployment's status.
//
// +k8s:deepcopy-gen=true
type CachedDeploymentStatus struct {
	ObservedGeneration                           int64
	Replicas, UpdatedReplicas, AvailableReplicas int32
	// ProgressDeadlineExceeded says the deployment controller gave up on the
	// rollout: its Progressing condition is False.
	ProgressDeadlineExceeded bool
}

// NewCachedDeployment returns what the cache keeps of d. d is not modified,
// and the result shares none of d's structs, maps or slices (only strings,
// which the decoders allocate one by one), so d can be collected at once.
func NewCachedDeployment(d *appsv1.Deployment) *CachedDeployment {
	// An error leaves Owned empty, and Drift reports it where it can be
	// returned: the sync of the Foo.
	owned, _ := ownedValues(d)
	return &CachedDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name,
			Namespace:       canonicalNamespace(d.Namespace),
			UID:             d.UID,
			ResourceVersion: d.ResourceVersion,
			Generation:      d.Generation,
			OwnerReferences: controllerReferenceOnly(d.OwnerReferences),
		},
		Owned: owned,
		Status: CachedDeploymentStatus{
			ObservedGeneration:       d.Status.ObservedGeneration,
			Replicas:                 d.Status.Replicas,
			UpdatedReplicas:          d.Status.UpdatedReplicas,
			AvailableReplicas:        d.Status.AvailableReplicas,
			ProgressDeadlineExceeded: progressDeadlineExceeded(d.Status.Conditions),
		},
	}
}

// A CachedDeployment is a runtime.Object, as client-go expects of what an
// informer caches: its cache mutation detector (KUBE_CACHE_MUTATION_DETECTOR)
// copies each cached object to check that nobody modifies it, and its
// watch-list consistency check (KUBE_WATCHLIST_INCONSISTENCY_DETECTOR)
// compares the cache with a list. DeepCopy and DeepCopyObject are generated
// (zz_generated.deepcopy.go, make generate). It has no kind of its own: it
// is never sent to or decoded from the API server.

// GetObjectKind implements runtime.Object.
func (d *CachedDeployment) GetObjectKind() schema.ObjectKind {
	return schema.EmptyObjectKind
}

// controllerReferenceOnly returns the owner reference metav1.GetControllerOf
// would find (the first with controller=true), without blockOwnerDeletion,
// or nil. Other owners are never read.
func controllerReferenceOnly(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for _, ref := range refs {
		if ref.Controller != nil && *ref.Controller {
			return []metav1.OwnerReference{{
				APIVersion: canonical(ref.APIVersion),
				Kind:       canonical(ref.Kind),
				Name:       ref.Name,
				UID:        ref.UID,
				Controller: ptr.To(true),
			}}
		}
	}
	return nil
}

// progressDeadlineExceeded reports whether the first Progressing condition
// is False.
func progressDeadlineExceeded(conditions []appsv1.DeploymentCondition) bool {
	for _, c := range conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}

// Strings that every managed Deployment holds are kept once rather than once
// per Deployment: the controller reference's apiVersion and kind, and the
// namespace. (unique.Make would not do: its table forgets a string once no
// unique.Handle to it is alive, at the next collection, and the next
// Deployment would get a copy of its own.)
var wellKnownStrings = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{
		samplev1alpha1.SchemeGroupVersion.String(), samplecontroller.FooKind,
	} {
		m[s] = s
	}
	return m
}()

// canonical returns the program's copy of a well-known string, else s.
func canonical(s string) string {
	if c, ok := wellKnownStrings[s]; ok {
		return c
	}
	return s
}

// namespaces holds one copy of each namespace name seen. It only grows, by a
// string per namespace that ever held a managed Deployment.
var namespaces sync.Map

func canonicalNamespace(ns string) string {
	c, _ := namespaces.LoadOrStore(ns, ns)
	return c.(string)
}

// trimFoo trims a Foo, in place, to what the controller reads:
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
//   - the whole spec (deploymentName and replicas);
//   - the whole status: a sync compares it with the status it computes and
//     writes when they differ, so a field left out would be rewritten on
//     every sync;
//   - deletionTimestamp: a Foo being deleted is left to the garbage
//     collector; and the finalizers, what holds it meanwhile (the first
//     thing a fork with clean-up of its own reads). Both cost nothing on
//     a Foo without them.
//
// Labels and annotations are not kept: nothing reads them, and they are
// most of what a Foo applied with kubectl carries. Of such a Foo with two
// labels the cache keeps 696 bytes (its store and index add 421); keeping
// its labels too, 1,104; keeping its annotations as well (kubectl's
// last-applied-configuration), 1,776 (BenchmarkCachedBytesPerLabelledFoo). Code that selects Foos by a
// label adds Labels here, and pays the 408 bytes.
//
// TypeMeta is not kept: events about a Foo name it by kind and apiVersion,
// which reference.GetReference looks up in the scheme when the object does
// not carry them (NewController registers the Foo types there). Cached
// objects carry them inconsistently anyway: client-go clears them on the
// objects it decodes from a watch.
func trimFoo(foo *samplev1alpha1.Foo) *samplev1alpha1.Foo {
	*foo = samplev1alpha1.Foo{
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
	deployment, ok := obj.(*CachedDeployment)
	if !ok {
		return nil, nil
	}
	ref := ControllerRef(deployment)
	if ref == nil {
		return nil, nil
	}
	return []string{string(ref.UID)}, nil
}
