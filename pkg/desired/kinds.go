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

package desired

import (
	"fmt"
	"reflect"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/generated/ownedschema"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// OwnedKind is a kind a Foo owns, as the tools that generate and check
// what owning it takes read it: hack/owned-policy (its admission policy),
// hack/owned-schema (its part of the apply schema), test/names (its RBAC
// rule) and the end-to-end audit (its writes). The controller itself names
// each kind in its own code: the Deployment's sync is syncDeployment, in the
// repository root.
type OwnedKind struct {
	// Kind is the kind, as messages name it ("Deployment").
	Kind string
	// Resource is the kind's group and resource, as RBAC rules, audit
	// policies and NotFound errors name it.
	Resource schema.GroupResource
	// SchemaType is the kind's type in the apply schema (its -kind in
	// hack/update-codegen.sh).
	SchemaType string
	// For is the object a Foo asks for, as its apply configuration: it names
	// exactly the fields the controller owns.
	For func(*samplev1beta1.Foo) any
}

// OwnedKinds are the kinds a Foo owns. Owning another kind is its entry
// here, its pure function of the Foo, its sync beside syncDeployment with its
// informer, its schema (a -kind in hack/update-codegen.sh) and its RBAC rule
// (artifacts/deploy/clusterrole.yaml, which test/names holds to this list).
var OwnedKinds = []OwnedKind{deploymentKind}

// DeploymentsResource is the Deployment's group and resource.
var DeploymentsResource = appsv1.Resource("deployments")

var deploymentKind = OwnedKind{
	Kind: "Deployment", Resource: DeploymentsResource, SchemaType: "io.k8s.api.apps.v1.Deployment",
	For: func(foo *samplev1beta1.Foo) any { return DeploymentFor(foo) },
}

// deploymentFields are the fields of a Deployment the Foo owns: those
// DeploymentFor sets, found once.
var deploymentFields = fieldsOf(deploymentKind)

// ownedSchema is the server-side apply schema of the kinds a Foo owns
// (ownedschema.YAML, which hack/owned-schema cuts out of client-go's schema
// of every built-in type), parsed once per process: parsing all of
// client-go's, as applyconfigurations.NewTypeConverter does, costs memory
// and start time for types the controller never reads (docs/performance.md);
// TestSubsetSchemaTypesDeploymentsAsClientGoDoes holds the part to typing
// Deployments as the whole does.
var ownedSchema = sync.OnceValues(func() (*typed.Parser, error) {
	return typed.NewParser(typed.YAMLObject(ownedschema.YAML))
})

// fieldsOf returns the fields of kind that its For sets, found once.
//
// Found by probing, and kept so: two probe Foos whose specs have every field
// set, to different values, show every field For can set, and which follow
// the Foo (owned.NewFields). A field DeploymentFor starts to set is then
// cached, compared and confined by the admission policy with no other edit,
// and the cache keeps its values as one string, cheaper than the typed
// fields (docs/performance.md).
func fieldsOf(kind OwnedKind) func() (*owned.Fields, error) {
	return sync.OnceValues(func() (*owned.Fields, error) {
		parser, err := ownedSchema()
		if err != nil {
			return nil, fmt.Errorf("the schema of the kinds a Foo owns: %w", err)
		}
		t := parser.Type(kind.SchemaType)
		if !t.IsValid() {
			return nil, fmt.Errorf("no schema for %s: no type %s (a -kind in hack/update-codegen.sh)",
				kind.Kind, kind.SchemaType)
		}
		return probedFields(kind.Kind, t, kind.For)
	})
}

// probedFields finds the fields of kind, whose type is t, that kindFor sets
// for two probe Foos whose specs have every field set, to different values
// (owned.NewFields).
func probedFields(kind string, t typed.ParseableType, kindFor func(*samplev1beta1.Foo) any) (*owned.Fields, error) {
	var probes [2]interface{}
	for i := range probes {
		probe := &samplev1beta1.Foo{}
		probe.Name, probe.Namespace, probe.UID = fmt.Sprint("probe-", i), "probe", types.UID(fmt.Sprint("probe-", i))
		owned.EveryFieldSet(reflect.ValueOf(&probe.Spec).Elem(), i+1)
		probes[i] = kindFor(probe)
	}
	return owned.NewFields(kind, t, probes)
}
