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

package apicheck_test

import (
	"strings"
	"testing"

	"github.com/kube-samples/sample-controller/internal/crdfile"
	"github.com/kube-samples/sample-controller/pkg/apicheck"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// shippedCRD is the CRD users install, generated from the Go types.
const shippedCRD = "../../artifacts/examples/crd.yaml"

// fooAPIOf is what an API server serving crd would publish of the Foo API.
func fooAPIOf(crd *crdfile.CRD) *apicheck.FooAPI {
	api := &apicheck.FooAPI{Resources: map[string]bool{}}
	v, err := crd.FooVersion()
	if err != nil {
		return api
	}
	api.Resources[samplecontroller.FooResource] = true
	api.Resources[samplecontroller.FooResource+"/status"] = v.Subresources.Status != nil
	api.Resources[samplecontroller.FooResource+"/scale"] = v.Subresources.Scale != nil
	api.Schema = &v.Schema.OpenAPIV3Schema
	return api
}

// The shipped CRD has all the controller needs; older ones are refused with
// what they lack.
func TestOutdatedCRDIsRefusedWithWhatItLacks(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(v *crdfile.CRDVersion)
		want string
	}{
		"shipped": {func(*crdfile.CRDVersion) {}, ""},
		"no status subresource": {func(v *crdfile.CRDVersion) { v.Subresources.Status = nil },
			"version v1beta1 does not enable the status subresource"},
		"no scale subresource": {func(v *crdfile.CRDVersion) { v.Subresources.Scale = nil },
			"version v1beta1 does not enable the scale subresource"},
		"the classic sample-controller's CRD": {func(v *crdfile.CRDVersion) {
			v.Subresources.Status, v.Subresources.Scale = nil, nil
			status := v.Schema.OpenAPIV3Schema.Properties["status"]
			status.Properties = map[string]apicheck.Schema{"availableReplicas": status.Properties["availableReplicas"]}
			v.Schema.OpenAPIV3Schema.Properties["status"] = status
		}, "version v1beta1 does not enable the status subresource; version v1beta1 does not enable the scale subresource; " +
			"its schema lacks status.replicas, status.selector, status.observedGeneration, status.conditions, which the API server would prune from every status write"},
		"status kept whole": {func(v *crdfile.CRDVersion) {
			v.Schema.OpenAPIV3Schema.Properties["status"] = apicheck.Schema{Type: "object", PreserveUnknownFields: true}
		}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			crd, err := crdfile.Read(shippedCRD)
			if err != nil {
				t.Fatal(err)
			}
			v, err := crd.FooVersion()
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(v)
			if got := strings.Join(fooAPIOf(crd).Missing(), "; "); got != tc.want {
				t.Errorf("missing:\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}

// A CRD without the controller's version serves no Foos the controller can
// use: apicheck.Check answers ErrFooAPIMissing, since discovery lists no foos.
func TestCRDOfAnotherVersionServesNoFoos(t *testing.T) {
	crd, err := crdfile.Read(shippedCRD)
	if err != nil {
		t.Fatal(err)
	}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Name = "v1"
	}
	if api := fooAPIOf(crd); api.Resources[samplecontroller.FooResource] {
		t.Errorf("resources %v, want no foos", api.Resources)
	}
}
