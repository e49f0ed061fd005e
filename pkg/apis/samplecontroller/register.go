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

// Package samplecontroller holds what every version of the Foo API shares:
// the group, the kind and resource names, and the names the controller writes
// into the cluster (well_known.go). Each version's types are in a package of
// their own below this one.
package samplecontroller

import "k8s.io/apimachinery/pkg/runtime/schema"

// GroupName is the API group of the Foo resource.
const GroupName = "samplecontroller.k8s.io"

// The names the API server knows Foos by. They are the same in every version
// of the API, so they live here, not in a versioned package: a new version
// changes the types, never these. The generated clientset and the kubebuilder
// markers of types.go (path, singular, shortName) spell them too, as literals;
// TestCRDNamesAreTheGoConstants fails until the generated CRD agrees with
// these. Hand-written code uses these constants, never the strings.
const (
	// FooKind is the kind of a Foo: its Go type's name, in apiVersion/kind
	// and in owner references.
	FooKind = "Foo"
	// FooResource is the resource (the plural) Foos are served under:
	// /apis/<group>/<version>/namespaces/<ns>/foos, in RBAC rules and in
	// audit logs. Plurals are not derived from kinds: Policy is policies.
	FooResource = "foos"
	// FooSingular is the CRD's singular name (kubectl get foo), also the
	// name of the controller's workqueue, as kube-controller-manager names
	// each of its queues after the kind it syncs.
	FooSingular = "foo"
	// FooShortName is the CRD's short name (kubectl get fo).
	FooShortName = "fo"
)

// FooGroupKind is the Foo's group and kind, which identify it in every
// version: an owner reference naming any served version of it names a Foo.
var FooGroupKind = schema.GroupKind{Group: GroupName, Kind: FooKind}
