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
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/foocache"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

func TestDeploymentDrift(t *testing.T) {
	foo := testfixtures.NewFoo("test", 2)
	for name, tc := range map[string]struct {
		mutate func(*appsv1.Deployment)
		want   string
	}{
		"as desired": {func(*appsv1.Deployment) {}, ""},
		"foreign label and annotation": {func(d *appsv1.Deployment) {
			d.Labels["team"] = "payments"
			d.Annotations = map[string]string{"note": "x"}
		}, ""},
		"foreign container": {func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar"})
		}, ""},
		"replicas":          {func(d *appsv1.Deployment) { d.Spec.Replicas = nil }, ".spec.replicas"},
		"label removed":     {func(d *appsv1.Deployment) { delete(d.Labels, samplecontroller.LabelManagedBy) }, ".metadata.labels.app.kubernetes.io/managed-by"},
		"label changed":     {func(d *appsv1.Deployment) { d.Labels["app"] = "other" }, ".metadata.labels.app"},
		"selector":          {func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels["extra"] = "x" }, ".spec.selector"},
		"template label":    {func(d *appsv1.Deployment) { delete(d.Spec.Template.Labels, "app") }, ".spec.template.metadata.labels.app"},
		"image":             {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "busybox" }, `.spec.template.spec.containers[name="nginx"].image`},
		"container renamed": {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "web" }, `.spec.template.spec.containers[name="nginx"]`},
		"several": {func(d *appsv1.Deployment) {
			*d.Spec.Replicas = 5
			d.Spec.Template.Spec.Containers[0].Image = "busybox"
		}, `.spec.replicas,.spec.template.spec.containers[name="nginx"].image`},
	} {
		t.Run(name, func(t *testing.T) {
			d := testfixtures.OwnedDeployment(t, foo)
			tc.mutate(d)
			drift, err := DeploymentDrift(DeploymentFor(foo), CacheDeployment(d))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(drift, ","); got != tc.want {
				t.Errorf("drift %q, want %q", got, tc.want)
			}
		})
	}
}

// DeploymentFor is a pure function of the Foo: the same Foo, the same
// Deployment, and a replicas default of 1.
func TestNewDeployment(t *testing.T) {
	foo := testfixtures.NewFoo("test", 1)
	foo.Spec.Replicas = nil
	d, err := deploymentObject(DeploymentFor(foo))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "test-deployment" || d.Namespace != foo.Namespace || *d.Spec.Replicas != 1 {
		t.Errorf("name %s/%s replicas %d", d.Namespace, d.Name, *d.Spec.Replicas)
	}
	ref := d.OwnerReferences
	if len(ref) != 1 || ref[0].UID != foo.UID || ref[0].Kind != "Foo" || !*ref[0].Controller || !*ref[0].BlockOwnerDeletion {
		t.Errorf("owner references %+v", ref)
	}
	if d.Spec.Selector.MatchLabels["controller"] != "test" || d.Spec.Template.Labels["controller"] != "test" {
		t.Errorf("selector %v template labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	if drift, err := DeploymentDrift(DeploymentFor(foo), CacheDeployment(d)); err != nil || len(drift) != 0 {
		t.Errorf("the created Deployment drifts from the desired one in %v (error %v)", drift, err)
	}
}

// A Foo's name may be longer than a label value may be: the controller
// label stays valid, and two long names that share their first 52
// characters still select different pods.
func TestLongFooNamesGetValidDistinctLabels(t *testing.T) {
	short := strings.Repeat("a", 63)
	if got := LabelValue(short); got != short {
		t.Errorf("a 63-character name became %q, want it unchanged", got)
	}
	one, other := strings.Repeat("a", 252)+"1", strings.Repeat("a", 252)+"2"
	for _, name := range []string{one, other} {
		if errs := validation.IsValidLabelValue(LabelValue(name)); len(errs) > 0 {
			t.Errorf("label value for a %d-character name: %v", len(name), errs)
		}
	}
	if LabelValue(one) == LabelValue(other) {
		t.Errorf("two long names share the label value %q", LabelValue(one))
	}
}

// deploymentObject is the Deployment an apply of ac makes: an apply
// configuration serializes to exactly the fields it sets.
func deploymentObject(ac *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	data, err := json.Marshal(ac)
	if err != nil {
		return nil, err
	}
	d := &appsv1.Deployment{}
	return d, json.Unmarshal(data, d)
}

// A create sends NewDeployment, a repair applies DeploymentFor: the two set
// the same fields to the same values, whatever the Foo asks for.
func TestNewDeploymentSetsWhatDeploymentForSets(t *testing.T) {
	everyField := testfixtures.NewFoo("every-field", 3)
	owned.EveryFieldSet(reflect.ValueOf(&everyField.Spec).Elem(), 7)
	for name, foo := range map[string]*samplev1beta1.Foo{
		"a Foo":                   testfixtures.NewFoo("test", 3),
		"every spec field set":    everyField,
		"a 253-character name":    testfixtures.NewFoo(strings.Repeat("a", 253), 1),
		"no replicas (default 1)": func() *samplev1beta1.Foo { f := testfixtures.NewFoo("one", 1); f.Spec.Replicas = nil; return f }(),
	} {
		t.Run(name, func(t *testing.T) {
			applied, err := deploymentObject(DeploymentFor(foo))
			if err != nil {
				t.Fatal(err)
			}
			applied.TypeMeta = metav1.TypeMeta{}
			if created := NewDeployment(foo); !equality.Semantic.DeepEqual(created, applied) {
				t.Errorf("NewDeployment differs from DeploymentFor:\n%s", diff.Diff(applied, created))
			}
		})
	}
}

// transform is what the informers' transforms make of obj: a Foo trimmed by
// the Foo informer's, anything else as the Deployment informer's makes it.
func transform(obj interface{}) (interface{}, error) {
	if _, ok := obj.(*samplev1beta1.Foo); ok {
		return foocache.Transform(obj)
	}
	return TransformDeployment(obj)
}
