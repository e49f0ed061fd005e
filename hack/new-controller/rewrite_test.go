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

func policyNames() names {
	return names{
		Module: "example.com/policy-operator", Group: "policies.example.com", GroupPackage: "policies",
		GroupGoName: "Policies", Kind: "Policy", KindPlural: "Policies", Plural: "policies",
		Singular: "policy", ShortName: "pol", Name: "policy-operator", MetricPrefix: "policy_operator",
	}
}

const templateModule = "github.com/kube-samples/sample-controller"

func TestRewriteRenamesEveryFormAndOnlyWholeWords(t *testing.T) {
	texts := []string{"- alert: SampleControllerFoosNotReady\n"}
	rw := newNameRewriter(templateModule, policyNames(), texts)
	for in, want := range map[string]string{
		// module, imports and the generated packages' paths
		`samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"`: `policiesv1alpha1 "example.com/policy-operator/pkg/apis/policies/v1alpha1"`,
		`"github.com/kube-samples/sample-controller/pkg/generated/listers/samplecontroller/v1alpha1"`:   `"example.com/policy-operator/pkg/generated/listers/policies/v1alpha1"`,
		"module github.com/kube-samples/sample-controller/hack/tools/k8s-1.37":                          "module example.com/policy-operator/hack/tools/k8s-1.37",
		// the group, its package, client-gen's accessors, OpenAPI's name
		"apiVersion: samplecontroller.k8s.io/v1alpha1":                   "apiVersion: policies.example.com/v1alpha1",
		`const FooCRDName = "foos." + samplecontroller.GroupName`:        `const PolicyCRDName = "policies." + policies.GroupName`,
		"crd/foos.samplecontroller.k8s.io":                               "crd/policies.policies.example.com",
		"c.sampleclientset.SamplecontrollerV1alpha1().Foos(c.namespace)": "c.policiesclientset.PoliciesV1alpha1().Policies(c.namespace)",
		"i.Samplecontroller().V1alpha1().Foos()":                         "i.Policies().V1alpha1().Policies()",
		`"io.k8s.samplecontroller.v1alpha1.FooList"`:                     `"com.example.policies.v1alpha1.PolicyList"`,
		"samplescheme.AddToScheme(scheme.Scheme)":                        "policiesscheme.AddToScheme(scheme.Scheme)",
		// the kind: plural first, identifiers, words, file names
		"enqueueFoo(fooInformer, foosLister, FooList, FooSpec)": "enqueuePolicy(policyInformer, policiesLister, PolicyList, PolicySpec)",
		"kubectl get foos; kubectl get foo/example-foo":         "kubectl get policies; kubectl get policy/example-policy",
		"artifacts/examples/example-foo.yaml":                   "artifacts/examples/example-policy.yaml",
		"SOAK_FOOS=10 E2E_FAULT_FOOS FOO":                       "SOAK_POLICIES=10 E2E_FAULT_POLICIES POLICY",
		"requests_per_foo foo2 TestFooDeletedDoesNothing":       "requests_per_policy policy2 TestPolicyDeletedDoesNothing",
		"shortName=fo,categories=all\n    - fo\n":               "shortName=pol,categories=all\n    - pol\n",
		// words that only contain the kind's letters stay
		"food footer Football fool BigFoot FOOD SgsVHtfooshd0 info for of": "food footer Football fool BigFoot FOOD SgsVHtfooshd0 info for of",
		// the controller's name and metric prefix
		"sample-controller-leader-election sample-controller:latest":           "policy-operator-leader-election policy-operator:latest",
		`samplecontroller_foos{job="sample-controller"}`:                       `policy_operator_policies{job="policy-operator"}`,
		`const subsystem = "samplecontroller"`:                                 `const subsystem = "policy_operator"`,
		"alert: SampleControllerFoosNotReady, #samplecontrollerfoosnotready":   "alert: PolicyOperatorPoliciesNotReady, #policyoperatorpoliciesnotready",
		`"title": "Sample Controller"`:                                         `"title": "Policy Operator"`,
		"Copyright The Sample Controller Authors.":                             "Copyright The Sample Controller Authors.",
		"sampler samples sampled sample_index k8s.io/sample-apiserver resampl": "sampler samples sampled sample_index k8s.io/sample-apiserver resampl",
		// another API's version stays
		"apiVersion: config.kwok.x-k8s.io/v1alpha1": "apiVersion: config.kwok.x-k8s.io/v1alpha1",
	} {
		if got := rw.rewrite(in); got != want {
			t.Errorf("rewrite(%q)\n= %q\nwant %q", in, got, want)
		}
	}
}

// TestRewriteIsOnePass: a new name holding an old one (kind FooBar, group
// package foo) is not renamed again.
func TestRewriteIsOnePass(t *testing.T) {
	n := policyNames()
	n.Kind, n.KindPlural, n.Plural, n.Singular = "FooBar", "FooBars", "foobars", "foobar"
	rw := newNameRewriter(templateModule, n, nil)
	if got, want := rw.rewrite("Foo fooInformer Foos"), "FooBar fooBarInformer FooBars"; got != want {
		t.Errorf("rewrite = %q, want %q", got, want)
	}
}

// The copy serves the template's versions under its own group: each
// version keeps its name, and the names made of group and version take the
// copy's group.
func TestRewriteKeepsEveryVersionUnderTheNewGroup(t *testing.T) {
	rw := newNameRewriter(templateModule, policyNames(), nil)
	for in, want := range map[string]string{
		"samplecontroller.k8s.io/v1alpha1 pkg/apis/samplecontroller/v1beta1": "policies.example.com/v1alpha1 pkg/apis/policies/v1beta1",
		`v1alpha1.Foo{} samplev1beta1.Foo{} SamplecontrollerV1beta1()`:       `v1alpha1.Policy{} policiesv1beta1.Policy{} PoliciesV1beta1()`,
		"samplecontrollerv1alpha1 SamplecontrollerV1alpha1()":                "policiesv1alpha1 PoliciesV1alpha1()",
		"config.kwok.x-k8s.io/v1alpha1":                                      "config.kwok.x-k8s.io/v1alpha1",
	} {
		if got := rw.rewrite(in); got != want {
			t.Errorf("rewrite(%q)\n= %q\nwant %q", in, got, want)
		}
	}
}

func TestTemplateOnlyBlocksAreDropped(t *testing.T) {
	in := "a\n# new-controller:template-only:begin\nb\n# new-controller:template-only:end\nc\n"
	got, err := dropTemplateOnly("Makefile", in)
	if err != nil || got != "a\nc\n" {
		t.Errorf("dropTemplateOnly = %q, %v; want %q", got, err, "a\nc\n")
	}
	if _, err := dropTemplateOnly("Makefile", "# new-controller:template-only:begin\n"); err == nil {
		t.Error("an unterminated block: no error")
	}
}

func TestMeasuredPagesSayWhoseFiguresTheyHold(t *testing.T) {
	in := "# Performance\n\nRun on 2026-11-24: 1.16.\n"
	want := "# Performance\n\n" + measuredNote + "\nRun on 2026-11-24: 1.16.\n"
	if got := markMeasured("docs/performance.md", in); got != want {
		t.Errorf("markMeasured = %q, want %q", got, want)
	}
	if got := markMeasured("docs/operations.md", in); got != in {
		t.Errorf("markMeasured of another page = %q, want it unchanged", got)
	}
}
