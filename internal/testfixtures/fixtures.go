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
// from: a Foo as the API server serves it, the Deployment the controller
// makes for it, the status it writes. One copy, so that every test means the
// same Foo by newFoo("test", 1).
package testfixtures

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/contract"
)

// NewFoo returns a Foo as the API server would serve it: with a UID, a
// generation and spec.replicas defaulted; it asks for "<name>-deployment".
func NewFoo(name string, replicas int32) *samplev1alpha1.Foo {
	return &samplev1alpha1.Foo{
		TypeMeta: metav1.TypeMeta{APIVersion: samplev1alpha1.SchemeGroupVersion.String(), Kind: "Foo"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  metav1.NamespaceDefault,
			UID:        types.UID("uid-" + name),
			Generation: 1,
		},
		Spec: samplev1alpha1.FooSpec{
			DeploymentName: name + "-deployment",
			Replicas:       ptr.To(replicas),
		},
	}
}

// OwnedDeployment is the Deployment the controller would create for foo,
// rolled out with every replica available.
func OwnedDeployment(t testing.TB, foo *samplev1alpha1.Foo) *appsv1.Deployment {
	t.Helper()
	d, err := contract.DeploymentObject(contract.DesiredDeployment(foo))
	if err != nil {
		t.Fatal(err)
	}
	d.UID = types.UID("uid-" + d.Name)
	d.ResourceVersion = "1"
	d.Generation = 1
	n := *d.Spec.Replicas
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	return d
}

// WithSyncedStatus gives foo the status the controller writes for deployment,
// which it reads, as every Deployment, through contract.NewCachedDeployment.
func WithSyncedStatus(foo *samplev1alpha1.Foo, deployment *appsv1.Deployment) *samplev1alpha1.Foo {
	cached := contract.NewCachedDeployment(deployment)
	foo.Status = contract.DesiredStatus(foo, cached, contract.ReadyCondition(foo, cached))
	return foo
}
