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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The +genclient and deepcopy tags below drive k8s.io/code-generator; the
// kubebuilder markers are read by controller-gen, which generates
// artifacts/examples/crd.yaml from these types (hack/update-codegen.sh); the
// doc comments become the descriptions "kubectl explain" prints.
//
// A *.k8s.io group is reserved for the Kubernetes project: the API server
// refuses such a CRD without the api-approved.kubernetes.io annotation.
// Category "all": a Foo is a workload, so "kubectl get all" lists it beside
// the Deployment, ReplicaSet and pods it makes, and "kubectl delete all"
// deletes it rather than only its Deployment, which the controller would
// recreate.
//
// (Only the tag block just above a type's doc comment is read by the
// generators; this note stands apart so it reaches no generated output.)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=unapproved, sample API for learning"
// +kubebuilder:resource:path=foos,singular=foo,scope=Namespaced,shortName=fo,categories=all
// +kubebuilder:deprecatedversion:warning="samplecontroller.k8s.io/v1alpha1 Foo is deprecated; use samplecontroller.k8s.io/v1beta1 (spec.deploymentName is spec.deployment.name there)"
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Deployment",type=string,JSONPath=`.spec.deploymentName`,description="Name of the Deployment the Foo asks for."
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Number of pods asked for."
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,description="Number of available pods of the Deployment."
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the Deployment is rolled out with all replicas available."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Foo asks for a Deployment of nginx pods. The sample-controller creates a
// Deployment named spec.deploymentName in the Foo's namespace, owned by the
// Foo (deleting the Foo deletes it), keeps its replicas, selector, labels and
// pod template as the Foo says, and reports what it observes in status.
type Foo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// What the user asks for.
	// +required
	Spec FooSpec `json:"spec"`
	// What the controller last observed. Written by the controller only.
	// +optional
	Status FooStatus `json:"status,omitempty"`
}

// FooSpec is what the user asks for.
type FooSpec struct {
	// Name of the Deployment to create in the Foo's namespace. It must be a
	// DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and
	// ending with a letter or digit, at most 253 characters. Changing it makes
	// the controller create the Deployment under the new name first, then
	// delete the one under the old name. A Deployment of that name that the
	// Foo does not control is left untouched, and the Foo reports Ready=False
	// with reason ResourceExists.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	DeploymentName string `json:"deploymentName"`
	// Number of pods the Deployment runs, from 1 to 10. Defaults to 1. It is
	// the Foo's scale subresource, so "kubectl scale foo/NAME --replicas=N" and
	// a HorizontalPodAutoscaler can set it.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=1
	Replicas *int32 `json:"replicas,omitempty"`
}

// Bounds of FooSpec.Replicas, enforced at admission by the CRD schema and again
// by the controller for CRDs installed without validation. The markers on
// FooSpec.Replicas repeat them as literals (markers cannot name a constant);
// a unit test keeps the two equal.
const (
	MinReplicas int32 = 1
	MaxReplicas int32 = 10
)

// FooStatus is what the controller last observed.
type FooStatus struct {
	// Number of available pods of the Deployment.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas"`
	// Number of pods the Deployment has, ready or not: the current replica
	// count of the Foo's scale subresource.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Label selector of the Deployment's pods, in string form, for the scale
	// subresource (and so for a HorizontalPodAutoscaler). At most 1024
	// characters.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Selector string `json:"selector,omitempty"`
	// The metadata.generation of the Foo this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// The Foo's one condition, Ready: True (reason Available) when the
	// Deployment is rolled out with all the requested replicas updated and
	// available. Otherwise False, with reason Progressing while the rollout
	// or scaling is under way or has exceeded its progress deadline,
	// ResourceExists when a Deployment the Foo does not control has the
	// requested name, InvalidSpec when the controller refuses the spec, or
	// FailedCreate, FailedUpdate or FailedDelete when the API server refuses
	// the controller's write of the Deployment (a quota, an admission policy,
	// missing permission; retried with backoff); the message says more.
	// Each False reason also comes as one Warning event on the Foo; so does
	// StatusPruned, when the installed CRD is outdated and the API server
	// drops status fields. Normal events, reason Synced, record each
	// Deployment the controller creates, updates or deletes.
	// At most 8 conditions, each message at most 1024 characters: the
	// controller cuts a longer message of its own (a refused write quotes
	// the API server's error) and ends it with "…".
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:XValidation:rule="size(self.message) <= 1024",fieldPath=".message",message="must be at most 1024 characters: a Foo's status is kept small"
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FooList is a list of Foos.
type FooList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []Foo `json:"items"`
}
