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
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// The fields the cache keeps of every Deployment are the fields
// DesiredDeployment sets, without the identity and the owner reference, as
// server-side apply names them. When the mapping sets a new field, this list
// grows by it: the one expectation to update.
func TestOwnedFieldsAreTheDesiredOnes(t *testing.T) {
	fields, err := ownedFields()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	fields.Iterate(func(p fieldpath.Path) { got = append(got, p.String()) })
	want := []string{
		".metadata.labels.app",
		".metadata.labels.app.kubernetes.io/managed-by",
		".metadata.labels.controller",
		".spec.replicas",
		".spec.selector",
		".spec.template.metadata.labels.app",
		".spec.template.metadata.labels.controller",
		`.spec.template.spec.containers[name="nginx"]`,
		`.spec.template.spec.containers[name="nginx"].image`,
		`.spec.template.spec.containers[name="nginx"].name`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("owned fields:\n%s", diff.Diff(want, got))
	}
}

// The probe Foo whose desired Deployment names the owned fields has every
// spec field set, so that a field the mapping sets only when the Foo asks
// for it is among them: every kind of field a spec can have gets a value,
// and a value already there is kept.
func TestEveryFieldSetSetsEveryField(t *testing.T) {
	type nested struct{ Port int32 }
	type spec struct {
		Name     string
		Replicas *int32
		Port     uint16
		Ratio    float64
		Enabled  bool
		Nested   nested
		Optional *nested
		Ports    []nested
		Labels   map[string]string
		Kept     string
		private  string
	}
	got := spec{Kept: "kept"}
	everyFieldSet(reflect.ValueOf(&got).Elem())
	want := spec{
		Name:     "x",
		Replicas: ptr.To[int32](1),
		Port:     1,
		Ratio:    1,
		Enabled:  true,
		Nested:   nested{Port: 1},
		Optional: &nested{Port: 1},
		Ports:    []nested{{Port: 1}},
		Labels:   map[string]string{"x": "x"},
		Kept:     "kept",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("probe:\n%s", diff.Diff(want, got))
	}
}
