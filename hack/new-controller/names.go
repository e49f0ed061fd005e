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
	"path"
	"regexp"
	"strings"
)

// The template's names: what this repository calls its API, its kind and
// itself. The module path is read from the template's go.mod; these are
// written out once here, and the leftover check (leftover.go) finds any
// the rewrite misses.
const (
	oldGroup        = "samplecontroller.k8s.io"
	oldKind         = "Foo"
	oldKindPlural   = "Foos"
	oldShortName    = "fo"
	oldName         = "sample-controller"
	oldMetricPrefix = "samplecontroller"
	// oldStorageVersion is the version the controller reads and writes.
	oldStorageVersion = "v1beta1"
)

// oldVersions are the versions of the template's API, which the copy serves
// as they are, under its own group and kind (docs/api-versions.md says how
// a fork adds its next one and retires the old).
var oldVersions = []string{"v1alpha1", oldStorageVersion}

// names is everything the copy is called, each form spelled out once.
type names struct {
	Module string // example.com/policy-operator
	Group  string // policies.example.com
	// GroupPackage is the API group's Go package (pkg/apis/<GroupPackage>),
	// the group's first label: code-generator names the generated
	// packages after it.
	GroupPackage string // policies
	// GroupGoName is client-gen's and informer-gen's name for the group:
	// namer.IC of the group's first label, e.g. PoliciesV1alpha1().
	GroupGoName  string // Policies
	Kind         string // Policy
	KindPlural   string // Policies: in identifiers (enqueuePolicies)
	Plural       string // policies: the resource
	Singular     string // policy
	ShortName    string // pol
	Name         string // policy-operator: binary, Lease, RBAC, namespace, image
	MetricPrefix string // policy_operator: without the trailing underscore
}

// lowerFirst is s with its first letter in lower case: the unexported
// identifier form of an exported one (DatabaseCluster -> databaseCluster).
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// upperFirst is s with its first letter in upper case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// pluralize is the English plural of an UpperCamelCase kind, by the few
// rules that cover kinds: the last word's -y after a consonant becomes
// -ies (Policy -> Policies), -s, -x, -z, -ch, -sh take -es (Ingress ->
// Ingresses, Box -> Boxes), anything else takes -s. Irregular plurals
// (Person -> People) are -plural's to give.
func pluralize(kind string) string {
	lower := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(lower, "y") && len(lower) > 1 && !strings.ContainsRune("aeiou", rune(lower[len(lower)-2])):
		return kind[:len(kind)-1] + "ies"
	case strings.HasSuffix(lower, "s"), strings.HasSuffix(lower, "x"), strings.HasSuffix(lower, "z"),
		strings.HasSuffix(lower, "ch"), strings.HasSuffix(lower, "sh"):
		return kind + "es"
	default:
		return kind + "s"
	}
}

// versionSuffix matches a major-version element of a module path (v2, v3, ...).
var versionSuffix = regexp.MustCompile(`^v[0-9]+$`)

// nameFromModule is the controller's default name: the module path's last
// element, skipping a major-version suffix (example.com/policy-operator/v2
// -> policy-operator), in lower case.
func nameFromModule(module string) string {
	last := path.Base(module)
	if versionSuffix.MatchString(last) && path.Dir(module) != "." {
		last = path.Base(path.Dir(module))
	}
	return strings.ToLower(last)
}

// pascal is a kebab-case name in UpperCamelCase: policy-operator ->
// PolicyOperator (the alerts' names).
func pascal(kebab string) string {
	parts := strings.Split(kebab, "-")
	for i, p := range parts {
		parts[i] = upperFirst(p)
	}
	return strings.Join(parts, "")
}

// title is a kebab-case name in words: policy-operator -> Policy Operator
// (the dashboard's title).
func title(kebab string) string {
	parts := strings.Split(kebab, "-")
	for i, p := range parts {
		parts[i] = upperFirst(p)
	}
	return strings.Join(parts, " ")
}

// snake is a kebab-case name with underscores: policy-operator ->
// policy_operator (the default metric prefix).
func snake(kebab string) string {
	return strings.ReplaceAll(kebab, "-", "_")
}

// reverseDomain is a DNS name's labels in reverse order, the form OpenAPI
// gives a CRD's definitions: policies.example.com -> com.example.policies.
func reverseDomain(name string) string {
	labels := strings.Split(name, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ".")
}
