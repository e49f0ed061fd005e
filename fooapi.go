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

package main

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

// errFooAPIMissing is the answer when the cluster does not serve Foos: without
// this check the informer would retry its list forever and the controller
// would wait for a cache that never syncs.
var errFooAPIMissing = fmt.Errorf("the Foo API is not served by this cluster: CustomResourceDefinition %s is not installed; "+
	"install it with: kubectl apply -f artifacts/examples/crd.yaml", samplev1alpha1.FooCRDName)

// discoverFooAPI asks the API server's discovery whether Foos are served and
// whether the CRD enables the status subresource, which decides how status is
// written. A CRD changed to add or remove the status subresource takes effect
// on the controller's next start.
func discoverFooAPI(client discovery.DiscoveryInterface) (statusSubresource bool, err error) {
	resources, err := client.ServerResourcesForGroupVersion(samplev1alpha1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, errFooAPIMissing
	}
	if err != nil {
		return false, fmt.Errorf("discovering the Foo API: %w", err)
	}
	served := false
	for _, r := range resources.APIResources {
		switch r.Name {
		case "foos":
			served = true
		case "foos/status":
			statusSubresource = true
		}
	}
	if !served {
		return false, errFooAPIMissing
	}
	return statusSubresource, nil
}
