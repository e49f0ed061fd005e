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
// call directly. It also registers the kinds a Foo owns (Registrations,
// kinds.go; the Deployment's Registration, with what the cache keeps of it,
// in deployment.go) and builds the controller's informer of each
// (NewOwnedInformers). The controller in the repository root acts on these.
// How owned objects are cached, compared and written, for any kind, is
// pkg/owned's.
package desired

import (
	"crypto/sha256"
	"encoding/hex"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/owned"
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
func DeploymentFor(foo *samplev1beta1.Foo) *appsv1ac.DeploymentApplyConfiguration {
	labels := PodLabels(foo)
	return appsv1ac.Deployment(foo.Spec.Deployment.Name, foo.Namespace).
		WithLabels(labels).
		WithLabels(map[string]string{samplecontroller.LabelManagedBy: samplecontroller.ControllerName}).
		WithOwnerReferences(controllerReference(foo)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(Replicas(&foo.Spec)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().
					WithContainers(corev1ac.Container().
						WithName(ContainerName).
						WithImage(ContainerImage)))))
}

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

// The Deployment as the owned-object machinery knows it: what the cache
// keeps of a Deployment the controller manages, and which of its fields are
// the Foo's.

// Rollout is what ReadyCondition and StatusFor read of a Deployment's
// status: how its rollout goes. Not appsv1.DeploymentStatus: the cache
// keeps these fields, and nothing else of it.
type Rollout struct {
	ObservedGeneration                           int64
	Replicas, UpdatedReplicas, AvailableReplicas int32
	// ProgressDeadlineExceeded says the deployment controller gave up on the
	// rollout: its Progressing condition is False.
	ProgressDeadlineExceeded bool
}

// CachedDeployment is what the Deployment cache holds of a managed
// Deployment: the fields the controller reads, and nothing else
// (owned.Object).
type CachedDeployment = owned.Object[Rollout]

// Deployments registers the Deployment a Foo owns: the one it asks for
// (DeploymentFor), its client, what its cache keeps (Deployments.Compact),
// its fields the Foo owns (those DeploymentFor sets) and their drift. The
// steps of its sync, pkg/owned's for every kind, end in this client's
// calls: clientset.AppsV1().Deployments(namespace).Create, Apply and Delete.
var Deployments = &owned.Registration[*samplev1beta1.Foo, *appsv1.Deployment, *appsv1.DeploymentList,
	*appsv1ac.DeploymentApplyConfiguration, Rollout]{
	Kind:       "Deployment",
	Resource:   appsv1.Resource("deployments"),
	For:        DeploymentFor,
	Fields:     fieldsOf("Deployment", deploymentTypeName, DeploymentFor),
	ReadStatus: rolloutOf,
	Client: func(clientset kubernetes.Interface, namespace string) owned.Client[*appsv1.Deployment,
		*appsv1.DeploymentList, *appsv1ac.DeploymentApplyConfiguration] {
		return clientset.AppsV1().Deployments(namespace)
	},
}

// deploymentTypeName is the apps/v1 Deployment's type in the schema.
const deploymentTypeName = "io.k8s.api.apps.v1.Deployment"

// rolloutOf is what is read of d's status.
func rolloutOf(d *appsv1.Deployment) Rollout {
	st := Rollout{
		ObservedGeneration: d.Status.ObservedGeneration,
		Replicas:           d.Status.Replicas,
		UpdatedReplicas:    d.Status.UpdatedReplicas,
		AvailableReplicas:  d.Status.AvailableReplicas,
	}
	// The first Progressing condition says whether the rollout progresses.
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			st.ProgressDeadlineExceeded = c.Status == corev1.ConditionFalse
			break
		}
	}
	return st
}
