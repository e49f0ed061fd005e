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

// Package crdfile reads the CRD manifest the project generates
// (artifacts/examples/crd.yaml), for the tests that hold it to the Go types,
// the webhook's Service and what the controller checks at start. The
// controller never reads it: it asks the API server (pkg/apicheck).
package crdfile

import (
	"errors"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// CRD is a CustomResourceDefinition as far as this project reads it (the
// module does not depend on the apiextensions types).
type CRD struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Conversion struct {
			Strategy string `json:"strategy"`
			Webhook  *struct {
				ClientConfig struct {
					Service *struct {
						Namespace string `json:"namespace"`
						Name      string `json:"name"`
						Path      string `json:"path"`
						Port      int32  `json:"port"`
					} `json:"service,omitempty"`
				} `json:"clientConfig"`
				ConversionReviewVersions []string `json:"conversionReviewVersions"`
			} `json:"webhook,omitempty"`
		} `json:"conversion"`
		Versions []CRDVersion `json:"versions"`
	} `json:"spec"`
}

// CRDVersion is one version of a CRD.
type CRDVersion struct {
	Name       string `json:"name"`
	Served     bool   `json:"served"`
	Storage    bool   `json:"storage"`
	Deprecated bool   `json:"deprecated,omitempty"`
	Schema     struct {
		OpenAPIV3Schema apicheck.Schema `json:"openAPIV3Schema"`
	} `json:"schema"`
	Subresources struct {
		Status *struct{} `json:"status,omitempty"`
		Scale  *struct {
			SpecReplicasPath   string `json:"specReplicasPath"`
			StatusReplicasPath string `json:"statusReplicasPath"`
			LabelSelectorPath  string `json:"labelSelectorPath"`
		} `json:"scale,omitempty"`
	} `json:"subresources"`
	AdditionalPrinterColumns []struct {
		Name     string `json:"name"`
		JSONPath string `json:"jsonPath"`
	} `json:"additionalPrinterColumns"`
}

// Read reads a CRD manifest.
func Read(path string) (*CRD, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &CRD{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return crd, nil
}

// FooVersion returns the CRD's version of the Foo API this controller speaks.
func (crd *CRD) FooVersion() (*CRDVersion, error) {
	for i, v := range crd.Spec.Versions {
		if v.Name == samplev1beta1.SchemeGroupVersion.Version {
			return &crd.Spec.Versions[i], nil
		}
	}
	return nil, errors.New("the CRD does not define version " + samplev1beta1.SchemeGroupVersion.Version)
}
