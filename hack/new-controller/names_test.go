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

import "testing"

func TestPluralsOfKinds(t *testing.T) {
	for kind, want := range map[string]string{
		"Policy": "Policies", "Ingress": "Ingresses", "Box": "Boxes", "Match": "Matches", "Mesh": "Meshes",
		"Gateway": "Gateways", "Key": "Keys", "Foo": "Foos", "DatabaseCluster": "DatabaseClusters",
		"Proxy": "Proxies", "Status": "Statuses",
	} {
		if got := pluralize(kind); got != want {
			t.Errorf("pluralize(%q) = %q, want %q", kind, got, want)
		}
	}
}

func TestNamesDerivedFromModuleGroupAndKind(t *testing.T) {
	got, err := derive(options{Module: "example.com/policy-operator", Group: "policies.example.com", Kind: "Policy"},
		"github.com/kube-samples/sample-controller")
	if err != nil {
		t.Fatal(err)
	}
	want := names{
		Module: "example.com/policy-operator", Group: "policies.example.com", GroupPackage: "policies",
		GroupGoName: "Policies", Kind: "Policy", KindPlural: "Policies", Plural: "policies",
		Singular: "policy", ShortName: "pol", Name: "policy-operator", MetricPrefix: "policy_operator",
	}
	if got != want {
		t.Errorf("derived\n%+v\nwant\n%+v", got, want)
	}
}

func TestNamesOverridden(t *testing.T) {
	got, err := derive(options{Module: "example.com/team/octo/v2", Group: "sea.example.com", Kind: "Octopus",
		Plural: "octopodes", Singular: "octo", ShortName: "oc", Metrics: "sea"},
		"github.com/kube-samples/sample-controller")
	if err != nil {
		t.Fatal(err)
	}
	want := names{
		Module: "example.com/team/octo/v2", Group: "sea.example.com", GroupPackage: "sea", GroupGoName: "Sea",
		Kind: "Octopus", KindPlural: "Octopodes", Plural: "octopodes", Singular: "octo",
		ShortName: "oc", Name: "octo", MetricPrefix: "sea",
	}
	if got != want {
		t.Errorf("derived\n%+v\nwant\n%+v", got, want)
	}
}
