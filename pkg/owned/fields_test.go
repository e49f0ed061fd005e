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
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// podSchema is a server-side apply schema of a small kind: a spec holding
// a list of containers keyed by name, as a pod template's is, and a map of
// labels.
const podSchema = `types:
- name: pod
  map:
    fields:
    - name: metadata
      type:
        namedType: meta
    - name: spec
      type:
        namedType: spec
- name: meta
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: labels
      type:
        map:
          elementType:
            scalar: string
- name: spec
  map:
    fields:
    - name: containers
      type:
        list:
          elementType:
            namedType: container
          elementRelationship: associative
          keys:
          - name
- name: container
  map:
    fields:
    - name: name
      type:
        scalar: string
    - name: image
      type:
        scalar: string
`

type pod struct {
	Metadata meta    `json:"metadata"`
	Spec     podSpec `json:"spec"`
}

type meta struct {
	Name   string            `json:"name,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

type podSpec struct {
	Containers []container `json:"containers,omitempty"`
}

type container struct {
	Name  string `json:"name"`
	Image string `json:"image,omitempty"`
}

// served is a pod as a cluster would serve it: the controller's container
// and label, and another team's.
func served() *pod {
	return &pod{
		Metadata: meta{Name: "web", Labels: map[string]string{"app": "web", "team": "payments"}},
		Spec: podSpec{Containers: []container{
			{Name: "nginx", Image: "nginx:latest"}, {Name: "log-shipper", Image: "fluent-bit:3"}}},
	}
}

func podFields(t *testing.T, probes [2]interface{}) *Fields {
	t.Helper()
	parser, err := typed.NewParser(typed.YAMLObject(podSchema))
	if err != nil {
		t.Fatal(err)
	}
	typ := parser.Type("pod")
	f, err := NewFields("Pod", typ, probes)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The cache keeps a list element the desired state sets by the keys it sets:
// the controller's container by its name, which is the same for every
// owner, and not another team's; but when the key comes from the owner (as a
// port from its spec would), every element, each with only the fields the
// desired state sets.
func TestValuesFindListElementsByKey(t *testing.T) {
	containers := func(names ...string) map[string]interface{} {
		list := make([]interface{}, 0, len(names))
		for _, n := range names {
			list = append(list, map[string]interface{}{"name": n, "image": "any"})
		}
		return map[string]interface{}{"spec": map[string]interface{}{"containers": list}}
	}
	for name, tc := range map[string]struct {
		p1, p2 map[string]interface{}
		want   string
	}{
		"a key the same for every owner": {containers("nginx"), containers("nginx"),
			`{"spec":{"containers":[{"image":"nginx:latest","name":"nginx"}]}}`},
		"a key from the owner": {containers("x1"), containers("x2"),
			`{"spec":{"containers":[{"image":"nginx:latest","name":"nginx"},{"image":"fluent-bit:3","name":"log-shipper"}]}}`},
		"a key no container has": {containers("web"), containers("web"), `{"spec":{"containers":[]}}`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := podFields(t, [2]interface{}{tc.p1, tc.p2}).Values(served())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("kept %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Drift names the owned fields that differ or are missing, as server-side
// apply names them, and nothing another manager owns: not another team's
// label, not another container.
func TestDriftNamesOwnedFieldsOnly(t *testing.T) {
	wanted := func(image string) map[string]interface{} {
		return map[string]interface{}{
			"metadata": map[string]interface{}{"name": "web", "labels": map[string]interface{}{"app": "web"}},
			"spec": map[string]interface{}{"containers": []interface{}{
				map[string]interface{}{"name": "nginx", "image": image}}},
		}
	}
	f := podFields(t, [2]interface{}{wanted("nginx:latest"), wanted("nginx:latest")})
	for name, tc := range map[string]struct {
		edit func(p *pod)
		want string
	}{
		"as desired":            {func(*pod) {}, ""},
		"another team's label":  {func(p *pod) { p.Metadata.Labels["team"] = "billing" }, ""},
		"another container":     {func(p *pod) { p.Spec.Containers[1].Image = "fluent-bit:4" }, ""},
		"our label removed":     {func(p *pod) { delete(p.Metadata.Labels, "app") }, ".metadata.labels.app"},
		"our container changed": {func(p *pod) { p.Spec.Containers[0].Image = "busybox" }, `.spec.containers[name="nginx"].image`},
		"our container removed": {func(p *pod) { p.Spec.Containers = p.Spec.Containers[1:] }, `.spec.containers[name="nginx"]`},
	} {
		t.Run(name, func(t *testing.T) {
			p := served()
			tc.edit(p)
			values, err := f.Values(p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Drift(wanted("nginx:latest"), "default/web", values)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("drift %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := f.Drift(wanted("nginx:latest"), "default/web", ""); err == nil ||
		err.Error() != "cached Pod default/web: the cache kept none of its values" {
		t.Errorf("drift of no values: %v, want the error that says so", err)
	}
}

// Drift of an object as wanted compares the two values' text: it costs what
// the wanted's values cost, with no parse of the cached values and no walk
// of both by the schema. The values changed, the schema still names the
// field.
func TestDriftOfAnObjectAsWantedComparesTextOnly(t *testing.T) {
	wanted := func(image string) *pod {
		return &pod{Metadata: meta{Labels: map[string]string{"app": "web"}},
			Spec: podSpec{Containers: []container{{Name: "nginx", Image: image}}}}
	}
	f := podFields(t, [2]interface{}{wanted("nginx:latest"), wanted("nginx:latest")})
	values, err := f.Values(served())
	if err != nil {
		t.Fatal(err)
	}
	want := wanted("nginx:latest")
	if drift, err := f.Drift(want, "default/web", values); err != nil || drift != nil {
		t.Fatalf("drift of the pod as wanted: %q, %v; want none", drift, err)
	}
	ofValues := testing.AllocsPerRun(100, func() { _, _ = f.Values(want) })
	ofDrift := testing.AllocsPerRun(100, func() { _, _ = f.Drift(want, "default/web", values) })
	if ofDrift != ofValues {
		t.Errorf("Drift of the pod as wanted made %v allocations, the wanted's values alone %v: it did more than "+
			"compare their text", ofDrift, ofValues)
	}
	drift, err := f.Drift(wanted("busybox"), "default/web", values)
	if err != nil || strings.Join(drift, ",") != `.spec.containers[name="nginx"].image` {
		t.Errorf("drift of another image: %q, %v; want the container's image", drift, err)
	}
}

// Values of an object of another shape than the schema is an error, not a
// silent mismatch.
func TestValuesOfAnotherShapeIsAnError(t *testing.T) {
	f := podFields(t, [2]interface{}{map[string]interface{}{}, map[string]interface{}{}})
	v, err := value.NewValueReflect(served())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.typed(v); err != nil {
		t.Fatalf("a pod does not type as a pod: %v", err)
	}
	data, _ := json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"containers": "nginx"}})
	if _, err := f.Drift(map[string]interface{}{}, "default/web", string(data)); err == nil {
		t.Error("values of another shape gave no error")
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
	EveryFieldSet(reflect.ValueOf(&got).Elem(), 2)
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
