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

// Package apitesting holds the round-trip tests Kubernetes runs for every
// API type, for each version of this API to run on its own types: randomly
// filled objects must survive deep copy and serialization unchanged. They
// catch a field the JSON tags lose (json:"-", two fields under one name), a
// field deepcopy-gen missed, and a type the serializers cannot carry. A
// misspelled but unique JSON name round-trips fine: the CRD tests of
// pkg/desired compare the names with the schema.
//
// This group has no internal version (a CRD is served as JSON as it is
// stored), so the entry points are the ones for external types; the
// convenience RoundTripTestForAPIGroup walks internal versions only and would
// test nothing here. There is no protobuf for custom resources. Conversion
// between the versions is pkg/conversion's, and tested there.
package apitesting

import (
	"math/rand"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
)

// RoundTripTypes checks that the kinds of group version gv whose Go types
// live in the package of example (Foo and FooList), through deep copy, and
// through JSON encoding and decoding, are unchanged.
func RoundTripTypes(t *testing.T, gv schema.GroupVersion, addToScheme func(*runtime.Scheme) error, example any) {
	t.Helper()
	scheme, codecs := testScheme(t, addToScheme)
	filler := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(randomSeed(t)), codecs)
	for _, gvk := range ourKinds(scheme, gv, example).UnsortedList() {
		t.Run(gvk.Kind, func(t *testing.T) {
			roundtrip.RoundTripSpecificKindWithoutProtobuf(t, gvk, scheme, codecs, filler, nil)
		})
	}
}

// RoundTripToUnstructured checks that the same kinds survive the conversion
// to unstructured and back, through JSON and through CBOR, as the API
// server's custom resource handler and dynamic clients handle them.
func RoundTripToUnstructured(
	t *testing.T, gv schema.GroupVersion, addToScheme func(*runtime.Scheme) error, example any,
) {
	t.Helper()
	scheme, _ := testScheme(t, addToScheme)
	ours := ourKinds(scheme, gv, example)
	others := sets.New[schema.GroupVersionKind]()
	for gvk := range scheme.AllKnownTypes() {
		if !ours.Has(gvk) {
			others.Insert(gvk)
		}
	}
	roundtrip.RoundtripToUnstructured(t, scheme, nil, others, ours)
}

// testScheme holds a version's types and what its AddToScheme registers
// with them (the meta/v1 options kinds of the group).
func testScheme(t *testing.T, addToScheme func(*runtime.Scheme) error) (*runtime.Scheme, serializer.CodecFactory) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := addToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme, serializer.NewCodecFactory(scheme)
}

// ourKinds are the kinds of gv whose types example's package defines;
// apimachinery tests its own.
func ourKinds(scheme *runtime.Scheme, gv schema.GroupVersion, example any) sets.Set[schema.GroupVersionKind] {
	pkg := reflect.TypeOf(example).Elem().PkgPath()
	kinds := sets.New[schema.GroupVersionKind]()
	for kind, typ := range scheme.KnownTypes(gv) {
		if typ.PkgPath() == pkg {
			kinds.Insert(gv.WithKind(kind))
		}
	}
	return kinds
}

// randomSeed seeds the filler, from TEST_RAND_SEED if set (as for
// RoundtripToUnstructured) so that a failure can be replayed.
func randomSeed(t *testing.T) int64 {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv("TEST_RAND_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("TEST_RAND_SEED: %v", err)
		}
	}
	t.Logf("seed %d (replay with TEST_RAND_SEED)", seed)
	return seed
}
