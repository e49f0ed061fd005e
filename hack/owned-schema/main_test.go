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
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// A schema in which the root refers to types through a field, a map's
// elements, a list's elements, an inlined type and itself; and to none of
// "unused".
const small = `types:
- name: root
  map:
    fields:
    - name: spec
      type:
        namedType: spec
    - name: labels
      type:
        map:
          elementType:
            namedType: label
    - name: self
      type:
        namedType: root
- name: spec
  map:
    fields:
    - name: items
      type:
        list:
          elementType:
            namedType: item
          elementRelationship: atomic
- name: item
  scalar: string
- name: label
  scalar: string
- name: unused
  map:
    fields:
    - name: spec
      type:
        namedType: spec
`

func parse(t *testing.T, text string) *schema.Schema {
	t.Helper()
	p, err := typed.NewParser(typed.YAMLObject(text))
	if err != nil {
		t.Fatal(err)
	}
	return &p.Schema
}

func named(name string) schema.TypeRef { return schema.TypeRef{NamedType: &name} }

func TestReachableKeepsEveryTypeTheRootRefersToSorted(t *testing.T) {
	subset, err := reachable(parse(t, small), named("root"))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(subset.Types))
	for _, td := range subset.Types {
		got = append(got, td.Name)
	}
	if want := []string{"item", "label", "root", "spec"}; !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
}

func TestReachableRefusesAReferenceToNoType(t *testing.T) {
	broken := strings.Replace(small, "namedType: item", "namedType: missing", 1)
	if _, err := reachable(parse(t, broken), named("root")); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("error %v, want one naming the type \"missing\"", err)
	}
}

// What is written reads back as the types it was cut from; a type that
// reads back otherwise (here: one the original schema defines differently)
// is refused.
func TestWrittenSchemaMustReadBackAsTheOriginal(t *testing.T) {
	full := parse(t, small)
	subset, err := reachable(full, named("root"))
	if err != nil {
		t.Fatal(err)
	}
	text, err := yaml.Marshal(subset)
	if err != nil {
		t.Fatal(err)
	}
	if err := readsBackAsClientGoHasIt(text, full, "root"); err != nil {
		t.Errorf("the written schema: %v\n%s", err, text)
	}
	other := parse(t, strings.Replace(small, "- name: item\n  scalar: string", "- name: item\n  scalar: numeric", 1))
	if err := readsBackAsClientGoHasIt(text, other, "root"); err == nil || !strings.Contains(err.Error(), "item") {
		t.Errorf("error %v, want one naming the type item", err)
	}
	if err := readsBackAsClientGoHasIt(text, full, "unused"); err == nil {
		t.Errorf("no error for a root type the written schema lacks")
	}
}

// Each -kind adds its type and those it refers to: two roots keep the union
// of what each refers to, each type once.
func TestReachableFromSeveralRootsKeepsTheirUnion(t *testing.T) {
	subset, err := reachable(parse(t, small), named("unused"), named("label"))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(subset.Types))
	for _, td := range subset.Types {
		got = append(got, td.Name)
	}
	if want := []string{"item", "label", "spec", "unused"}; !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
}

// A kind is group/version/Kind, the core group's without a group.
func TestKindFlagParsesGroupVersionKind(t *testing.T) {
	var kinds kindList
	for _, s := range []string{"apps/v1/Deployment", "v1/Service"} {
		if err := kinds.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := kinds.String(), "[apps/v1, Kind=Deployment /v1, Kind=Service]"; got != want {
		t.Errorf("kinds %s, want %s", got, want)
	}
	for _, bad := range []string{"Deployment", "apps/v1/", "a/b/c/Deployment"} {
		if err := kinds.Set(bad); err == nil {
			t.Errorf("-kind %q accepted", bad)
		}
	}
}
