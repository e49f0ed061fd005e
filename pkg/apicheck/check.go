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

// Package apicheck checks, before the controller starts, that the cluster
// serves the Foo API the controller was built for. Without the check, a
// missing CRD leaves the informer retrying its list forever, and an outdated
// one (an older manifest, such as the classic sample-controller's, without
// the status subresource or the status fields this controller writes) makes
// every status write fail or lose the fields the API server prunes: the Foo
// would never look done. Both are better said at once, with the fix.
//
// The check reads only what every authenticated client may read (the
// system:discovery ClusterRole): discovery, for the subresources, and the
// published OpenAPI v3 document, for the schema. It never reads the
// CustomResourceDefinition object, which a namespaced tenant cannot be granted.
package apicheck

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
)

// InstallHint is the fix for a missing or outdated CRD.
const InstallHint = "kubectl apply -f artifacts/examples/crd.yaml"

// ErrFooAPIMissing is the answer when the cluster does not serve Foos.
var ErrFooAPIMissing = fmt.Errorf("the Foo API is not served by this cluster: "+
	"CustomResourceDefinition %s is not installed; install it with: %s", samplecontroller.FooCRDName, InstallHint)

// FooAPI is what a cluster serves of the Foo version this controller speaks,
// as far as the controller depends on it.
type FooAPI struct {
	// Resources are the resources discovery lists for the group version:
	// foos, and its subresources foos/status and foos/scale.
	Resources map[string]bool
	// Schema is the Foo's OpenAPI v3 schema; nil when none is published.
	Schema *Schema
	// OlderVersions are the versions of the Foo API before this one that
	// the cluster serves, found when it does not serve this one: a CRD of
	// an earlier release.
	OlderVersions []string
}

// olderVersions are the versions before the one this controller speaks,
// newest first. An entry stays after the version is retired, so that a
// cluster still on it gets the right answer.
var olderVersions = []string{v1alpha1.SchemeGroupVersion.Version}

// Schema is an OpenAPI v3 schema, as much of it as this project reads.
type Schema struct {
	Description           string            `json:"description,omitempty"`
	Type                  string            `json:"type,omitempty"`
	Properties            map[string]Schema `json:"properties,omitempty"`
	Items                 *Schema           `json:"items,omitempty"`
	Pattern               string            `json:"pattern,omitempty"`
	MinLength             *int64            `json:"minLength,omitempty"`
	MaxLength             *int64            `json:"maxLength,omitempty"`
	Minimum               *float64          `json:"minimum,omitempty"`
	Maximum               *float64          `json:"maximum,omitempty"`
	Default               json.RawMessage   `json:"default,omitempty"`
	PreserveUnknownFields bool              `json:"x-kubernetes-preserve-unknown-fields,omitempty"`
}

// Check returns an error naming what is missing, and the fix, when the
// cluster does not serve Foos as this controller needs them.
func Check(ctx context.Context, client discovery.DiscoveryInterface) error {
	api, err := Served(ctx, client)
	if err != nil {
		return err
	}
	if !api.Resources[samplecontroller.FooResource] {
		if len(api.OlderVersions) > 0 {
			return fmt.Errorf("CustomResourceDefinition %s is outdated: it serves Foo %s, not %s, "+
				"the version this controller reads and writes; update it with: %s", samplecontroller.FooCRDName,
				strings.Join(api.OlderVersions, ", "), samplev1beta1.SchemeGroupVersion.Version, InstallHint)
		}
		return ErrFooAPIMissing
	}
	if missing := api.Missing(); len(missing) > 0 {
		return fmt.Errorf("CustomResourceDefinition %s is outdated: %s; update it with: %s",
			samplecontroller.FooCRDName, strings.Join(missing, "; "), InstallHint)
	}
	return nil
}

// Missing lists what the controller needs that api lacks: the status
// subresource (its status writes), the scale subresource (kubectl scale),
// and every status field it writes in the schema, which the API server would
// otherwise prune.
func (api *FooAPI) Missing() []string {
	version := samplev1beta1.SchemeGroupVersion.Version
	var missing []string
	if !api.Resources[samplecontroller.FooResource+"/status"] {
		missing = append(missing, "version "+version+" does not enable the status subresource")
	}
	if !api.Resources[samplecontroller.FooResource+"/scale"] {
		missing = append(missing, "version "+version+" does not enable the scale subresource")
	}
	if api.Schema == nil {
		// Not published yet: the API server publishes a CRD's OpenAPI a
		// moment after serving it. Refusing to start would crash-loop a
		// controller started right after the install; a status field the
		// schema lacks is still reported at run time (StatusPruned).
		return missing
	}
	status := api.Schema.Properties["status"]
	if status.PreserveUnknownFields {
		return missing // nothing in status is pruned
	}
	var fields []string
	for _, name := range desired.StatusFields() {
		if _, ok := status.Properties[name]; !ok {
			fields = append(fields, "status."+name)
		}
	}
	if len(fields) > 0 {
		missing = append(missing, "its schema lacks "+strings.Join(fields, ", ")+
			", which the API server would prune from every status write")
	}
	return missing
}

// Served reads the FooAPI the cluster serves: the group version's discovery
// document, and its published OpenAPI v3 document.
func Served(ctx context.Context, client discovery.DiscoveryInterface) (*FooAPI, error) {
	gv := samplev1beta1.SchemeGroupVersion
	api := &FooAPI{Resources: map[string]bool{}}
	resources, err := client.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		for _, version := range olderVersions {
			_, err := client.ServerResourcesForGroupVersion(gv.Group + "/" + version)
			switch {
			case err == nil:
				api.OlderVersions = append(api.OlderVersions, version)
			case !apierrors.IsNotFound(err):
				return nil, fmt.Errorf("discovering the Foo API: %w", err)
			}
		}
		return api, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discovering the Foo API: %w", err)
	}
	for _, r := range resources.APIResources {
		api.Resources[r.Name] = true
	}

	paths, err := openapi.NewClientWithContext(client.RESTClient()).PathsWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the published OpenAPI of the Foo API: %w", err)
	}
	doc, ok := paths["apis/"+gv.Group+"/"+gv.Version]
	if !ok {
		return api, nil // served, but its schema not yet published
	}
	data, err := doc.SchemaWithContext(ctx, "application/json")
	if err != nil {
		return nil, fmt.Errorf("reading the published OpenAPI of the Foo API: %w", err)
	}
	if api.Schema, err = fooSchema(data); err != nil {
		return nil, fmt.Errorf("decoding the published OpenAPI of the Foo API: %w", err)
	}
	return api, nil
}

// fooSchema finds the Foo's schema in a group version's OpenAPI v3 document:
// the one tagged with the Foo's group, version and kind.
func fooSchema(document []byte) (*Schema, error) {
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(document, &doc); err != nil {
		return nil, err
	}
	gv := samplev1beta1.SchemeGroupVersion
	for _, raw := range doc.Components.Schemas {
		var tagged struct {
			GVKs []struct{ Group, Version, Kind string } `json:"x-kubernetes-group-version-kind"`
		}
		if err := json.Unmarshal(raw, &tagged); err != nil {
			return nil, err
		}
		for _, gvk := range tagged.GVKs {
			if gvk.Group == gv.Group && gvk.Version == gv.Version && gvk.Kind == samplecontroller.FooKind {
				schema := &Schema{}
				return schema, json.Unmarshal(raw, schema)
			}
		}
	}
	return nil, nil
}
