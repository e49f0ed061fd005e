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

package conversion

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/json"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

const (
	alpha = "samplecontroller.k8s.io/v1alpha1"
	beta  = "samplecontroller.k8s.io/v1beta1"
)

// A Foo written in v1alpha1 is read in v1beta1 with its Deployment's name
// under spec.deployment, and everything else where it was.
func TestV1alpha1FooReadsAsV1beta1(t *testing.T) {
	in := `{"apiVersion":"samplecontroller.k8s.io/v1alpha1","kind":"Foo",` +
		`"metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7","generation":2,` +
		`"labels":{"l":"v"},"annotations":{"a":"b"}},` +
		`"spec":{"deploymentName":"web","replicas":3},` +
		`"status":{"availableReplicas":2,"replicas":3,"selector":"app=nginx","observedGeneration":2}}`
	want := `{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1beta1",` +
		`"metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"7","generation":2,` +
		`"labels":{"l":"v"},"annotations":{"a":"b"}},` +
		`"spec":{"deployment":{"name":"web"},"replicas":3},` +
		`"status":{"availableReplicas":2,"replicas":3,"selector":"app=nginx","observedGeneration":2}}`
	expectConverted(t, in, beta, want)
}

// A Foo written in v1beta1 is read in v1alpha1 with spec.deploymentName.
func TestV1beta1FooReadsAsV1alpha1(t *testing.T) {
	in := `{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","metadata":{"name":"b"},` +
		`"spec":{"deployment":{"name":"api"}},"status":{"availableReplicas":0}}`
	want := `{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1alpha1","metadata":{"name":"b"},` +
		`"spec":{"deploymentName":"api"},"status":{"availableReplicas":0}}`
	expectConverted(t, in, alpha, want)
}

// A Foo already in the version asked for comes back byte for byte: a list
// the API server converts can hold Foos stored in either version.
func TestFooInTheVersionAskedForIsReturnedAsItIs(t *testing.T) {
	in := `{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","metadata":{"name":"c"},"x":1}`
	expectConverted(t, in, beta, in)
}

// Versions the CRD does not serve are refused, both ways, with the version
// named: the API server shows the message to the client. One longer than
// any version can be is named by its length, not written back whole.
func TestUnservedVersionsAreRefused(t *testing.T) {
	for _, tc := range []struct{ in, to, want string }{
		{`{"apiVersion":"samplecontroller.k8s.io/v2","kind":"Foo"}`, beta,
			`cannot convert from "samplecontroller.k8s.io/v2": not a served version of Foo`},
		{`{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo"}`, "samplecontroller.k8s.io/v1",
			`cannot convert to "samplecontroller.k8s.io/v1": not a served version of Foo`},
		{`{"apiVersion":"` + strings.Repeat("v", MaxAPIVersionBytes+1) + `","kind":"Foo"}`, beta,
			`cannot convert from an apiVersion of 318 bytes: not a served version of Foo`},
	} {
		_, err := Convert([]byte(tc.in), tc.to)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Convert(%s, %s) = %v, want error %q", tc.in, tc.to, err, tc.want)
		}
	}
}

func expectConverted(t *testing.T, in, to, want string) {
	t.Helper()
	got, err := Convert([]byte(in), to)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("converted to %s:\n got %s\nwant %s", to, got, want)
	}
}

// roundTrips is how many random Foos each direction converts there and back.
const roundTrips = 2000

// Any v1alpha1 Foo converted to v1beta1 and back is the Foo it was: no field
// of either version is lost on the way through the other.
func TestEveryV1alpha1FooSurvivesARoundTripThroughV1beta1(t *testing.T) {
	expectRoundTrips(t, alpha, beta, func() any { return &v1alpha1.Foo{} })
}

// Any v1beta1 Foo converted to v1alpha1 and back is the Foo it was.
func TestEveryV1beta1FooSurvivesARoundTripThroughV1alpha1(t *testing.T) {
	expectRoundTrips(t, beta, alpha, func() any { return &v1beta1.Foo{} })
}

// expectRoundTrips fills Foos of version from with random values (the
// filler Kubernetes' own round-trip tests use, which knows how to fill
// metadata), converts each to the version through and back, and compares
// what comes back with the Foo as JSON carries it.
func expectRoundTrips(t *testing.T, from, through string, newFoo func() any) {
	t.Helper()
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	filler := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed),
		serializer.NewCodecFactory(runtime.NewScheme()))
	for range roundTrips {
		foo := newFoo()
		filler.Fill(foo)
		setAPIVersion(foo, from, "Foo")
		original, err := json.Marshal(foo)
		if err != nil {
			t.Fatal(err)
		}
		there, err := Convert(original, through)
		if err != nil {
			t.Fatalf("to %s: %v\n%s", through, err, original)
		}
		back, err := Convert(there, from)
		if err != nil {
			t.Fatalf("back to %s: %v\n%s", from, err, there)
		}
		want, got := newFoo(), newFoo()
		if err := json.Unmarshal(original, want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(back, got); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(want, got) {
			t.Fatalf("%s -> %s -> %s changed the Foo (-before +after):\n%s", from, through, from, cmp.Diff(want, got))
		}
	}
}
