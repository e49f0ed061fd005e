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

// Package desired is what a Foo means: the objects a Foo asks for, the
// status and Ready condition it should have, which specs are valid, and the
// problems a Foo can report with their reasons, each a pure function of the
// objects involved, which the tests, the end-to-end suite and the benchmark
// call directly. It also says what the Deployment cache keeps of a
// Deployment (CachedDeployment, cached_deployment.go) and lists the kinds a
// Foo owns for the tools that generate their policies (OwnedKinds,
// kinds.go). The controller in the repository root acts on these.
package desired

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// The single container of the pod template.
const (
	ContainerName  = "nginx"
	ContainerImage = "nginx:latest"
)

// PodLabels are the labels of the Foo's pods, and so the Deployment's
// selector. A Deployment's selector cannot change, so neither may these.
func PodLabels(foo *samplev1beta1.Foo) map[string]string {
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

// DeploymentFor returns the Deployment a Foo asks for. It is a pure function
// of the Foo, and it names exactly the fields the controller owns: server-side
// apply writes these and leaves every other field, such as another team's
// labels or annotations, to whoever set it.
// A Foo's pods run nginx and call no API: they get no ServiceAccount token.
func DeploymentFor(foo *samplev1beta1.Foo) *appsv1ac.DeploymentApplyConfiguration {
	labels := PodLabels(foo)
	return appsv1ac.Deployment(foo.Spec.Deployment.Name, foo.Namespace).
		WithLabels(labels).
		WithLabels(ManagedByLabels).
		WithOwnerReferences(controllerReference(foo)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(Replicas(&foo.Spec)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().
					WithAutomountServiceAccountToken(false).
					WithContainers(corev1ac.Container().
						WithName(ContainerName).
						WithImage(ContainerImage)))))
}

// NewDeployment returns the Deployment a Foo asks for as the object a
// create sends, as upstream's newDeployment does: the fields DeploymentFor
// sets, and only those (TestNewDeploymentSetsWhatDeploymentForSets holds the
// two to each other). A create is a plain create, not an apply: an apply
// would take over a Deployment of that name the cache does not see.
func NewDeployment(foo *samplev1beta1.Foo) *appsv1.Deployment {
	labels := PodLabels(foo)
	objectLabels := maps.Clone(labels)
	maps.Copy(objectLabels, ManagedByLabels)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      foo.Spec.Deployment.Name,
			Namespace: foo.Namespace,
			Labels:    objectLabels,
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(foo, samplev1beta1.SchemeGroupVersion.WithKind(samplecontroller.FooKind)),
			},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(Replicas(&foo.Spec)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(labels)}, // its own: an edit of one is not of both
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					Containers:                   []corev1.Container{{Name: ContainerName, Image: ContainerImage}},
				},
			},
		},
	}
}

// ManagedByLabels mark the objects the controller manages: its informers
// list and watch those alone.
var ManagedByLabels = map[string]string{samplecontroller.LabelManagedBy: samplecontroller.ControllerName}

// controllerReference makes foo the controller of an object it owns: the
// garbage collector deletes the object with foo, and does not delete foo
// before it (blockOwnerDeletion) when foo is deleted in the foreground.
func controllerReference(foo *samplev1beta1.Foo) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(samplev1beta1.SchemeGroupVersion.String()).
		WithKind(samplecontroller.FooKind).
		WithName(foo.Name).
		WithUID(foo.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}
