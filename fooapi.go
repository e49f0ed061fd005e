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
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

// Before it starts, the controller checks that the cluster serves the Foo API
// it was built for. Without this check a missing CRD leaves the informer
// retrying its list forever, and an outdated one (an older manifest, such as
// the classic sample-controller's, without the status subresource or the
// status fields this controller writes) makes every status write either fail
// or lose the fields the API server prunes: the Foo would never look done.
// Both are better said at once, with the fix.

// crdInstallHint is the fix for a missing or outdated CRD.
const crdInstallHint = "kubectl apply -f artifacts/examples/crd.yaml"

// errFooAPIMissing is the answer when the cluster does not serve Foos.
var errFooAPIMissing = fmt.Errorf("the Foo API is not served by this cluster: CustomResourceDefinition %s is not installed; "+
	"install it with: %s", samplev1alpha1.FooCRDName, crdInstallHint)

// checkFooAPI returns an error naming what is missing when the cluster does
// not serve Foos as this controller needs them: served, with the status
// subresource, and with every status field the controller writes in the
// schema. Discovery answers the first; the CRD itself, read through client,
// the others.
func checkFooAPI(ctx context.Context, disco discovery.DiscoveryInterface, client rest.Interface) error {
	resources, err := disco.ServerResourcesForGroupVersion(samplev1alpha1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return errFooAPIMissing
	}
	if err != nil {
		return fmt.Errorf("discovering the Foo API: %w", err)
	}
	served := false
	for _, r := range resources.APIResources {
		served = served || r.Name == "foos"
	}
	if !served {
		return errFooAPIMissing
	}

	data, err := client.Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", samplev1alpha1.FooCRDName).
		SetHeader("Accept", "application/json").DoRaw(ctx)
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("the controller may not read CustomResourceDefinition %s, which it checks at start: "+
			"grant it get on that CRD, as artifacts/deploy/clusterrole.yaml does (%w)", samplev1alpha1.FooCRDName, err)
	}
	if err != nil {
		return fmt.Errorf("reading CustomResourceDefinition %s to check it: %w", samplev1alpha1.FooCRDName, err)
	}
	var crd customResourceDefinition
	if err := json.Unmarshal(data, &crd); err != nil {
		return fmt.Errorf("decoding CustomResourceDefinition %s: %w", samplev1alpha1.FooCRDName, err)
	}
	if missing := crd.missingForController(); len(missing) > 0 {
		return fmt.Errorf("CustomResourceDefinition %s is outdated: %s; update it with: %s",
			samplev1alpha1.FooCRDName, strings.Join(missing, "; "), crdInstallHint)
	}
	return nil
}

// customResourceDefinition holds the parts of an apiextensions.k8s.io/v1
// CustomResourceDefinition the check reads (the module does not depend on
// the apiextensions types).
type customResourceDefinition struct {
	Spec struct {
		Versions []struct {
			Name         string `json:"name"`
			Subresources struct {
				Status *struct{} `json:"status"`
			} `json:"subresources"`
			Schema struct {
				OpenAPIV3Schema jsonSchema `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

type jsonSchema struct {
	Properties                       map[string]jsonSchema `json:"properties"`
	XKubernetesPreserveUnknownFields bool                  `json:"x-kubernetes-preserve-unknown-fields"`
}

// missingForController lists what the Foo version this controller speaks
// lacks: the status subresource, and the status fields of FooStatus.
func (crd *customResourceDefinition) missingForController() []string {
	version := samplev1alpha1.SchemeGroupVersion.Version
	for _, v := range crd.Spec.Versions {
		if v.Name != version {
			continue
		}
		var missing []string
		if v.Subresources.Status == nil {
			missing = append(missing, "version "+version+" does not enable the status subresource")
		}
		status := v.Schema.OpenAPIV3Schema.Properties["status"]
		if status.XKubernetesPreserveUnknownFields {
			return missing // nothing in status is pruned
		}
		var fields []string
		statusType := reflect.TypeFor[samplev1alpha1.FooStatus]()
		for i := range statusType.NumField() {
			name := jsonName(statusType.Field(i))
			if _, ok := status.Properties[name]; !ok {
				fields = append(fields, "status."+name)
			}
		}
		if len(fields) > 0 {
			missing = append(missing, "its schema lacks "+strings.Join(fields, ", ")+", which the API server would prune from every status write")
		}
		return missing
	}
	return []string{"it does not define version " + version}
}

// jsonName is the name a struct field has in JSON.
func jsonName(field reflect.StructField) string {
	name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
	return name
}
