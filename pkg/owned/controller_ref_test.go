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
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

var widget = schema.GroupKind{Group: "example.com", Kind: "Widget"}

func controlledBy(ref metav1.OwnerReference) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: "web", Namespace: "default", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "not-the-controller", UID: "uid-cm"}, ref}}
}

// An owner is its group and kind, in any version, and then its UID: the
// objects made before a second version was served name the first one.
func TestControllerIsMatchedByGroupAndKindThenUID(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "w", UID: "uid-w"}
	for name, tc := range map[string]struct {
		ref                metav1.OwnerReference
		isWidget, isOwners bool
	}{
		"the version it was made with": {metav1.OwnerReference{APIVersion: "example.com/v1beta1", Kind: "Widget",
			Name: "w", UID: "uid-w", Controller: ptr.To(true)}, true, true},
		"another version": {metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget",
			Name: "w", UID: "uid-w", Controller: ptr.To(true)}, true, true},
		"another Widget": {metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget",
			Name: "w", UID: "uid-older-w", Controller: ptr.To(true)}, true, false},
		"another group": {metav1.OwnerReference{APIVersion: "example.org/v1", Kind: "Widget",
			Name: "w", UID: "uid-w", Controller: ptr.To(true)}, false, false},
		"another kind": {metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Gadget",
			Name: "w", UID: "uid-w", Controller: ptr.To(true)}, false, false},
		"an owner, not the controller": {metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget",
			Name: "w", UID: "uid-w"}, false, false},
		"a malformed apiVersion": {metav1.OwnerReference{APIVersion: "example.com/v1/x", Kind: "Widget",
			Name: "w", UID: "uid-w", Controller: ptr.To(true)}, false, false},
	} {
		t.Run(name, func(t *testing.T) {
			object := controlledBy(tc.ref)
			if got := ControllerRef(object, widget) != nil; got != tc.isWidget {
				t.Errorf("controlled by a Widget: %v, want %v", got, tc.isWidget)
			}
			if got := ControlledBy(object, owner, widget); got != tc.isOwners {
				t.Errorf("controlled by Widget uid-w: %v, want %v", got, tc.isOwners)
			}
			keys, err := Indexers(widget)[ByControllerUID](object)
			if err != nil {
				t.Fatal(err)
			}
			want := ""
			if tc.isWidget {
				want = string(tc.ref.UID)
			}
			if got := firstOrNone(keys); got != want {
				t.Errorf("indexed under %q, want %q", got, want)
			}
		})
	}
}

func firstOrNone(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}
