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
	"encoding/json"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// shippedCRD is the generated CRD (crdPath), decoded into maps a test can edit.
func shippedCRD(t *testing.T) map[string]interface{} {
	t.Helper()
	data, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]interface{}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// fooVersion returns the CRD's only version, to edit.
func fooVersion(crd map[string]interface{}) map[string]interface{} {
	return crd["spec"].(map[string]interface{})["versions"].([]interface{})[0].(map[string]interface{})
}

func statusProperties(crd map[string]interface{}) map[string]interface{} {
	schema := fooVersion(crd)["schema"].(map[string]interface{})["openAPIV3Schema"].(map[string]interface{})
	return schema["properties"].(map[string]interface{})["status"].(map[string]interface{})["properties"].(map[string]interface{})
}

func missingFrom(t *testing.T, crd map[string]interface{}) string {
	t.Helper()
	data, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	var decoded customResourceDefinition
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	return strings.Join(decoded.missingForController(), "; ")
}

// The shipped CRD has all the controller needs; older ones are refused with
// what they lack.
func TestOutdatedCRDIsRefusedWithWhatItLacks(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(crd map[string]interface{})
		want string
	}{
		"shipped": {func(map[string]interface{}) {}, ""},
		"no status subresource": {func(crd map[string]interface{}) {
			delete(fooVersion(crd)["subresources"].(map[string]interface{}), "status")
		}, "version v1alpha1 does not enable the status subresource"},
		"the classic sample-controller's status": {func(crd map[string]interface{}) {
			props := statusProperties(crd)
			for k := range props {
				if k != "availableReplicas" {
					delete(props, k)
				}
			}
		}, "its schema lacks status.replicas, status.selector, status.observedGeneration, status.conditions, which the API server would prune from every status write"},
		"status kept whole": {func(crd map[string]interface{}) {
			schema := fooVersion(crd)["schema"].(map[string]interface{})["openAPIV3Schema"].(map[string]interface{})
			schema["properties"].(map[string]interface{})["status"] = map[string]interface{}{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true}
		}, ""},
		"another version": {func(crd map[string]interface{}) { fooVersion(crd)["name"] = "v1" },
			"it does not define version v1alpha1"},
	} {
		t.Run(name, func(t *testing.T) {
			crd := shippedCRD(t)
			tc.edit(crd)
			if got := missingFrom(t, crd); got != tc.want {
				t.Errorf("missing:\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}
