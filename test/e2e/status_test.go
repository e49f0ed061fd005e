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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
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

// A Foo's status is bounded at admission, whoever writes it (a stolen
// controller token may write foos/status): 40 conditions of 32 KiB, 1.3 MB,
// are refused by maxItems, one condition of 32 KiB (metav1.Condition's own
// bound) by the CRD's CEL rule, a selector of 1 MiB by its maxLength, each
// with the message a user reads; 8 conditions of 1024 characters, the most
// the controller writes, are admitted. Written as the suite's admin, with no
// controller running: the API server's schema refuses any writer alike.
func TestBloatedStatusIsRefusedAtAdmission(t *testing.T) {
	ns := newNamespace(t, "status-bloat")
	ensureStandardCRD(t)
	foo := createFoo(t, newFoo(ns, "bloat", "bloat", int32p(1)))
	writeStatus := func(ctx context.Context, status map[string]interface{}) error {
		patch, err := json.Marshal(map[string]interface{}{"status": status})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Patch(ctx, foo.Name, types.MergePatchType, patch,
			metav1.PatchOptions{}, "status")
		return err
	}
	conditions := func(n, messageLength int) map[string]interface{} {
		list := make([]map[string]interface{}, n)
		for i := range list {
			list[i] = map[string]interface{}{"type": fmt.Sprintf("example.com/Other%d", i), "status": "True",
				"reason": "Other", "lastTransitionTime": "2026-01-02T03:04:05Z", "message": strings.Repeat("x", messageLength)}
		}
		return map[string]interface{}{"conditions": list}
	}
	prefix := `Foo.samplecontroller.k8s.io "bloat" is invalid: `
	// The API server skips the CEL rules of an object its schema already
	// refuses, and says so.
	notChecked := ", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; " +
		"correct the existing errors to complete validation]"
	for _, tc := range []struct {
		what   string
		status map[string]interface{}
		want   string
	}{
		{"40 conditions of 32 KiB", conditions(40, 32768),
			prefix + "[status.conditions: Too many: 40: must have at most 8 items" + notChecked},
		{"a condition of 32 KiB", conditions(1, 32768),
			prefix + "status.conditions[0].message: Invalid value: must be at most 1024 characters: a Foo's status is kept small"},
		{"a selector of 1 MiB", map[string]interface{}{"selector": strings.Repeat("s", 1<<20)},
			prefix + "[status.selector: Too long: may not be more than 1024 bytes" + notChecked},
	} {
		// The first is waited for: a CRD put by an earlier run may still be
		// the one in force.
		var err error
		eventually(t, convergeTimeout, tc.what+" refused", func(ctx context.Context) (bool, error) {
			err = writeStatus(ctx, tc.status)
			return apierrors.IsInvalid(err), nil
		})
		if got := err.Error(); got != tc.want {
			t.Errorf("%s: refused with %q, want %q", tc.what, framework.Trim(got, 1000), tc.want)
		}
	}
	if err := writeStatus(context.Background(), conditions(8, 1024)); err != nil {
		t.Errorf("8 conditions of 1024 characters, the controller's most: %v", err)
	}
}
