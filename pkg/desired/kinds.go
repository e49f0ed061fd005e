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
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/generated/ownedschema"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// Registrations are the kinds a Foo owns, each registered once with the
// object a Foo asks for: the controller watches and caches each of them,
// and takes each through the same steps of its sync (syncOwned in the
// repository root, over pkg/owned). Owning another kind is its
// Registration (a pure function from the Foo to its apply configuration,
// and what the cache keeps of it: Deployments, in deployment.go), its schema
// (a -kind in hack/update-codegen.sh) and its RBAC rule
// (artifacts/deploy/clusterrole.yaml, which test/names holds to this list).
// The Deployment is the one whose status the Foo's reports.
var Registrations = []owned.Registered[*samplev1beta1.Foo]{
	Deployments,
}

// OwnedInformer is a kind a Foo owns and the controller's informer of it.
type OwnedInformer struct {
	Registered owned.Registered[*samplev1beta1.Foo]
	Informer   cache.SharedIndexInformer
}

// NewOwnedInformers returns the controller's informer of each of
// registrations (in production, Registrations), in order: the objects of
// that kind the controller manages (labelled LabelManagedBy) in namespace
// ("" for all), each cached as its owned.Object and indexed by the Foo that
// controls it; narrow, if not nil, narrows them to one shard (pkg/replicas).
func NewOwnedInformers(
	registrations []owned.Registered[*samplev1beta1.Foo], clientset kubernetes.Interface, namespace string,
	resyncPeriod time.Duration, narrow func(*cache.ListWatch) *cache.ListWatch,
) ([]OwnedInformer, error) {
	managedBy := labels.Set{samplecontroller.LabelManagedBy: samplecontroller.ControllerName}
	informers := make([]OwnedInformer, 0, len(registrations))
	for _, registered := range registrations {
		informer, err := registered.NewInformer(clientset, namespace, managedBy, samplecontroller.ControllerName,
			samplecontroller.FooGroupKind, resyncPeriod, narrow)
		if err != nil {
			return nil, err
		}
		informers = append(informers, OwnedInformer{Registered: registered, Informer: informer})
	}
	return informers, nil
}

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

// fieldsOf returns the fields of kind that asks (the Registration's For)
// sets, found once: kind's type in ownedSchema is typeName (its -kind in
// hack/update-codegen.sh).
func fieldsOf[AC any](kind, typeName string, asks func(*samplev1beta1.Foo) AC) func() (*owned.Fields, error) {
	return sync.OnceValues(func() (*owned.Fields, error) {
		parser, err := ownedSchema()
		if err != nil {
			return nil, fmt.Errorf("the schema of the kinds a Foo owns: %w", err)
		}
		t := parser.Type(typeName)
		if !t.IsValid() {
			return nil, fmt.Errorf("no schema for %s: no type %s (a -kind in hack/update-codegen.sh)", kind, typeName)
		}
		return probedFields(kind, t, asks)
	})
}

// probedFields finds the fields of kind, whose type is t, that asks sets
// for two probe Foos whose specs have every field set, to different values
// (owned.NewFields).
func probedFields[AC any](
	kind string, t typed.ParseableType, asks func(*samplev1beta1.Foo) AC,
) (*owned.Fields, error) {
	var probes [2]interface{}
	for i := range probes {
		probe := &samplev1beta1.Foo{}
		probe.Name, probe.Namespace, probe.UID = fmt.Sprint("probe-", i), "probe", types.UID(fmt.Sprint("probe-", i))
		owned.EveryFieldSet(reflect.ValueOf(&probe.Spec).Elem(), i+1)
		probes[i] = asks(probe)
	}
	return owned.NewFields(kind, t, probes)
}
