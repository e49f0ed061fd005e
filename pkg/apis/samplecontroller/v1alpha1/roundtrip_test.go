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

package v1alpha1

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

// The round-trip tests Kubernetes runs for every API type, here for Foo and
// FooList: randomly filled objects must survive deep copy and serialization
// unchanged. They catch a field the JSON tags lose (json:"-", two fields
// under one name), a field deepcopy-gen missed, and a type the serializers
// cannot carry. A misspelled but unique JSON name round-trips fine: the
// CRD tests of the controller package compare the names with the schema.
//
// This group has no internal version (a CRD is served as JSON as it is
// stored), so the entry points are the ones for external types; the
// convenience RoundTripTestForAPIGroup walks internal versions only and would
// test nothing here. There is no protobuf for custom resources.

// TestRoundTripTypes: Foo and FooList through deep copy, and through JSON
// encoding and decoding, are unchanged.
func TestRoundTripTypes(t *testing.T) {
	scheme, codecs := testScheme(t)
	filler := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(randomSeed(t)), codecs)
	for _, gvk := range ourKinds(scheme).UnsortedList() {
		t.Run(gvk.Kind, func(t *testing.T) {
			roundtrip.RoundTripSpecificKindWithoutProtobuf(t, gvk, scheme, codecs, filler, nil)
		})
	}
}

// TestRoundTripToUnstructured: Foo and FooList survive the conversion to
// unstructured and back, through JSON and through CBOR, as the API server's
// custom resource handler and dynamic clients handle them.
func TestRoundTripToUnstructured(t *testing.T) {
	scheme, _ := testScheme(t)
	ours := ourKinds(scheme)
	others := sets.New[schema.GroupVersionKind]()
	for gvk := range scheme.AllKnownTypes() {
		if !ours.Has(gvk) {
			others.Insert(gvk)
		}
	}
	roundtrip.RoundtripToUnstructured(t, scheme, nil, others, ours)
}

// testScheme holds this package's types and what AddToScheme registers with
// them (the meta/v1 options kinds of the group).
func testScheme(t *testing.T) (*runtime.Scheme, serializer.CodecFactory) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme, serializer.NewCodecFactory(scheme)
}

// ourKinds are the kinds of this group whose types this package defines;
// apimachinery tests its own.
func ourKinds(scheme *runtime.Scheme) sets.Set[schema.GroupVersionKind] {
	pkg := reflect.TypeFor[Foo]().PkgPath()
	kinds := sets.New[schema.GroupVersionKind]()
	for kind, typ := range scheme.KnownTypes(SchemeGroupVersion) {
		if typ.PkgPath() == pkg {
			kinds.Insert(SchemeGroupVersion.WithKind(kind))
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
