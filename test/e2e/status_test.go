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
	"strings"
	"testing"

	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// Status: Ready with reason Available once rolled out, observedGeneration
// following spec changes, and kubectl wait working on it.
func TestStatusReportsReadinessAndObservedGeneration(t *testing.T) {
	ns := newNamespace(t, "status")
	ensureStandardCRD(t)
	startController(t, "controller", controllerArgs(ns)...)

	const name = "status"
	createFoo(t, newFoo(ns, name, "status-deploy", int32p(1)))
	foo := waitFooReady(t, ns, name)
	ready := readyCondition(foo)
	if want := "Deployment status-deploy: 1 of 1 replicas available"; ready.Message != want {
		t.Errorf("Ready message %q, want %q", ready.Message, want)
	}
	if want := "app=nginx,controller=" + name; foo.Status.Selector != want {
		t.Errorf("status.selector %q, want %q", foo.Status.Selector, want)
	}

	generation := foo.Generation
	foo = updateFoo(t, ns, name, func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(2) })
	if foo.Generation != generation+1 {
		t.Fatalf("generation %d after a spec change, want %d", foo.Generation, generation+1)
	}
	foo = waitFooReady(t, ns, name) // observedGeneration == generation, 2 available
	if foo.Generation != generation+1 || foo.Status.ObservedGeneration != foo.Generation ||
		readyCondition(foo).ObservedGeneration != foo.Generation || foo.Status.AvailableReplicas != 2 {
		t.Fatalf("after the spec change: %s", describeFoo(foo))
	}
	if want := "Deployment status-deploy: 2 of 2 replicas available"; readyCondition(foo).Message != want {
		t.Errorf("Ready message %q, want %q", readyCondition(foo).Message, want)
	}

	out := kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "foo/"+name, "--timeout=60s")
	if !strings.Contains(out, "foo.samplecontroller.k8s.io/"+name+" condition met") {
		t.Fatalf("kubectl wait: %s", out)
	}
}
