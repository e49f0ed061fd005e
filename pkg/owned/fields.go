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
	"fmt"
	"reflect"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// The fields the controller owns on an object are the fields its desired
// state sets, and nothing else decides them: the cache keeps the actual
// object's values at those fields, and Drift compares the desired values
// with them, both by walking the desired state's own shape with the kind's
// schema as server-side apply knows it. A field the desired state starts to
// set is cached and compared with no other edit.
//
// The schema gives each field the semantics an apply has: a label map is
// granular (another manager's labels are not ours, and not compared), a list
// of containers is keyed by name (another container is not ours; ours is
// found by its name wherever it stands), a label selector is atomic (an
// apply sets the whole of it, so the whole of it must be equal), and what
// another manager set in a field of ours (a port another team added to our
// container) is not compared either.
//
// What it costs: the owned values are kept as their JSON, and walking an
// object with the schema takes tens of microseconds per watch event and per
// Drift (fewer when nothing drifted) where hand-written fields took a few
// (docs/performance.md). The schema is parsed once per process, and only the
// owned kind's part of it.
//
// Identity and ownership are left out: the name and namespace are the cache
// key, and the owner reference is checked before any comparison (an object
// the Foo does not control is never repaired) and is keyed by the Foo's UID,
// which no Foo-independent set of fields can name.

// Fields are the fields the controller owns on the objects of one kind.
type Fields struct {
	kind    string // as messages name it: "Deployment"
	t       typed.ParseableType
	pattern [2]interface{}
}

// NewFields returns the fields of kind, whose schema type is t, that the two
// probes set: the desired states (apply configurations) of two owners whose
// specs have every field set, to different values (EveryFieldSet). With
// every field set, a field the desired state sets only when an owner asks
// for it is among them. A list element whose key is the same in both probes
// (the container "nginx") is the controller's own, found by that key; one
// whose key differs (a port from the spec) names all the elements of its
// list, as any could be the one an owner asks for. Map keys (the label keys)
// must not depend on the owner.
func NewFields(kind string, t typed.ParseableType, probes [2]interface{}) (*Fields, error) {
	f := &Fields{kind: kind, t: t}
	for i, probe := range probes {
		owned, err := f.ownedPart(probe)
		if err != nil {
			return nil, fmt.Errorf("the %s wanted: %w", kind, err)
		}
		f.pattern[i] = owned.AsValue().Unstructured()
	}
	return f, nil
}

// ownedPart is a desired state without its identity and ownership, typed:
// the values of the fields the controller owns.
func (f *Fields) ownedPart(want interface{}) (*typed.TypedValue, error) {
	data, err := json.Marshal(want)
	if err != nil {
		return nil, err
	}
	// value.FromJSON reads integers as int64, as the cached side is read:
	// encoding/json's float64 would never equal them.
	v, err := value.FromJSON(data)
	if err != nil {
		return nil, err
	}
	obj, _ := v.Unstructured().(map[string]interface{})
	delete(obj, "apiVersion")
	delete(obj, "kind")
	if meta, ok := obj["metadata"].(map[string]interface{}); ok {
		delete(meta, "name")
		delete(meta, "namespace")
		delete(meta, "ownerReferences")
		if len(meta) == 0 {
			delete(obj, "metadata")
		}
	}
	return f.typed(value.NewValueInterface(obj))
}

// typed types a value as the kind, checking it: a value of another shape is
// an error, not a silent mismatch.
func (f *Fields) typed(v value.Value) (*typed.TypedValue, error) {
	return typed.AsTyped(v, f.t.Schema, f.t.TypeRef)
}

// Values returns, as JSON, obj's values at the fields the controller owns:
// what the cache keeps of them. obj is the kind's Go type, or its apply
// configuration (a desired state, as Drift reads it).
func (f *Fields) Values(obj interface{}) (string, error) {
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return "", err
	}
	kept, _ := extract(f.t.Schema, f.t.TypeRef, v, f.pattern[0], f.pattern[1])
	if kept == nil {
		kept = map[string]interface{}{}
	}
	data, err := json.Marshal(kept)
	return string(data), err
}

// extract returns v's values where the two probes' desired values p1 and p2
// have one, walking v by the schema's type tr, and whether v is set. A map or
// list is kept even when none of its elements is, so that Drift names the
// element missing rather than its parent. An
// atomic map or list, or a list without keys, is kept whole: an apply sets
// the whole of it.
func extract(s *schema.Schema, tr schema.TypeRef, v value.Value, p1, p2 interface{}) (interface{}, bool) {
	if v == nil || v.IsNull() {
		return nil, false
	}
	atom, ok := s.Resolve(tr)
	if !ok {
		return nil, false
	}
	switch {
	case atom.Map != nil:
		m1, ok1 := p1.(map[string]interface{})
		m2, _ := p2.(map[string]interface{})
		if atom.Map.ElementRelationship == schema.Atomic || !ok1 || !v.IsMap() {
			return v.Unstructured(), true
		}
		vm := v.AsMap()
		out := map[string]interface{}{}
		for k, want := range m1 {
			child, ok := vm.Get(k)
			if !ok {
				continue
			}
			childType := atom.Map.ElementType
			if f, ok := atom.FindField(k); ok {
				childType = f.Type
			}
			other, ok := m2[k]
			if !ok {
				other = want
			}
			if kept, ok := extract(s, childType, child, want, other); ok {
				out[k] = kept
			}
		}
		return out, true
	case atom.List != nil:
		l1, ok1 := p1.([]interface{})
		l2, _ := p2.([]interface{})
		if atom.List.ElementRelationship != schema.Associative || len(atom.Keys) == 0 || !ok1 || !v.IsList() {
			return v.Unstructured(), true
		}
		out := []interface{}{}
		vl := v.AsList()
		for i := range vl.Length() {
			item := vl.At(i)
			for j, want := range l1 {
				other := want
				if j < len(l2) {
					other = l2[j]
				}
				if !sameKeys(atom.Keys, item, want, other) {
					continue
				}
				if kept, ok := extract(s, atom.List.ElementType, item, want, other); ok {
					out = append(out, kept)
				}
				break
			}
		}
		return out, true
	default:
		return v.Unstructured(), true
	}
}

// sameKeys reports whether a list item is the one the pattern's elements
// want and other name: it has their value at each key they agree on (a
// key from the Foo, where they differ, matches any item).
func sameKeys(keys []string, item value.Value, want, other interface{}) bool {
	w, _ := want.(map[string]interface{})
	o, _ := other.(map[string]interface{})
	if !item.IsMap() {
		return false
	}
	im := item.AsMap()
	for _, k := range keys {
		if _, set := w[k]; !set {
			continue // defaulted by the API server, as a port's protocol
		}
		fixed := value.NewValueInterface(w[k])
		if !value.Equals(fixed, value.NewValueInterface(o[k])) {
			continue
		}
		got, ok := im.Get(k)
		if !ok || !value.Equals(got, fixed) {
			return false
		}
	}
	return true
}

// Drift lists the fields the controller owns whose value in the actual
// object differs from the wanted one, or that the actual one lacks, as
// server-side apply names fields (".spec.replicas",
// `.spec.template.spec.containers[name="nginx"].image`), in order. A field
// whose parent is listed is not listed again. values are the actual
// object's, as Values returned them; name names it in errors.
func (f *Fields) Drift(wanted interface{}, name, values string) ([]string, error) {
	if values == "" {
		return nil, fmt.Errorf("cached %s %s: the cache kept none of its values", f.kind, name)
	}
	// Most syncs find nothing drifted. Then the wanted values, kept as the
	// cache keeps the actual ones, are the same JSON: equal at every field
	// the controller owns, found without parsing either side or walking
	// them together: most of the CPU and garbage of a sync that writes
	// nothing. Only values whose text differs are compared by the schema,
	// which names the fields (or finds none: a field the wanted leaves
	// unset and another owner's desired state sets).
	if same, err := f.Values(wanted); err == nil && same == values {
		return nil, nil
	}
	want, err := f.ownedPart(wanted)
	if err != nil {
		return nil, fmt.Errorf("the %s wanted: %w", f.kind, err)
	}
	v, err := value.FromJSON([]byte(values))
	if err != nil {
		return nil, fmt.Errorf("cached %s %s: its values: %w", f.kind, name, err)
	}
	have, err := f.typed(v)
	if err != nil {
		return nil, err
	}
	cmp, err := have.Compare(want)
	if err != nil {
		return nil, fmt.Errorf("cached %s %s: %w", f.kind, name, err)
	}
	// What the cache holds at a field this owner does not set (cmp.Removed:
	// a field the desired state sets for other owners only) is no drift.
	drifted := cmp.Modified.Union(cmp.Added)
	var names []string
	drifted.Iterate(func(p fieldpath.Path) {
		for i := 1; i < len(p); i++ {
			if drifted.Has(p[:i]) {
				return
			}
		}
		names = append(names, p.String())
	})
	return names, nil
}

// EveryFieldSet gives every field of v that is its zero value a value from
// seed: pointers point to a value, numbers are seed, strings "x<seed>",
// booleans true, slices and maps hold one element.
func EveryFieldSet(v reflect.Value, seed int) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		EveryFieldSet(v.Elem(), seed)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				EveryFieldSet(v.Field(i), seed)
			}
		}
	case reflect.String:
		if v.String() == "" {
			v.SetString(fmt.Sprint("x", seed))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() == 0 {
			v.SetInt(int64(seed))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() == 0 {
			v.SetUint(uint64(seed))
		}
	case reflect.Float32, reflect.Float64:
		if v.Float() == 0 {
			v.SetFloat(float64(seed))
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			EveryFieldSet(v.Index(i), seed)
		}
	case reflect.Map:
		if v.Len() == 0 {
			key, elem := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			EveryFieldSet(key, seed)
			EveryFieldSet(elem, seed)
			v.Set(reflect.MakeMapWithSize(v.Type(), 1))
			v.SetMapIndex(key, elem)
		}
	}
}
