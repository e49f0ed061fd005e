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

// Package owned is the machinery that caches, compares and writes the
// objects a Foo owns, for any kind: what an informer's cache keeps of each
// object (Object), which of its fields are the controller's and how they
// drifted (Fields), which owner controls it (ControllerRef), the informer
// that watches the objects the controller manages (NewInformer), and the
// steps of their sync that write (Create, Repair, DeleteStale). A kind is
// registered once (Registration), with the function of the object an owner
// asks for, and everything here works for it; nothing here names a kind or
// the Foo's type.
package owned

import (
	"encoding/json"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// What the cache keeps of an owned object.
//
// The cache holds every object the controller manages for as long as it
// runs, so its memory grows with the number of Foos. Most of a served object
// is never read: managedFields, annotations (kubectl's
// last-applied-configuration alone repeats the whole object), the spec
// beyond the fields the controller sets, the reasons, messages and
// timestamps of its conditions. An Object is what is read, and nothing
// else: code cannot read what the cache lacks, it does not compile. Of the
// spec and labels it keeps the values at the fields the registration's For
// sets, whatever they are (Fields): a field For starts to set is cached with
// no edit here; of the status, what the registration's ReadStatus reads.
// Objects the controller gets from the API directly (the result of a create
// or an apply, a GET) are complete; they are read through the same
// Registration.Compact, so the controller judges every object by the same
// few fields.
//
// It is rebuilt from an allow-list of the object's fields, so whatever a
// newer API version adds is dropped by default, and an Object passes through
// the transform unchanged, as client-go requires of a transform that may see
// an object twice (the initial sync of a watch-list stream passes every
// object through it once into a temporary store and again when that store's
// whole content replaces the informer's).
//
// A served object is not trimmed in place: a Deployment's Go type is large
// whatever it holds (the pod template is inline), and its label maps cost
// far more than the few labels they hold; an Object shares none of it
// (docs/performance.md has the bytes each way).

// Object is what the cache holds of an owned object: the metadata the
// controller reads, the values at the fields it owns, and S, what it reads
// of the status.
type Object[S any] struct {
	// ObjectMeta keeps the name and namespace (the cache key, deletes, log
	// lines and event messages), the uid (the precondition of deleting a
	// stale object), the resourceVersion (the precondition of a repair; an
	// update handler tells a resync from a change by it), the generation
	// (has the kind's own controller seen the latest spec?) and the
	// controller reference alone among the owner references (which owner
	// controls it: the event handlers, the controller-UID index,
	// ControlledBy). Its Labels stay empty: Values has what is read of them.
	// Embedding it makes an Object a metav1.Object, which the informer's
	// keys and tombstones need.
	metav1.ObjectMeta

	// Values holds, as JSON, the object's values at the fields the
	// controller owns (Fields.Values), and only those: another team's
	// labels, containers and defaults are not kept. Registration.Drift compares
	// the wanted values with them. Empty only when they could not be encoded,
	// which Drift reports.
	Values string

	// Status is what the controller reads of the object's status. S holds
	// values only (no pointer, slice or map): a copy of an Object is a deep
	// copy.
	Status S

	// ManagedByUpdate: the object's managedFields record fields under the
	// controller's field manager as an update, not an apply, as a plain
	// create records what it set (and an older release of the controller,
	// or a hand-made object it adopted, may have left). A forced apply gives
	// up only what its manager's apply owned: the repair hands the fields
	// over first (Registration.handToApply).
	ManagedByUpdate bool
}

// An Object is a runtime.Object, as client-go expects of what an informer
// caches: its cache mutation detector (KUBE_CACHE_MUTATION_DETECTOR) copies
// each cached object to check that nobody modifies it, and its watch-list
// consistency check (KUBE_WATCHLIST_INCONSISTENCY_DETECTOR) compares the
// cache with a list. It has no kind of its own: it is never sent to or
// decoded from the API server.

// GetObjectKind implements runtime.Object.
func (o *Object[S]) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (o *Object[S]) DeepCopyObject() runtime.Object { return o.DeepCopy() }

// DeepCopy returns a copy of o that shares nothing with it but strings.
func (o *Object[S]) DeepCopy() *Object[S] {
	if o == nil {
		return nil
	}
	out := *o // Values is a string and Status holds values only
	o.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// Compact returns what the cache keeps of obj, its Object. obj is not modified, and the
// result shares none of its structs, maps or slices (only strings, which
// the decoders allocate one by one), so obj can be collected at once.
func (r *Registration[O, T, L, AC, S]) Compact(obj T) *Object[S] {
	meta := any(obj).(metav1.Object)
	// An error leaves Values empty, and Drift reports it where it can be
	// returned: the sync of the Foo.
	var values string
	if fields, err := r.Fields(); err == nil {
		values, _ = fields.Values(obj)
	}
	return &Object[S]{
		ObjectMeta: metav1.ObjectMeta{
			Name:            meta.GetName(),
			Namespace:       intern(meta.GetNamespace()),
			UID:             meta.GetUID(),
			ResourceVersion: meta.GetResourceVersion(),
			Generation:      meta.GetGeneration(),
			OwnerReferences: controllerReferenceOnly(meta.GetOwnerReferences()),
		},
		Values: values,
		Status: r.ReadStatus(obj),
	}
}

// CompactFor is Compact for a controller whose field manager is manager: it
// also records whether manager's fields are still an update's
// (ManagedByUpdate).
func (r *Registration[O, T, L, AC, S]) CompactFor(obj T, manager string) *Object[S] {
	cached := r.Compact(obj)
	for _, entry := range any(obj).(metav1.Object).GetManagedFields() {
		if entry.Manager == manager && entry.Operation == metav1.ManagedFieldsOperationUpdate && entry.Subresource == "" {
			cached.ManagedByUpdate = true
		}
	}
	return cached
}

// TransformFor is the transform of the kind's informer for a controller
// whose field manager is manager: it turns a T into its Object (CompactFor);
// anything else, an Object or a cache.DeletedFinalStateUnknown tombstone
// (whose object was turned when it entered the cache) among them, passes
// through unchanged.
func (r *Registration[O, T, L, AC, S]) TransformFor(manager string) cache.TransformFunc {
	return func(obj interface{}) (interface{}, error) {
		if o, ok := obj.(T); ok {
			if v := reflect.ValueOf(o); v.Kind() != reflect.Pointer || !v.IsNil() {
				return r.CompactFor(o, manager), nil
			}
		}
		return obj, nil
	}
}

// Drift lists the fields the controller owns that differ in actual from
// want, an apply configuration of T (Fields.Drift).
func (r *Registration[O, T, L, AC, S]) Drift(want interface{}, actual *Object[S]) ([]string, error) {
	fields, err := r.Fields()
	if err != nil {
		return nil, err
	}
	return fields.Drift(want, actual.Namespace+"/"+actual.Name, actual.Values)
}

// controllerReferenceOnly returns the owner reference metav1.GetControllerOf
// would find (the first with controller=true), without blockOwnerDeletion,
// or nil. Other owners are never read.
func controllerReferenceOnly(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for _, ref := range refs {
		if ref.Controller != nil && *ref.Controller {
			return []metav1.OwnerReference{{
				APIVersion: intern(ref.APIVersion),
				Kind:       intern(ref.Kind),
				Name:       ref.Name,
				UID:        ref.UID,
				Controller: ptr.To(true),
			}}
		}
	}
	return nil
}

// Strings that every cached object holds are kept once rather than once per
// object: the controller reference's apiVersion and kind, and the
// namespace. interned only grows, by a string per namespace that ever held
// a managed object and per apiVersion and kind of their controllers. (unique.Make
// would not do: its table forgets a string once no unique.Handle to it is
// alive, at the next collection, and the next object would get a copy of
// its own.)
var interned sync.Map

// intern returns the program's copy of s.
func intern(s string) string {
	c, _ := interned.LoadOrStore(s, s)
	return c.(string)
}

// ToObject turns ac, an apply configuration, into into, an object of
// its kind, for a plain create. An apply configuration serializes to exactly
// the fields it sets, so the round trip through JSON yields the same object
// an apply would create.
func ToObject(ac interface{}, into runtime.Object) error {
	data, err := json.Marshal(ac)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}
