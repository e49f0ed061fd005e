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

package main

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

// The CRD manifest is written by hand; these tests keep it consistent with
// the Go types and with the controller's own validation.

type object = map[string]interface{}

func loadCRD(t *testing.T, path string) object {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd object
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// get walks nested maps (and the first element of "versions").
func get(t *testing.T, o interface{}, path ...string) interface{} {
	t.Helper()
	for _, p := range path {
		m, ok := o.(object)
		if !ok {
			t.Fatalf("%s: not an object", strings.Join(path, "."))
		}
		o = m[p]
		if list, ok := o.([]interface{}); ok && p == "versions" {
			if len(list) != 1 {
				t.Fatalf("want exactly one version, got %d", len(list))
			}
			o = list[0]
		}
	}
	return o
}

// jsonFields lists the JSON field names of a struct type.
func jsonFields(typ reflect.Type) []string {
	var names []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func keys(o interface{}) []string {
	var names []string
	for k := range o.(object) {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func TestCRDMatchesTypes(t *testing.T) {
	crd := loadCRD(t, "artifacts/examples/crd.yaml")
	spec := get(t, crd, "spec")
	for path, want := range map[string]interface{}{
		"group":          samplecontroller.GroupName,
		"scope":          "Namespaced",
		"names.kind":     "Foo",
		"names.plural":   "foos",
		"names.listKind": "FooList",
		"versions.name":  samplev1alpha1.SchemeGroupVersion.Version,
	} {
		if got := get(t, spec, strings.Split(path, ".")...); got != want {
			t.Errorf("spec.%s = %v, want %v", path, got, want)
		}
	}
	if got := get(t, crd, "metadata", "name"); got != samplev1alpha1.FooCRDName {
		t.Errorf("metadata.name = %v, want %s", got, samplev1alpha1.FooCRDName)
	}

	schema := get(t, spec, "versions", "schema", "openAPIV3Schema", "properties")
	if got, want := keys(get(t, schema, "spec", "properties")), jsonFields(reflect.TypeFor[samplev1alpha1.FooSpec]()); !reflect.DeepEqual(got, want) {
		t.Errorf("spec properties %v, Go FooSpec fields %v", got, want)
	}
	if got, want := keys(get(t, schema, "status", "properties")), jsonFields(reflect.TypeFor[samplev1alpha1.FooStatus]()); !reflect.DeepEqual(got, want) {
		t.Errorf("status properties %v, Go FooStatus fields %v", got, want)
	}

	replicas := get(t, schema, "spec", "properties", "replicas").(object)
	if replicas["minimum"] != float64(samplev1alpha1.MinReplicas) || replicas["maximum"] != float64(samplev1alpha1.MaxReplicas) ||
		replicas["default"] != float64(samplev1alpha1.MinReplicas) {
		t.Errorf("spec.replicas bounds/default in the CRD %v, Go %d..%d default %d", replicas,
			samplev1alpha1.MinReplicas, samplev1alpha1.MaxReplicas, samplev1alpha1.MinReplicas)
	}
	if req := get(t, schema, "spec", "required"); !reflect.DeepEqual(req, []interface{}{"deploymentName"}) {
		t.Errorf("spec.required = %v", req)
	}

	// The scale subresource and the printer columns point at real fields.
	scale := get(t, spec, "versions", "subresources", "scale").(object)
	for _, p := range []string{"specReplicasPath", "statusReplicasPath", "labelSelectorPath"} {
		field := strings.Split(strings.TrimPrefix(scale[p].(string), "."), ".")
		if get(t, schema, field[0], "properties", field[1]) == nil {
			t.Errorf("scale %s %v names no field of the schema", p, scale[p])
		}
	}
	if get(t, spec, "versions", "subresources", "status") == nil {
		t.Error("status subresource not enabled")
	}
	var columns []string
	for _, c := range get(t, spec, "versions", "additionalPrinterColumns").([]interface{}) {
		columns = append(columns, c.(object)["name"].(string))
	}
	if got := strings.Join(columns, ","); got != "Deployment,Desired,Available,Ready,Age" {
		t.Errorf("printer columns %s", got)
	}
}

// The CRD's pattern for spec.deploymentName must accept exactly what the
// controller's validation accepts.
func TestCRDPatternMatchesValidation(t *testing.T) {
	crd := loadCRD(t, "artifacts/examples/crd.yaml")
	name := get(t, crd, "spec", "versions", "schema", "openAPIV3Schema", "properties", "spec", "properties", "deploymentName").(object)
	pattern := regexp.MustCompile(name["pattern"].(string))
	maxLength := int(name["maxLength"].(float64))
	for _, s := range []string{
		"a", "example-foo", "a.b", "a-b.c-d", "0abc", strings.Repeat("a", 253), strings.Repeat("a", 254),
		"Bad_Name", "A", "-a", "a-", "a..b", ".a", "a.", "a_b", "", "a b",
	} {
		crdAccepts := pattern.MatchString(s) && len(s) <= maxLength && len(s) >= 1
		goAccepts := len(validation.IsDNS1123Subdomain(s)) == 0
		if crdAccepts != goAccepts {
			t.Errorf("%q: CRD accepts %v, controller accepts %v", s, crdAccepts, goAccepts)
		}
	}
}

// crd-status-subresource.yaml is the same CRD under its classic name.
func TestCRDVariantsAreTheSame(t *testing.T) {
	a := loadCRD(t, "artifacts/examples/crd.yaml")
	b := loadCRD(t, "artifacts/examples/crd-status-subresource.yaml")
	if !equality.Semantic.DeepEqual(a, b) {
		t.Error("artifacts/examples/crd-status-subresource.yaml differs from crd.yaml")
	}
}
