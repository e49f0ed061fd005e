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
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
)

// The cache keeps a list element the mapping sets by the keys it sets: the
// controller's container by its name, which is the same for every Foo, and
// not another team's; but when the key comes from the Foo (as a port from its
// spec would), every element, each with only the fields the mapping sets.
func TestExtractFindsListElementsByKey(t *testing.T) {
	containers := func(names ...string) map[string]interface{} {
		list := make([]interface{}, 0, len(names))
		for _, n := range names {
			list = append(list, map[string]interface{}{"name": n, "image": "any"})
		}
		return map[string]interface{}{"spec": map[string]interface{}{"template": map[string]interface{}{
			"spec": map[string]interface{}{"containers": list}}}}
	}
	d := completeDeployment(t, testfixtures.NewFoo("test", 1))
	for name, tc := range map[string]struct {
		p1, p2 map[string]interface{}
		want   string
	}{
		"a key the same for every Foo": {containers("nginx"), containers("nginx"),
			`{"spec":{"template":{"spec":{"containers":[{"image":"nginx:latest","name":"nginx"}]}}}}`},
		"a key from the Foo": {containers("x1"), containers("x2"),
			`{"spec":{"template":{"spec":{"containers":[{"image":"nginx:latest","name":"nginx"},{"image":"fluent-bit:3","name":"log-shipper"}]}}}}`},
		"a key no container has": {containers("web"), containers("web"), `{"spec":{"template":{"spec":{"containers":[]}}}}`},
	} {
		t.Run(name, func(t *testing.T) {
			deployment, err := deploymentSchema()
			if err != nil {
				t.Fatal(err)
			}
			v, err := value.NewValueReflect(d)
			if err != nil {
				t.Fatal(err)
			}
			kept, _ := extract(deployment.Schema, deployment.TypeRef, v, tc.p1, tc.p2)
			if kept == nil {
				kept = map[string]interface{}{}
			}
			got, err := json.Marshal(kept)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("kept %s\nwant %s", got, tc.want)
			}
		})
	}
}

// The probe Foos whose desired Deployments name the owned fields have every
// spec field set, so that a field the mapping sets only when the Foo asks
// for it is among them: every kind of field a spec can have gets a value
// from the seed, and a value already there is kept.
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
		private  string //nolint:unused // an unexported field, which the probe leaves alone
	}
	got := spec{Kept: "kept"}
	everyFieldSet(reflect.ValueOf(&got).Elem(), 2)
	want := spec{
		Name:     "x2",
		Replicas: ptr.To[int32](2),
		Port:     2,
		Ratio:    2,
		Enabled:  true,
		Nested:   nested{Port: 2},
		Optional: &nested{Port: 2},
		Ports:    []nested{{Port: 2}},
		Labels:   map[string]string{"x2": "x2"},
		Kept:     "kept",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("probe:\n%s", diff.Diff(want, got))
	}
}
