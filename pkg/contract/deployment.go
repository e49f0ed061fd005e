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

// Package contract is what a Foo means, as pure functions of the objects
// involved: the Deployment a Foo asks for, the status and Ready condition it
// should have, which specs are valid, the problems a Foo can report with their
// reasons, and what the informer caches keep of each object. The controller
// in the repository root acts on these; the tests, the end-to-end suite and
// the benchmark call them directly.
package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

// The single container of the pod template.
const (
	ContainerName  = "nginx"
	ContainerImage = "nginx:latest"
)

// PodLabels are the labels of the Foo's pods, and so the Deployment's
// selector. A Deployment's selector cannot change, so neither may these.
func PodLabels(foo *samplev1alpha1.Foo) map[string]string {
	return map[string]string{
		samplecontroller.LabelApp:        "nginx",
		samplecontroller.LabelController: LabelValue(foo.Name),
	}
}

// LabelValue is the Foo's name as a label value. A Foo's name may have up
// to 253 characters, a label value only 63: a longer name is cut to its first
// 52 characters and followed by a hash of the whole name, so that two long
// names still get different values. Names of 63 characters or fewer are used
// as they are.
func LabelValue(name string) string {
	if len(name) <= validation.LabelValueMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:52] + "-" + hex.EncodeToString(sum[:])[:10]
}

// DesiredDeployment returns the Deployment a Foo asks for. It is a pure function
// of the Foo, and it names exactly the fields the controller owns: server-side
// apply writes these and leaves every other field, such as another team's
// labels or annotations, to whoever set it.
func DesiredDeployment(foo *samplev1alpha1.Foo) *appsv1ac.DeploymentApplyConfiguration {
	labels := PodLabels(foo)
	return appsv1ac.Deployment(foo.Spec.DeploymentName, foo.Namespace).
		WithLabels(labels).
		WithLabels(map[string]string{samplecontroller.LabelManagedBy: samplecontroller.ControllerName}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(samplev1alpha1.SchemeGroupVersion.String()).
			WithKind(samplecontroller.FooKind).
			WithName(foo.Name).
			WithUID(foo.UID).
			WithController(true).
			WithBlockOwnerDeletion(true)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(DesiredReplicas(&foo.Spec)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().
					WithContainers(corev1ac.Container().
						WithName(ContainerName).
						WithImage(ContainerImage)))))
}

// DeploymentObject turns the desired state into an object for a plain
// create. An apply configuration serializes to exactly the fields it sets,
// so the round trip through JSON yields the same Deployment an apply would
// create.
func DeploymentObject(desired *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	data, err := json.Marshal(desired)
	if err != nil {
		return nil, err
	}
	deployment := &appsv1.Deployment{}
	if err := json.Unmarshal(data, deployment); err != nil {
		return nil, err
	}
	return deployment, nil
}

// ControllerRef returns the object's controller reference when its controller
// is a Foo, else nil. A Foo is known by its group and kind, in any version:
// an owner reference keeps the apiVersion it was written with, so once the
// API serves a second version, the objects made before name the first one,
// and those made after may name either. Whether it is this Foo is its UID's
// to say (ControlledBy), as kube-controller-manager's controllers
// match the kind and then the UID.
func ControllerRef(object metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(object)
	if ref == nil || ref.Kind != samplecontroller.FooKind {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != samplecontroller.GroupName {
		return nil
	}
	return ref
}

// ControlledBy reports whether foo controls object: its controller reference
// names a Foo (ControllerRef) with foo's UID. metav1.IsControlledBy compares
// the UID alone; this also checks the group and kind, so that every path (the
// event handlers, the index, the writes) agrees on what a Foo controls.
func ControlledBy(object metav1.Object, foo metav1.Object) bool {
	ref := ControllerRef(object)
	return ref != nil && ref.UID == foo.GetUID()
}
