//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
)

// mappedFoo is a Foo at an edge of what the API server accepts, with the
// value its pods' controller label must have, written out: a Foo name of up
// to 63 characters as it is, a longer one cut to 52 characters and followed
// by the first 10 hex digits of the SHA-256 of the whole name.
type mappedFoo struct {
	name, deploymentName string
	replicas             *int32
	controllerLabel      string
}

// longName is a Foo or Deployment name of 253 characters, the most a
// DNS-1123 subdomain may have.
var longName = strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 61)

var mappedFoos = map[string]mappedFoo{
	"example":                {"example-foo", "example-foo", nil, "example-foo"},
	"replicas 10":            {"ten", "ten", int32p(10), "ten"},
	"foo name of 63":         {strings.Repeat("a", 63), "d", int32p(1), strings.Repeat("a", 63)},
	"foo name of 64":         {strings.Repeat("a", 64), "d", int32p(1), strings.Repeat("a", 52) + "-ffe054fe7a"},
	"foo name of 253":        {longName, "d", int32p(2), strings.Repeat("a", 52) + "-bf613a0381"},
	"dotted foo name":        {"web.frontend", "d", int32p(1), "web.frontend"},
	"deployment name of 253": {"long-deployment", longName, int32p(1), "long-deployment"},
	"deployment name of 64":  {"d64", strings.Repeat("d", 64), int32p(1), "d64"},
}

// The Deployment the controller asks for (desired.DeploymentFor), for
// Foos at the edges of what the API server accepts (long and dotted names, 1
// and 10 replicas, the default), is accepted by the API server both ways the
// controller sends it: as the object of a create, and as the body of a forced
// server-side apply. Dry run: the API server validates and admits, and stores
// nothing. The fuzz target FuzzDesiredDeployment checks the same mapping
// against apimachinery's validation, for any input.
func TestAPIServerAcceptsMappedDeployments(t *testing.T) {
	ns := newNamespace(t, "mapping")
	dryRun := []string{metav1.DryRunAll}
	deployments := cluster.Kube.AppsV1().Deployments(ns)
	for name, tc := range mappedFoos {
		t.Run(name, func(t *testing.T) {
			foo := newFoo(ns, tc.name, tc.deploymentName, tc.replicas)
			foo.UID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
			want := desired.DeploymentFor(foo)
			object := desired.NewDeployment(foo)
			if err := checkMapping(object, foo, tc.controllerLabel); err != nil {
				t.Fatalf("mapped: %v", err)
			}

			created, err := deployments.Create(context.Background(), object, metav1.CreateOptions{
				DryRun:          dryRun,
				FieldManager:    samplecontroller.ControllerName,
				FieldValidation: metav1.FieldValidationStrict,
			})
			if err != nil {
				t.Fatalf("create refused: %v", err)
			}
			if err := acceptedAsSent(created, object, foo); err != nil {
				t.Errorf("create: %v", err)
			}

			applied, err := deployments.Apply(context.Background(), want, metav1.ApplyOptions{
				DryRun:       dryRun,
				FieldManager: samplecontroller.ControllerName,
				Force:        true,
			})
			if err != nil {
				t.Fatalf("apply refused: %v", err)
			}
			if err := acceptedAsSent(applied, object, foo); err != nil {
				t.Errorf("apply: %v", err)
			}
		})
	}
	// Dry run means nothing was stored.
	list, err := deployments.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("dry runs stored %d Deployments in %s", len(list.Items), ns)
	}
}

// checkMapping says where the mapped Deployment is not the one foo asks for,
// with the expected values written out here (nil if it is).
func checkMapping(d *appsv1.Deployment, foo *samplev1beta1.Foo, controllerLabel string) error {
	pods := map[string]string{"app": "nginx", "controller": controllerLabel}
	wantReplicas := int32(1)
	if foo.Spec.Replicas != nil {
		wantReplicas = *foo.Spec.Replicas
	}
	switch {
	case d.Name != foo.Spec.Deployment.Name || d.Namespace != foo.Namespace:
		return fmt.Errorf("Deployment %s/%s, want %s/%s", d.Namespace, d.Name, foo.Namespace, foo.Spec.Deployment.Name)
	case !maps.Equal(d.Labels, map[string]string{"app": "nginx", "controller": controllerLabel, samplecontroller.LabelManagedBy: samplecontroller.ControllerName}):
		return fmt.Errorf("labels %v", d.Labels)
	case d.Spec.Selector == nil || !maps.Equal(d.Spec.Selector.MatchLabels, pods):
		return fmt.Errorf("selector %v, want %v", d.Spec.Selector, pods)
	case !maps.Equal(d.Spec.Template.Labels, pods):
		return fmt.Errorf("template labels %v, want %v", d.Spec.Template.Labels, pods)
	case d.Spec.Replicas == nil || *d.Spec.Replicas != wantReplicas:
		return fmt.Errorf("replicas %v, want %d", d.Spec.Replicas, wantReplicas)
	}
	return checkManagedDeployment(d, foo)
}

// acceptedAsSent says where the Deployment the API server answered differs
// from the one the controller sent, in the fields the controller owns, or
// how it fails to be controlled by the Foo (nil if neither).
func acceptedAsSent(got, sent *appsv1.Deployment, foo *samplev1beta1.Foo) error {
	if err := checkControlledBy(got, foo); err != nil {
		return err
	}
	gotSpec, sentSpec := got.Spec, sent.Spec
	switch {
	case !maps.Equal(got.Labels, sent.Labels):
		return fmt.Errorf("labels %v, sent %v", got.Labels, sent.Labels)
	case !equality.Semantic.DeepEqual(gotSpec.Selector, sentSpec.Selector):
		return fmt.Errorf("selector %v, sent %v", gotSpec.Selector, sentSpec.Selector)
	case *gotSpec.Replicas != *sentSpec.Replicas:
		return fmt.Errorf("replicas %d, sent %d", *gotSpec.Replicas, *sentSpec.Replicas)
	case !maps.Equal(gotSpec.Template.Labels, sentSpec.Template.Labels):
		return fmt.Errorf("template labels %v, sent %v", gotSpec.Template.Labels, sentSpec.Template.Labels)
	case len(gotSpec.Template.Spec.Containers) != 1 || gotSpec.Template.Spec.Containers[0].Image != sentSpec.Template.Spec.Containers[0].Image:
		return fmt.Errorf("containers %+v, sent %+v", gotSpec.Template.Spec.Containers, sentSpec.Template.Spec.Containers)
	}
	return nil
}
