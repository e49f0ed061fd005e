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

package owned

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// ControllerRef returns the object's controller reference when its
// controller is of owner's group and kind, in any version, else nil. An
// owner reference keeps the apiVersion it was written with, so once the
// owner's API serves a second version, the objects made before name the
// first one, and those made after may name either. Whether it is a given
// owner is its UID's to say (ControlledBy), as kube-controller-manager's
// controllers match the kind and then the UID.
func ControllerRef(object metav1.Object, owner schema.GroupKind) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(object)
	if ref == nil || ref.Kind != owner.Kind {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != owner.Group {
		return nil
	}
	return ref
}

// ControlledBy reports whether owner, of group and kind gk, controls object:
// its controller reference names gk (ControllerRef) with owner's UID.
// metav1.IsControlledBy compares the UID alone; this also checks the group
// and kind, so that every path (the event handlers, the index, the writes)
// agrees on what an owner controls.
func ControlledBy(object, owner metav1.Object, gk schema.GroupKind) bool {
	ref := ControllerRef(object, gk)
	return ref != nil && ref.UID == owner.GetUID()
}

// ByControllerUID is the index of an owned kind's cache that finds the
// objects an owner controls, by the owner's UID, whatever their name: so
// that renaming what an owner asks for removes the old object.
const ByControllerUID = "controllerUID"

// Indexers are the indexes of the cache of a kind owned by owners of group
// and kind gk.
func Indexers(gk schema.GroupKind) cache.Indexers {
	return cache.Indexers{ByControllerUID: func(obj interface{}) ([]string, error) {
		object, ok := obj.(metav1.Object)
		if !ok {
			return nil, nil
		}
		ref := ControllerRef(object, gk)
		if ref == nil {
			return nil, nil
		}
		return []string{string(ref.UID)}, nil
	}}
}

// ObjectOf returns obj, an informer's object, or the last state a tombstone
// (cache.DeletedFinalStateUnknown: a delete the watch missed) holds, as a
// metav1.Object; false, with the error handled, for anything else.
func ObjectOf(obj interface{}) (metav1.Object, bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	object, ok := obj.(metav1.Object)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("error decoding object, invalid type %T", obj))
	}
	return object, ok
}
