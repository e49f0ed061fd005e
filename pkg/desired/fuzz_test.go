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

// Fuzz targets for the two pure functions between a Foo and the API server:
// the spec validation, and the mapping of a valid spec to a Deployment. Their
// seed corpus in testdata/fuzz runs with every "go test"; "make fuzz" explores
// beyond it.

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// FuzzValidateSpec: ValidateSpec accepts exactly the specs whose
// deploymentName is a DNS-1123 subdomain and whose replicas, when set, lie in
// MinReplicas..MaxReplicas, and blames each rejection on the field at fault.
func FuzzValidateSpec(f *testing.F) {
	f.Fuzz(func(t *testing.T, deploymentName string, replicas int32, replicasSet bool) {
		spec := fuzzedSpec(deploymentName, replicas, replicasSet)
		errs := ValidateSpec(spec)

		wantNameError := len(validation.IsDNS1123Subdomain(deploymentName)) > 0
		wantReplicasError := replicasSet && (replicas < samplev1beta1.MinReplicas || replicas > samplev1beta1.MaxReplicas)
		blamed := map[string]bool{}
		for _, err := range errs {
			blamed[err.Field] = true
		}
		if blamed["spec.deployment.name"] != wantNameError {
			t.Errorf("deploymentName %q: blamed %v, want %v (errors: %v)", deploymentName, blamed["spec.deployment.name"], wantNameError, errs)
		}
		if blamed["spec.replicas"] != wantReplicasError {
			t.Errorf("replicas %s: blamed %v, want %v (errors: %v)", describeInt32(spec.Replicas), blamed["spec.replicas"], wantReplicasError, errs)
		}
		delete(blamed, "spec.deployment.name")
		delete(blamed, "spec.replicas")
		if len(blamed) > 0 {
			t.Errorf("errors on fields the spec does not have: %v", errs)
		}
		// The controller reports the aggregate in the Foo's condition and
		// event: it must render whatever the input.
		if len(errs) > 0 && errs.ToAggregate().Error() == "" {
			t.Errorf("errors %#v render as an empty message", errs)
		}
	})
}

// FuzzDesiredDeployment: for every valid spec of every Foo the API server could
// hold, Deployment asks for a Deployment the API server accepts, owned by
// that Foo, selecting its own pods, and not drifted from itself once created.
func FuzzDesiredDeployment(f *testing.F) {
	f.Fuzz(func(t *testing.T, fooName, namespace string, uidHigh, uidLow uint64, deploymentName string, replicas int32, replicasSet bool) {
		foo, ok := fuzzedFoo(fooName, namespace, uidHigh, uidLow, deploymentName, replicas, replicasSet)
		if !ok {
			return
		}
		want := DeploymentFor(foo)
		created, err := deploymentObject(want)
		if err != nil {
			t.Fatalf("Foo %s/%s: %v", foo.Namespace, foo.Name, err)
		}
		for _, problem := range deploymentProblems(foo, created) {
			t.Errorf("Foo %s/%s (name %d characters), spec %q replicas %s: %s",
				foo.Namespace, foo.Name, len(foo.Name), foo.Spec.Deployment.Name, describeInt32(foo.Spec.Replicas), problem)
		}
		if drift, err := DeploymentDrift(want, CacheDeployment(created)); err != nil || len(drift) > 0 {
			t.Errorf("a freshly created Deployment drifts from the desired one in %v (error %v)", drift, err)
		}
	})
}

func fuzzedSpec(deploymentName string, replicas int32, replicasSet bool) *samplev1beta1.FooSpec {
	spec := &samplev1beta1.FooSpec{Deployment: samplev1beta1.FooDeployment{Name: deploymentName}}
	if replicasSet {
		spec.Replicas = &replicas
	}
	return spec
}

// fuzzedFoo builds a Foo from fuzz input, and reports whether the API server
// could hold it with a spec the controller acts on: its name a DNS-1123
// subdomain (as for any custom resource), its namespace a DNS-1123 label, its
// UID a UUID (the API server assigns one), its spec valid. The controller
// never maps any other Foo.
func fuzzedFoo(fooName, namespace string, uidHigh, uidLow uint64, deploymentName string, replicas int32, replicasSet bool) (*samplev1beta1.Foo, bool) {
	foo := &samplev1beta1.Foo{
		TypeMeta: metav1.TypeMeta{APIVersion: samplev1beta1.SchemeGroupVersion.String(), Kind: "Foo"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fooName,
			Namespace: namespace,
			UID:       uuidFrom(uidHigh, uidLow),
		},
		Spec: *fuzzedSpec(deploymentName, replicas, replicasSet),
	}
	ok := len(apivalidation.NameIsDNSSubdomain(fooName, false)) == 0 &&
		len(apivalidation.ValidateNamespaceName(namespace, false)) == 0 &&
		len(ValidateSpec(&foo.Spec)) == 0
	return foo, ok
}

// uuidFrom formats 128 bits as a UUID, the form of every UID the API server
// assigns.
func uuidFrom(high, low uint64) types.UID {
	return types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x",
		high>>32, high>>16&0xffff, high&0xffff, low>>48, low&0xffffffffffff))
}

// deploymentProblems lists why the API server would refuse d, or why d is not
// the Deployment foo asks for. The checks are those apimachinery offers for
// any object (metadata, labels, selectors) and the Deployment-specific rules
// of the API server's apps validation that concern the fields Deployment
// sets; the e2e test of the same mapping submits it to a real API server.
func deploymentProblems(foo *samplev1beta1.Foo, d *appsv1.Deployment) []string {
	var problems []string
	add := func(format string, args ...interface{}) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	addErrs := func(errs field.ErrorList) {
		for _, err := range errs {
			add("%v", err)
		}
	}

	// Metadata: name, namespace, labels, owner references.
	addErrs(apivalidation.ValidateObjectMeta(&d.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata")))
	if d.Name != foo.Spec.Deployment.Name || d.Namespace != foo.Namespace {
		add("Deployment %s/%s, want %s/%s", d.Namespace, d.Name, foo.Namespace, foo.Spec.Deployment.Name)
	}
	if got := d.Labels[samplecontroller.LabelManagedBy]; got != samplecontroller.ControllerName {
		add("label %s=%q, want %q", samplecontroller.LabelManagedBy, got, samplecontroller.ControllerName)
	}
	problems = append(problems, ownerProblems(foo, d.OwnerReferences)...)

	// Spec: replicas, selector, pod template.
	spec := d.Spec
	wantReplicas := int32(1) // the CRD's default for an unset spec.replicas
	if foo.Spec.Replicas != nil {
		wantReplicas = *foo.Spec.Replicas
	}
	if spec.Replicas == nil || *spec.Replicas < 0 || *spec.Replicas != wantReplicas {
		add("spec.replicas %v, want %d", describeInt32(spec.Replicas), wantReplicas)
	}
	addErrs(metav1validation.ValidateLabels(spec.Template.Labels, field.NewPath("spec", "template", "metadata", "labels")))
	problems = append(problems, selectorProblems(spec.Selector, spec.Template.Labels)...)
	if len(spec.Template.Spec.Containers) == 0 {
		add("the pod template has no container")
	}
	for i, c := range spec.Template.Spec.Containers {
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			add("container %d: name %q: %s", i, c.Name, msg)
		}
		if c.Image == "" || c.Image != strings.TrimSpace(c.Image) {
			add("container %d: image %q is empty or has surrounding whitespace", i, c.Image)
		}
	}
	return problems
}

// ownerProblems checks that the Foo, and only it, controls the Deployment,
// and blocks its deletion until the Deployment is gone (foreground deletion).
func ownerProblems(foo *samplev1beta1.Foo, refs []metav1.OwnerReference) []string {
	if len(refs) != 1 {
		return []string{fmt.Sprintf("%d owner references, want 1", len(refs))}
	}
	want := metav1.OwnerReference{
		APIVersion:         "samplecontroller.k8s.io/v1beta1",
		Kind:               "Foo",
		Name:               foo.Name,
		UID:                foo.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
	got := refs[0]
	if got.APIVersion != want.APIVersion || got.Kind != want.Kind || got.Name != want.Name || got.UID != want.UID ||
		got.Controller == nil || !*got.Controller || got.BlockOwnerDeletion == nil || !*got.BlockOwnerDeletion {
		return []string{fmt.Sprintf("owner reference %+v, want %+v", got, want)}
	}
	return nil
}

// selectorProblems checks the selector as the API server does for a
// Deployment (valid, and not empty, which would select every pod) and that
// it selects the pods of the template, without which the Deployment is
// refused.
func selectorProblems(selector *metav1.LabelSelector, templateLabels map[string]string) []string {
	if selector == nil || len(selector.MatchLabels)+len(selector.MatchExpressions) == 0 {
		return []string{"the selector is empty"}
	}
	var problems []string
	for _, err := range metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "selector")) {
		problems = append(problems, err.Error())
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return append(problems, err.Error())
	}
	if !s.Matches(labels.Set(templateLabels)) {
		problems = append(problems, fmt.Sprintf("selector %s does not match the template's labels %v", s, templateLabels))
	}
	return problems
}

func describeInt32(i *int32) string {
	if i == nil {
		return "unset"
	}
	return fmt.Sprint(*i)
}
