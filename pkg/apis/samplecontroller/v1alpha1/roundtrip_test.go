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
	"testing"

	"github.com/kube-samples/sample-controller/internal/apitesting"
)

// Foo and FooList through deep copy, and through JSON encoding and decoding,
// are unchanged.
func TestRoundTripTypes(t *testing.T) {
	apitesting.RoundTripTypes(t, SchemeGroupVersion, AddToScheme, &Foo{})
}

// Foo and FooList survive the conversion to unstructured and back.
func TestRoundTripToUnstructured(t *testing.T) {
	apitesting.RoundTripToUnstructured(t, SchemeGroupVersion, AddToScheme, &Foo{})
}
