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
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// A value the controller copies from its Foo (a replica count, a name)
// differs between the probes, so no probe pins it; it is bounded instead
// as the Foo's own schema bounds the field it is copied from, read off the
// CRD that controller-gen generates from the Foo's types: a field's bounds
// that change there move the policy with them. Which field a value follows
// is found as pkg/desired finds the fields it sets, by probing: each field
// of the Foo's spec is changed alone, and a value of the object that then
// changes, to the field's own value, is that field's copy.

// fieldSchema is what a CRD's structural schema says of a field, as far as
// it bounds the field's value.
type fieldSchema struct {
	Properties       map[string]fieldSchema `json:"properties,omitempty"`
	Minimum          *float64               `json:"minimum,omitempty"`
	Maximum          *float64               `json:"maximum,omitempty"`
	ExclusiveMinimum bool                   `json:"exclusiveMinimum,omitempty"`
	ExclusiveMaximum bool                   `json:"exclusiveMaximum,omitempty"`
	MinLength        *int64                 `json:"minLength,omitempty"`
	MaxLength        *int64                 `json:"maxLength,omitempty"`
	Pattern          string                 `json:"pattern,omitempty"`
	Enum             []any                  `json:"enum,omitempty"`
}

// bounded reports whether s bounds a value at all.
func (s fieldSchema) bounded() bool {
	return s.Minimum != nil || s.Maximum != nil || s.MinLength != nil || s.MaxLength != nil || s.Pattern != "" ||
		len(s.Enum) > 0
}

// fooCRD is the Foo's CustomResourceDefinition, as far as the generator
// reads it (the module does not depend on the apiextensions types).
type fooCRD struct {
	Spec struct {
		Group    string `json:"group"`
		Versions []struct {
			Name   string `json:"name"`
			Served bool   `json:"served"`
			Schema struct {
				OpenAPIV3Schema fieldSchema `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// readCRD reads the CRD manifest at path.
func readCRD(path string) (*fooCRD, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &fooCRD{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crd, nil
}

// servedVersions are the apiVersions the CRD serves Foos in: those a
// controller reference may name and the garbage collector still resolve.
func (crd *fooCRD) servedVersions() []string {
	var versions []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			versions = append(versions, crd.Spec.Group+"/"+v.Name)
		}
	}
	return versions
}

// schema is the CRD's schema of the Foo version the probes are.
func (crd *fooCRD) schema() (fieldSchema, error) {
	for _, v := range crd.Spec.Versions {
		if v.Name == samplev1beta1.SchemeGroupVersion.Version {
			return v.Schema.OpenAPIV3Schema, nil
		}
	}
	return fieldSchema{}, fmt.Errorf("the CRD has no version %s, the Foo's the controller reads",
		samplev1beta1.SchemeGroupVersion.Version)
}

// at is the schema of the field at path (spec.replicas), and whether the
// schema has one.
func (s fieldSchema) at(path string) (fieldSchema, bool) {
	for _, name := range strings.Split(path, ".") {
		child, ok := s.Properties[name]
		if !ok {
			return fieldSchema{}, false
		}
		s = child
	}
	return s, true
}

// bound is what a Foo's schema allows of field, whose value the controller
// copies into its object.
type bound struct {
	field  string // of the Foo: spec.replicas
	schema fieldSchema
}

// cel is the CEL condition that v, a value of the object, is within b.
func (b bound) cel(v string) string {
	s := b.schema
	var parts []string
	compare := func(limit *float64, exclusive bool, op string) {
		if limit == nil {
			return
		}
		if !exclusive {
			op += "="
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", v, op, literal(*limit)))
	}
	compare(s.Minimum, s.ExclusiveMinimum, ">")
	compare(s.Maximum, s.ExclusiveMaximum, "<")
	if s.MinLength != nil {
		parts = append(parts, fmt.Sprintf("size(%s) >= %d", v, *s.MinLength))
	}
	if s.MaxLength != nil {
		parts = append(parts, fmt.Sprintf("size(%s) <= %d", v, *s.MaxLength))
	}
	if s.Pattern != "" {
		parts = append(parts, fmt.Sprintf("%s.matches(%s)", v, literal(s.Pattern)))
	}
	if len(s.Enum) > 0 {
		parts = append(parts, fmt.Sprintf("%s in %s", v, literal(s.Enum)))
	}
	return strings.Join(parts, " && ")
}

// describe says what b allows, for a message: "at least 1 and at most
// 10", "1 to 253 characters long, matching '^[a-z]+$'".
func (b bound) describe() string {
	s := b.schema
	var limits, parts []string
	limit := func(value *float64, exclusive bool, inclusiveWord, exclusiveWord string) {
		if value == nil {
			return
		}
		word := inclusiveWord
		if exclusive {
			word = exclusiveWord
		}
		limits = append(limits, word+" "+literal(*value))
	}
	limit(s.Minimum, s.ExclusiveMinimum, "at least", "more than")
	limit(s.Maximum, s.ExclusiveMaximum, "at most", "less than")
	if len(limits) > 0 {
		parts = append(parts, strings.Join(limits, " and "))
	}
	switch {
	case s.MinLength != nil && s.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("%d to %d characters long", *s.MinLength, *s.MaxLength))
	case s.MinLength != nil:
		parts = append(parts, fmt.Sprintf("at least %d characters long", *s.MinLength))
	case s.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("at most %d characters long", *s.MaxLength))
	}
	if s.Pattern != "" {
		parts = append(parts, "matching "+literal(s.Pattern))
	}
	if len(s.Enum) > 0 {
		parts = append(parts, "one of "+literal(s.Enum))
	}
	return strings.Join(parts, ", ")
}

// followedFields returns, for each value of the object the controller asks
// for (kindFor) that is a copy of a field of the Foo's spec that spec bounds,
// that field's bound, by the value's path (list elements by name:
// spec.template.spec.containers[name=nginx].image).
func followedFields(kindFor func(*samplev1beta1.Foo) any, spec fieldSchema) (map[string]bound, error) {
	base := probe(0)
	baseValues, err := scalars(kindFor(base))
	if err != nil {
		return nil, err
	}
	other := probe(1)
	bounds := map[string]bound{}
	for _, f := range specFields(reflect.TypeFor[samplev1beta1.FooSpec](), "spec", nil) {
		schema, ok := spec.at(f.path)
		if !ok || !schema.bounded() {
			continue
		}
		varied := probe(0)
		field := func(foo *samplev1beta1.Foo) reflect.Value {
			return fieldByIndex(reflect.ValueOf(&foo.Spec).Elem(), f.index)
		}
		field(varied).Set(field(other))
		values, err := scalars(kindFor(varied))
		if err != nil {
			return nil, err
		}
		was, is := jsonOf(field(base)), jsonOf(field(varied))
		for _, path := range slices.Sorted(maps.Keys(values)) {
			if values[path] != baseValues[path] && baseValues[path] == was && values[path] == is {
				bounds[path] = bound{field: f.path, schema: schema}
			}
		}
	}
	return bounds, nil
}

// specField is a field of the Foo's spec that holds a value: its JSON path
// and its index path in the Go struct.
type specField struct {
	path  string
	index []int
}

// specFields lists the fields of t (a struct, or a pointer to one) that
// hold a value, at path.
func specFields(t reflect.Type, path string, index []int) []specField {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return []specField{{path: path, index: index}}
	}
	var fields []specField
	for i := range t.NumField() {
		field := t.Field(i)
		name := strings.Split(field.Tag.Get("json"), ",")[0]
		if !field.IsExported() || name == "-" {
			continue
		}
		fieldPath := path
		if name != "" { // else inlined
			fieldPath = path + "." + name
		}
		fields = append(fields, specFields(field.Type, fieldPath, append(slices.Clip(index), i))...)
	}
	return fields
}

// fieldByIndex is v's field at index, through the pointers the probes set.
func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for _, i := range index {
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v
}

// jsonOf is v as JSON, through its pointer if it is one.
func jsonOf(v reflect.Value) string {
	data, _ := json.Marshal(v.Interface())
	return string(data)
}

// scalars lists the values of obj, as JSON, by their path (scalarsAt).
func scalars(obj any) (map[string]string, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	values := map[string]string{}
	scalarsAt(v, "", values)
	return values, nil
}

// scalarsAt adds to values the scalars of v at path: a.b for a map's key,
// a[name=x] for an element of a list named x, a[0] for one unnamed.
func scalarsAt(v any, path string, values map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			scalarsAt(child, join(path, k), values)
		}
	case []any:
		for i, e := range v {
			key := fmt.Sprintf("%s[%d]", path, i)
			if element, ok := e.(map[string]any); ok {
				if name, ok := element["name"].(string); ok {
					key = fmt.Sprintf("%s[name=%s]", path, name)
				}
			}
			scalarsAt(e, key, values)
		}
	default:
		data, _ := json.Marshal(v)
		values[path] = string(data)
	}
}
