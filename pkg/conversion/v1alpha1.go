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

package conversion

import (
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// What changed from v1alpha1 to v1beta1: spec.deploymentName moved to
// spec.deployment.name. Everything else is the same field under the same
// name, so every field converts both ways and nothing is lost: a Foo read
// in v1alpha1 and written back is the Foo it was.

// V1alpha1ToHub converts a v1alpha1 Foo to the hub version.
func V1alpha1ToHub(in *v1alpha1.Foo) *Hub {
	return &v1beta1.Foo{
		TypeMeta:   in.TypeMeta,
		ObjectMeta: in.ObjectMeta,
		Spec: v1beta1.FooSpec{
			Deployment: v1beta1.FooDeployment{Name: in.Spec.DeploymentName},
			Replicas:   in.Spec.Replicas,
		},
		Status: v1beta1.FooStatus(in.Status),
	}
}

// HubToV1alpha1 converts a hub Foo to v1alpha1.
func HubToV1alpha1(in *Hub) *v1alpha1.Foo {
	return &v1alpha1.Foo{
		TypeMeta:   in.TypeMeta,
		ObjectMeta: in.ObjectMeta,
		Spec: v1alpha1.FooSpec{
			DeploymentName: in.Spec.Deployment.Name,
			Replicas:       in.Spec.Replicas,
		},
		Status: v1alpha1.FooStatus(in.Status),
	}
}
