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
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// Owned are the kinds a Foo owns, each registered once with its desired
// state: the controller watches, caches, creates, repairs, refuses and
// cleans up each of them the same way (pkg/owned). Owning another kind is
// its registration here (a Kind and a pure function from the Foo to its
// apply configuration), its schema (a -kind in hack/update-codegen.sh) and
// its RBAC rule (artifacts/deploy/clusterrole.yaml, which test/names holds
// to this list). The Deployment is the one whose status the Foo's reports.
var Owned = []owned.Owned[*samplev1alpha1.Foo]{
	OwnsDeployment,
}

// OwnsDeployment registers the Deployment a Foo asks for (Deployment) with
// the Deployment's Kind.
var OwnsDeployment = owned.Own(Deployments, Deployment)

// OwnedInformer is a kind a Foo owns and the controller's informer of it.
type OwnedInformer struct {
	Kind     owned.Owned[*samplev1alpha1.Foo]
	Informer cache.SharedIndexInformer
}

// NewOwnedInformers returns the controller's informer of each of kinds (in
// production, Owned), in order: the objects of that kind the controller
// manages (labelled LabelManagedBy) in namespace ("" for all), each cached
// as its owned.Object and indexed by the Foo that controls it.
func NewOwnedInformers(
	kinds []owned.Owned[*samplev1alpha1.Foo], clientset kubernetes.Interface, namespace string,
	resyncPeriod time.Duration,
) ([]OwnedInformer, error) {
	managedBy := labels.Set{samplecontroller.LabelManagedBy: samplecontroller.ControllerName}
	informers := make([]OwnedInformer, 0, len(kinds))
	for _, kind := range kinds {
		informer, err := kind.NewInformer(clientset, namespace, managedBy, samplecontroller.FooGroupKind, resyncPeriod)
		if err != nil {
			return nil, fmt.Errorf("the %s informer: %w", kind.Kind(), err)
		}
		informers = append(informers, OwnedInformer{Kind: kind, Informer: informer})
	}
	return informers, nil
}
