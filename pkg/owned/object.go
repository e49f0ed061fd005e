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

// Package owned is what every kind a Foo owns shares, and nothing else: the
// relationship (which owner controls an object: ControllerRef, the
// controller-UID index, the informer of the objects the controller manages),
// what the cache keeps of any object's metadata (CompactMeta), which of its
// fields are the controller's and how they drifted (Fields), and the small
// rules every write follows (IsRefused, HandToApply). kube-controller-manager's
// pkg/controller keeps generic the same part (ControllerRefManager); each
// kind is written with its typed client by its own code: the Deployment's,
// upstream's steps, in the repository root's writes.go. Nothing here names a
// kind or the Foo's type.
package owned

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/utils/ptr"
)

// CompactMeta is what the cache keeps of an owned object's metadata: the
// name and namespace (the cache key, deletes, log lines and event messages),
// the uid (the precondition of deleting a stale object), the resourceVersion
// (the precondition of a repair; an update handler tells a resync from a
// change by it), the generation (has the kind's own controller seen the
// latest spec?) and the controller reference alone among the owner
// references (which owner controls it: the event handlers, the
// controller-UID index, metav1.IsControlledBy). Labels stay empty: the
// cached object's Values have what is read of them. It shares none of obj's
// maps or slices, so obj can be collected at once.
func CompactMeta(obj metav1.Object) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            obj.GetName(),
		Namespace:       intern(obj.GetNamespace()),
		UID:             obj.GetUID(),
		ResourceVersion: obj.GetResourceVersion(),
		Generation:      obj.GetGeneration(),
		OwnerReferences: controllerReferenceOnly(obj.GetOwnerReferences()),
	}
}

// ManagedByUpdate reports whether obj's managedFields record fields under
// manager as an update, not an apply, as a plain create records what it set
// (and an older release of the controller, or a hand-made object it
// adopted, may have left). A forced apply gives up only what its manager's
// apply owned: a field the create set stays the update's, and an apply that
// no longer sets it does not remove it (a port moved from 8080 to 9090 would
// be served twice, and refused). Such fields are handed to the apply first
// (HandToApply).
func ManagedByUpdate(obj metav1.Object, manager string) bool {
	for _, entry := range obj.GetManagedFields() {
		if entry.Manager == manager && entry.Operation == metav1.ManagedFieldsOperationUpdate && entry.Subresource == "" {
			return true
		}
	}
	return false
}

// GetPatcher reads and patches objects of one kind in one namespace: a
// typed client of client-go, such as AppsV1().Deployments(namespace).
type GetPatcher[T runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
		subresources ...string) (T, error)
}

// HandToApply makes the fields the object name records under manager as an
// update (ManagedByUpdate) its apply's, as for a client moving from
// client-side to server-side apply (client-go's csaupgrade), and returns the
// object as it then is. The cache does not keep managedFields, so they are
// read from the API server; cachedVersion is the resourceVersion the repair
// was computed from: an object changed since is a conflict of resource, and
// the owner is synced again once the cache has the change. The patch
// replaces managedFields and tests the resourceVersion read: it is
// conditional on the object read.
func HandToApply[T runtime.Object](ctx context.Context, client GetPatcher[T], resource schema.GroupResource,
	name, cachedVersion, manager string,
) (T, error) {
	served, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return served, err
	}
	accessor, err := apimeta.Accessor(served)
	if err != nil {
		return served, err
	}
	if version := accessor.GetResourceVersion(); version != cachedVersion {
		return served, apierrors.NewConflict(resource, name,
			fmt.Errorf("the cache holds version %s, the API server %s", cachedVersion, version))
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(served, sets.New(manager), manager)
	if err != nil || patch == nil {
		return served, err // nil: handed over already
	}
	return client.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
}

// IsRefused reports whether err is the API server refusing a write for a
// reason its user must address: a quota exceeded, an admission webhook or
// policy that denies it, missing permission, a namespace being deleted. The
// ReplicaSet controller reports such refusals as FailedCreate. Any other
// error (a timeout, throttling, a conflict) is passing, to be retried
// without bothering the user.
func IsRefused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
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
