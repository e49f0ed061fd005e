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

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Foo asks for a Deployment: the controller creates one named
// spec.deploymentName, owned by the Foo, runs spec.replicas pods in it, and
// reports what it sees in status.
type Foo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FooSpec   `json:"spec"`
	Status FooStatus `json:"status,omitempty"`
}

// FooSpec is what the user asks for.
type FooSpec struct {
	// DeploymentName is the name of the Deployment to create in the Foo's
	// namespace. It must be a DNS-1123 subdomain.
	DeploymentName string `json:"deploymentName"`
	// Replicas is the number of pods the Deployment runs, from MinReplicas to
	// MaxReplicas. The API server defaults it to 1.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
}

// Bounds of FooSpec.Replicas, enforced at admission by the CRD schema and again
// by the controller for CRDs installed without validation.
const (
	MinReplicas int32 = 1
	MaxReplicas int32 = 10
)

// FooStatus is what the controller last observed.
type FooStatus struct {
	// AvailableReplicas is the number of available pods of the Deployment.
	AvailableReplicas int32 `json:"availableReplicas"`
	// Replicas is the number of pods the Deployment has, ready or not. The
	// scale subresource reports it as the current replica count.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Selector is the label selector of the Deployment's pods in string form,
	// for the scale subresource (and so for a HorizontalPodAutoscaler).
	// +optional
	Selector string `json:"selector,omitempty"`
	// ObservedGeneration is the metadata.generation of the Foo this status
	// describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds the Ready condition.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// FooList is a list of Foos.
type FooList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []Foo `json:"items"`
}
