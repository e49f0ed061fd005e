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

// Package testfixtures holds the objects the tests of several packages start
// from, written out rather than computed by the code under test: a Foo as the
// API server serves it, the Deployment the controller makes for it, the status
// it writes for a Deployment rolled out. One copy, so that every test means
// the same Foo by NewFoo("test", 1). It imports nothing of the controller's,
// so pkg/desired's own tests use it too (pkg/desired checks that
// OwnedDeployment is its desired.DeploymentFor).
package testfixtures

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// NewFoo returns a Foo as the API server would serve it: with a UID, a
// generation and spec.replicas defaulted; it asks for "<name>-deployment".
func NewFoo(name string, replicas int32) *samplev1beta1.Foo {
	return &samplev1beta1.Foo{
		TypeMeta: metav1.TypeMeta{APIVersion: samplev1beta1.SchemeGroupVersion.String(), Kind: samplecontroller.FooKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  metav1.NamespaceDefault,
			UID:        types.UID("uid-" + name),
			Generation: 1,
		},
		Spec: samplev1beta1.FooSpec{
			Deployment: samplev1beta1.FooDeployment{Name: name + "-deployment"},
			Replicas:   ptr.To(replicas),
		},
	}
}

// podLabels are the labels of a Foo's pods, for names of up to 63
// characters (longer ones are hashed: pkg/desired's tests cover those).
// Each string is a copy of its own, as a decoder allocates them.
func podLabels(t testing.TB, foo *samplev1beta1.Foo) map[string]string {
	t.Helper()
	if len(foo.Name) > 63 {
		t.Fatalf("Foo name %q: the fixtures take names of at most 63 characters", foo.Name)
	}
	return map[string]string{
		samplecontroller.LabelApp:        strings.Clone("nginx"),
		samplecontroller.LabelController: strings.Clone(foo.Name),
	}
}

// OwnedDeployment is the Deployment the controller would create for foo
// (resourceVersion 1, generation 1), rolled out with every replica
// available, as the API server serves it: no string shared with foo.
func OwnedDeployment(t testing.TB, foo *samplev1beta1.Foo) *appsv1.Deployment {
	t.Helper()
	if foo.Spec.Replicas == nil {
		t.Fatal("the fixtures take Foos with spec.replicas set")
	}
	n := *foo.Spec.Replicas
	labels := podLabels(t, foo)
	owned := podLabels(t, foo)
	owned[samplecontroller.LabelManagedBy] = strings.Clone(samplecontroller.ControllerName)
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            strings.Clone(foo.Spec.Deployment.Name),
			Namespace:       strings.Clone(foo.Namespace),
			UID:             types.UID("uid-" + foo.Spec.Deployment.Name),
			ResourceVersion: "1",
			Generation:      1,
			Labels:          owned,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: samplev1beta1.SchemeGroupVersion.String(), Kind: samplecontroller.FooKind,
				Name: strings.Clone(foo.Name), UID: foo.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels(t, foo)},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					Containers:                   []corev1.Container{{Name: "nginx", Image: "nginx:latest"}},
				},
			},
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 1, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
		},
	}
}

// SyncedAt is the lastTransitionTime of the Ready condition WithSyncedStatus
// writes.
var SyncedAt = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

// WithSyncedStatus gives foo the status the controller writes for
// deployment, which must be rolled out with every replica available: Ready,
// the replica counts, the pod selector, the Foo's generation.
func WithSyncedStatus(t testing.TB, foo *samplev1beta1.Foo, deployment *appsv1.Deployment) *samplev1beta1.Foo {
	t.Helper()
	want, st := *foo.Spec.Replicas, deployment.Status
	if st.ObservedGeneration < deployment.Generation ||
		st.UpdatedReplicas != want || st.Replicas != want || st.AvailableReplicas != want {
		t.Fatalf("WithSyncedStatus: Deployment %s is not rolled out: %+v", deployment.Name, st)
	}
	foo.Status = samplev1beta1.FooStatus{
		ObservedGeneration: foo.Generation,
		Replicas:           st.Replicas,
		AvailableReplicas:  st.AvailableReplicas,
		Selector: fmt.Sprintf("%s=nginx,%s=%s", samplecontroller.LabelApp,
			samplecontroller.LabelController, podLabels(t, foo)[samplecontroller.LabelController]),
		Conditions: []metav1.Condition{{
			Type:               samplecontroller.ConditionReady,
			Status:             metav1.ConditionTrue,
			ObservedGeneration: foo.Generation,
			LastTransitionTime: SyncedAt,
			Reason:             samplecontroller.ReasonAvailable,
			Message: fmt.Sprintf("Deployment %s: %d of %d replicas available",
				deployment.Name, st.AvailableReplicas, want),
		}},
	}
	return foo
}
