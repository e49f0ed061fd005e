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
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInputIsRefusedAndNothingWritten runs the command on this
// template with one bad input each, and checks its message and that the
// target is neither created nor changed.
func TestBadInputIsRefusedAndNothingWritten(t *testing.T) {
	good := map[string]string{"-module": "example.com/policy-operator", "-group": "policies.example.com", "-kind": "Policy"}
	cases := []struct {
		name string
		with map[string]string // flags that replace or add to good's
		// existing is a file the target holds already; "" for a target
		// that does not exist.
		existing string
		want     []string
	}{
		{"group without a dot", map[string]string{"-group": "policies"}, "",
			[]string{`-group "policies" is not a DNS-1123 subdomain with at least one dot`}},
		{"group with upper case", map[string]string{"-group": "Policies.example.com"}, "",
			[]string{`-group "Policies.example.com" is not a DNS-1123 subdomain`}},
		{"group with an empty label", map[string]string{"-group": "policies..example.com"}, "",
			[]string{`-group "policies..example.com" is not a DNS-1123 subdomain`}},
		{"group whose first label is no Go package", map[string]string{"-group": "my-policies.example.com"}, "",
			[]string{`-group "my-policies.example.com": its first label "my-policies" names the API's Go package`}},
		{"group that is the template's", map[string]string{"-group": "samplecontroller.k8s.io"}, "",
			[]string{`-group "samplecontroller.k8s.io" is the template's own API group`}},
		{"kind in lower case", map[string]string{"-kind": "policy"}, "",
			[]string{`-kind "policy" is not UpperCamelCase`}},
		{"kind with a dash", map[string]string{"-kind": "My-Policy"}, "",
			[]string{`-kind "My-Policy" is not UpperCamelCase`}},
		{"kind that is a Go keyword", map[string]string{"-kind": "Func"}, "",
			[]string{`-kind "Func": its lower-case form "func", a variable name in the copy, is a Go keyword`}},
		{"kind that is a predeclared identifier", map[string]string{"-kind": "Error"}, "",
			[]string{`-kind "Error": its lower-case form "error", a variable name in the copy, is a Go predeclared identifier`}},
		{"plural of a built-in resource", map[string]string{"-kind": "Deployment"}, "",
			[]string{`plural "deployments" is a built-in resource's`}},
		{"plural given that a built-in resource has", map[string]string{"-plural": "pods"}, "",
			[]string{`plural "pods" is a built-in resource's`}},
		{"short name of a built-in resource", map[string]string{"-short-name": "po"}, "",
			[]string{`-short-name "po" is a built-in resource's`}},
		{"short name svc", map[string]string{"-short-name": "svc"}, "",
			[]string{`-short-name "svc" is a built-in resource's`}},
		{"module path with a space", map[string]string{"-module": "example.com/policy operator"}, "",
			[]string{`-module "example.com/policy operator" is not a valid module path`}},
		{"module path without a dot in its first element", map[string]string{"-module": "policy-operator"}, "",
			[]string{`-module "policy-operator" is not a valid module path: malformed module path "policy-operator": missing dot in first path element`}},
		{"module path that is the template's", map[string]string{"-module": "github.com/kube-samples/sample-controller"}, "",
			[]string{`-module "github.com/kube-samples/sample-controller" is the template's own module path`}},
		{"name that is no DNS label", map[string]string{"-name": "Policy_Operator"}, "",
			[]string{`-name "Policy_Operator" (the controller's name`, "is not a DNS-1123 label of at most 40 characters"}},
		{"metric prefix ending in _", map[string]string{"-metric-prefix": "policy_"}, "",
			[]string{`-metric-prefix "policy_" is not lower-case letters`}},
		{"two problems at once", map[string]string{"-group": "policies", "-kind": "policy"}, "",
			[]string{`-group "policies" is not a DNS-1123 subdomain`, `-kind "policy" is not UpperCamelCase`}},
		{"target that is not empty", nil, "README.md",
			[]string{"exists and is not empty (1 entries); give a new or empty directory"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			target := filepath.Join(parent, "policy-operator")
			if tc.existing != "" {
				if err := os.MkdirAll(target, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(target, tc.existing), []byte("mine\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			flags := map[string]string{}
			for k, v := range good {
				flags[k] = v
			}
			for k, v := range tc.with {
				flags[k] = v
			}
			args := make([]string, 0, len(flags)+3)
			for k, v := range flags {
				args = append(args, k+"="+v)
			}
			args = append(args, "-verify=false", "-template=../..", target)

			var stdout, stderr bytes.Buffer
			err := run(args, &stdout, &stderr)
			if err == nil {
				t.Fatalf("run %v succeeded; want a refusal", args)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "nothing written") {
				t.Errorf("message %q does not start with %q", msg, "nothing written")
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not contain %q", msg, w)
				}
			}
			assertOnly(t, parent, target, tc.existing)
		})
	}
}

// assertOnly fails unless parent holds nothing but target, and target
// nothing but the file existing with its content (or no target at all,
// when existing is "").
func assertOnly(t *testing.T, parent, target, existing string) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if existing == "" {
		if len(entries) != 0 {
			t.Fatalf("%s holds %v after a refusal; want nothing", parent, entries)
		}
		return
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(target) {
		t.Fatalf("%s holds %v after a refusal; want only %s", parent, entries, filepath.Base(target))
	}
	inside, err := os.ReadDir(target)
	if err != nil {
		t.Fatal(err)
	}
	if len(inside) != 1 || inside[0].Name() != existing {
		t.Fatalf("%s holds %v after a refusal; want only %s", target, inside, existing)
	}
	if got, err := os.ReadFile(filepath.Join(target, existing)); err != nil || string(got) != "mine\n" {
		t.Fatalf("%s changed: %q, %v", existing, got, err)
	}
}

func TestTargetMissingIsUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run([]string{"-module=example.com/policy-operator", "-group=policies.example.com", "-kind=Policy"}, &stdout, &stderr)
	if err != errUsage {
		t.Fatalf("run without DIR: %v; want %v", err, errUsage)
	}
	if !strings.Contains(stderr.String(), "-kind string") {
		t.Errorf("usage does not list -kind: %s", stderr.String())
	}
}

func TestTemplateThatIsACopyIsRefused(t *testing.T) {
	copyRoot := t.TempDir()
	for rel, text := range map[string]string{
		"go.mod":                 "module example.com/policy-operator\n",
		"hack/update-codegen.sh": "#!/bin/sh\n",
	} {
		p := filepath.Join(copyRoot, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parent := t.TempDir()
	err := run([]string{"-template=" + copyRoot, "-module=example.com/other", "-group=others.example.com",
		"-kind=Other", "-verify=false", filepath.Join(parent, "other")}, &bytes.Buffer{}, &bytes.Buffer{})
	want := "(module example.com/policy-operator) is not this template: it has no pkg/apis/samplecontroller/v1beta1/types.go"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("run on a copy: %v; want an error containing %q", err, want)
	}
	assertOnly(t, parent, filepath.Join(parent, "other"), "")
}
