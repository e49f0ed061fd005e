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

package samplecontroller_test

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

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// versions are the served versions of the API: each is tested on its own.
var versions = []struct {
	gv          schema.GroupVersion
	addToScheme func(*runtime.Scheme) error
	pkg         string
}{
	{v1alpha1.SchemeGroupVersion, v1alpha1.AddToScheme, reflect.TypeFor[v1alpha1.Foo]().PkgPath()},
	{v1beta1.SchemeGroupVersion, v1beta1.AddToScheme, reflect.TypeFor[v1beta1.Foo]().PkgPath()},
}

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
	for _, v := range versions {
		scheme, codecs := testScheme(t, v.addToScheme)
		filler := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(randomSeed(t)), codecs)
		for _, gvk := range ourKinds(scheme, v.gv, v.pkg).UnsortedList() {
			t.Run(v.gv.Version+"/"+gvk.Kind, func(t *testing.T) {
				roundtrip.RoundTripSpecificKindWithoutProtobuf(t, gvk, scheme, codecs, filler, nil)
			})
		}
	}
}

// TestRoundTripToUnstructured: Foo and FooList survive the conversion to
// unstructured and back, through JSON and through CBOR, as the API server's
// custom resource handler and dynamic clients handle them.
func TestRoundTripToUnstructured(t *testing.T) {
	for _, v := range versions {
		t.Run(v.gv.Version, func(t *testing.T) {
			scheme, _ := testScheme(t, v.addToScheme)
			ours := ourKinds(scheme, v.gv, v.pkg)
			others := sets.New[schema.GroupVersionKind]()
			for gvk := range scheme.AllKnownTypes() {
				if !ours.Has(gvk) {
					others.Insert(gvk)
				}
			}
			roundtrip.RoundtripToUnstructured(t, scheme, nil, others, ours)
		})
	}
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

// ourKinds are the kinds of a group version whose types its package (pkg)
// defines; apimachinery tests its own.
func ourKinds(scheme *runtime.Scheme, gv schema.GroupVersion, pkg string) sets.Set[schema.GroupVersionKind] {
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
