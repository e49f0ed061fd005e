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

package apicheck

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// The Foo's schema is found in a published OpenAPI v3 document by its
// group-version-kind tag, whatever the definition is named.
func TestFooSchemaIsFoundByItsGroupVersionKind(t *testing.T) {
	doc := `{"components":{"schemas":{
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta":{"type":"object"},
		"io.k8s.samplecontroller.v1beta1.FooList":{"type":"object","x-kubernetes-group-version-kind":[{"group":"samplecontroller.k8s.io","kind":"FooList","version":"v1beta1"}]},
		"io.k8s.samplecontroller.v1beta1.Foo":{"type":"object","properties":{"status":{"type":"object","properties":{"replicas":{"type":"integer"}}}},
			"x-kubernetes-group-version-kind":[{"group":"samplecontroller.k8s.io","kind":"Foo","version":"v1beta1"}]}}}}`
	schema, err := fooSchema([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if schema == nil {
		t.Fatal("no Foo schema found")
	}
	if got := schema.Properties["status"].Properties["replicas"].Type; got != "integer" {
		t.Errorf("status.replicas type %q, want integer", got)
	}
	if schema, err := fooSchema([]byte(`{"components":{"schemas":{}}}`)); err != nil || schema != nil {
		t.Errorf("empty document: %v, %v; want no schema, no error", schema, err)
	}
}

// A schema not yet published (the API server publishes a CRD's OpenAPI a
// moment after serving it) is no reason to refuse to start.
func TestUnpublishedSchemaIsNotReportedMissing(t *testing.T) {
	api := &FooAPI{Resources: map[string]bool{samplecontroller.FooResource: true, samplecontroller.FooResource + "/status": true, samplecontroller.FooResource + "/scale": true}}
	if missing := api.Missing(); len(missing) != 0 {
		t.Errorf("missing %q, want nothing", missing)
	}
}

// A cluster still on the CRD of the release that served v1alpha1 alone is
// told its CRD is outdated, not that the Foo API is missing.
func TestCRDOfAnOlderVersionOnlyIsOutdated(t *testing.T) {
	client := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	client.Resources = []*metav1.APIResourceList{{
		GroupVersion: samplecontroller.GroupName + "/v1alpha1",
		APIResources: []metav1.APIResource{{Name: samplecontroller.FooResource}},
	}}
	err := Check(context.Background(), client)
	want := "CustomResourceDefinition foos.samplecontroller.k8s.io is outdated: it serves Foo v1alpha1, not v1beta1, " +
		"the version this controller reads and writes; update it with: kubectl apply -f artifacts/examples/crd.yaml"
	if err == nil || err.Error() != want {
		t.Errorf("Check: %v\nwant: %s", err, want)
	}

	client.Resources = nil
	if err := Check(context.Background(), client); !errors.Is(err, ErrFooAPIMissing) {
		t.Errorf("Check of a cluster without the CRD: %v, want ErrFooAPIMissing", err)
	}
}
