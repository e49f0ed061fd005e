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

package desired

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// ValidateSpec repeats the checks the CRD schema makes at admission. They
// matter when the CRD was installed without that schema (an older manifest, or
// a hand-made one): the controller must then refuse the spec itself, rather
// than fail on every retry when the API server rejects the Deployment.
func ValidateSpec(spec *samplev1beta1.FooSpec) field.ErrorList {
	var errs field.ErrorList
	namePath := field.NewPath("spec", "deployment", "name")
	if spec.Deployment.Name == "" {
		errs = append(errs, field.Required(namePath, "the name of the Deployment to create"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(spec.Deployment.Name) {
			errs = append(errs, field.Invalid(namePath, spec.Deployment.Name, msg))
		}
	}
	if r := spec.Replicas; r != nil && (*r < samplev1beta1.MinReplicas || *r > samplev1beta1.MaxReplicas) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "replicas"), *r,
			fmt.Sprintf("must be between %d and %d", samplev1beta1.MinReplicas, samplev1beta1.MaxReplicas)))
	}
	return errs
}

// CheckSpec is ValidateSpec as the controller reports it: nil for a valid
// spec, else a problem (InvalidSpecProblem).
func CheckSpec(spec *samplev1beta1.FooSpec) error {
	if errs := ValidateSpec(spec); len(errs) > 0 {
		return InvalidSpecProblem(errs)
	}
	return nil
}

// Replicas is the replica count a valid spec asks for: the API server
// defaults an omitted spec.replicas to MinReplicas, and so does the controller
// for CRDs without that default.
func Replicas(spec *samplev1beta1.FooSpec) int32 {
	if spec.Replicas == nil {
		return samplev1beta1.MinReplicas
	}
	return *spec.Replicas
}
