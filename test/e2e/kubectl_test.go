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
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Foo API works with kubectl as a built-in type does.
func TestKubectlHandlesFoosAsBuiltInTypes(t *testing.T) {
	ns := newNamespace(t, "kubectl")
	ensureStandardCRD(t)
	startController(t, "controller", controllerArgs(ns)...)
	foos := cluster.Sample.SamplecontrollerV1beta1().Foos(ns)

	// Admission rejects what the schema forbids.
	out := kubectlFails(t, rawFooManifest(ns, "bad-name", "deployment: {name: Bad_Name}"), "apply", "-f", "-")
	if !strings.Contains(out, "spec.deployment.name") {
		t.Errorf("kubectl apply of deployment name Bad_Name: error does not mention spec.deployment.name:\n%s", out)
	}
	out = kubectlFails(t, rawFooManifest(ns, "too-many", "deployment: {name: too-many}\nreplicas: 11"), "apply", "-f", "-")
	if !strings.Contains(out, "spec.replicas") {
		t.Errorf("kubectl apply of replicas 11: error does not mention spec.replicas:\n%s", out)
	}
	for _, name := range []string{"bad-name", "too-many"} {
		if _, err := foos.Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("rejected Foo %s exists: %v", name, err)
		}
	}

	// spec.replicas defaults to 1.
	const name = "web"
	if out, err := cluster.Kubectl(rawFooManifest(ns, name, "deployment: {name: "+name+"}"), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(out, "foo.samplecontroller.k8s.io/"+name+" created") {
		t.Fatalf("kubectl apply: %s", out)
	}
	foo := getFoo(t, ns, name)
	if foo.Spec.Replicas == nil || *foo.Spec.Replicas != 1 {
		t.Fatalf("spec.replicas %v for a Foo created without it, want the default 1", foo.Spec.Replicas)
	}
	foo = waitFooReady(t, ns, name)
	waitManagedDeployment(t, ns, name, foo)

	// kubectl scale, through the scale subresource.
	out = kubectl(t, "scale", "-n", ns, "foo/"+name, "--replicas=3")
	if !strings.Contains(out, "foo.samplecontroller.k8s.io/"+name+" scaled") {
		t.Fatalf("kubectl scale: %s", out)
	}
	foo = getFoo(t, ns, name)
	if specReplicas(foo) != 3 {
		t.Fatalf("spec.replicas %d after kubectl scale --replicas=3", specReplicas(foo))
	}
	waitManagedDeployment(t, ns, name, foo) // spec.replicas 3
	waitFooReady(t, ns, name)

	raw := kubectl(t, "get", "--raw", "/apis/samplecontroller.k8s.io/v1beta1/namespaces/"+ns+"/foos/"+name+"/scale")
	var scale autoscalingv1.Scale
	if err := json.Unmarshal([]byte(raw), &scale); err != nil {
		t.Fatalf("scale subresource: %v: %s", err, raw)
	}
	if want := "app=nginx,controller=" + name; scale.Status.Selector != want || scale.Spec.Replicas != 3 || scale.Status.Replicas != 3 {
		t.Fatalf("scale subresource: spec.replicas %d, status.replicas %d, status.selector %q; want 3, 3, %q",
			scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector, want)
	}

	// kubectl get: the printer columns.
	out = kubectl(t, "get", "-n", ns, "foo")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get foo: want a header and one row:\n%s", out)
	}
	if header, want := strings.Fields(lines[0]), []string{"NAME", "DEPLOYMENT", "DESIRED", "AVAILABLE", "READY", "AGE"}; !equality.Semantic.DeepEqual(header, want) {
		t.Fatalf("kubectl get foo columns %v, want %v", header, want)
	}
	row := strings.Fields(lines[1])
	if want := []string{name, name, "3", "3", "True"}; len(row) != 6 || !equality.Semantic.DeepEqual(row[:5], want) {
		t.Fatalf("kubectl get foo row %v, want %v and an age", row, want)
	}

	// kubectl explain: the schema's descriptions are published (OpenAPI
	// follows the CRD after a moment).
	eventually(t, convergeTimeout, "kubectl explain foo.spec.deployment.name", func(context.Context) (bool, error) {
		out, err := cluster.Kubectl("", "explain", "foo.spec.deployment.name")
		if err != nil {
			return false, err
		}
		text := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{"FIELD: name <string>", "Name of the Deployment to create in the Foo's namespace. It must be a DNS-1123 subdomain"} {
			if !strings.Contains(text, want) {
				return false, fmt.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		return true, nil
	})
}
