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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// With a CRD without subresources the controller writes status to the
// Foo itself, and settles: no further writes once the Foo is Ready.
func TestWithoutStatusSubresourceStatusIsWrittenToFooAndSettles(t *testing.T) {
	ns := newNamespace(t, "statusless")
	ensureStandardCRD(t)
	restoreStandardCRDAtEnd(t)

	crd := standardCRD(t)
	editFooVersion(t, crd, func(v map[string]interface{}) { delete(v, "subresources") })
	putCRD(t, crd)
	waitCRDEstablished(t)
	waitFooDiscovery(t, "foos without status and scale", func(r map[string]bool) bool {
		return r["foos"] && !r["foos/status"] && !r["foos/scale"]
	})

	c := startController(t, "controller", controllerArgs(ns)...)
	eventually(t, convergeTimeout, "the controller to note the missing status subresource", func(context.Context) (bool, error) {
		if c.Exited() {
			return false, fmt.Errorf("controller exited: %s", framework.Trim(c.Log(), 2000))
		}
		return strings.Contains(c.Log(), "The Foo CRD has no status subresource"), nil
	})

	foo := createFoo(t, newFoo(ns, "plain", "plain", int32p(2)))
	ready := waitFooReady(t, ns, foo.Name) // observedGeneration == generation
	waitManagedDeployment(t, ns, "plain", ready)
	// Without a status subresource every status write bumps the generation.
	if ready.Generation <= foo.Generation {
		t.Errorf("generation %d after the status writes, created with %d: status was not written to the Foo itself?", ready.Generation, foo.Generation)
	}
	consistently(t, 5*time.Second, "the Ready Foo left alone", func(ctx context.Context) error {
		now, err := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, foo.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if now.ResourceVersion != ready.ResourceVersion {
			return fmt.Errorf("written again: resourceVersion %s, was %s: %s (was %s)", now.ResourceVersion, ready.ResourceVersion, describeFoo(now), describeFoo(ready))
		}
		return nil
	})
	if now := getFoo(t, ns, foo.Name); !isReady(now) {
		t.Fatalf("%s", describeFoo(now))
	}
	t.Logf("Ready at generation %d (created at %d)", ready.Generation, foo.Generation)
}

// Without the CRD the controller says what to do and exits non-zero.
// Deleting the CRD deletes every Foo in the cluster: the tests run one at a
// time, so no other test has Foos then, and the CRD is put back when this one
// ends.
func TestWithoutCRDControllerExitsNonZeroSayingWhatToDo(t *testing.T) {
	ns := newNamespace(t, "missing-crd")
	restoreStandardCRDAtEnd(t)
	deleteCRD(t)

	c := startController(t, "controller", controllerArgs(ns)...)
	code, err := c.Wait(10 * time.Second)
	if err != nil {
		t.Fatalf("controller without the Foo CRD: %v", err)
	}
	log := c.Log()
	if code == 0 {
		t.Fatalf("exit code 0 without the Foo CRD; log:\n%s", framework.Trim(log, 3000))
	}
	for _, want := range []string{samplev1alpha1.FooCRDName, "kubectl apply -f " + crdManifest} {
		if !strings.Contains(log, want) {
			t.Errorf("log does not mention %q:\n%s", want, framework.Trim(log, 3000))
		}
	}
	t.Logf("exit code %d", code)
}
