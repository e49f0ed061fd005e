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

// An outdated or foreign Foo CRD, such as the classic sample-controller's,
// is refused at start with the fix; one replaced under a running controller
// is reported once, without a write loop.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// withClassicStatus cuts the status schema down to availableReplicas, as
// the classic sample-controller's CRD has it.
func withClassicStatus(version map[string]interface{}) {
	schema := version["schema"].(map[string]interface{})["openAPIV3Schema"].(map[string]interface{})
	status := schema["properties"].(map[string]interface{})["status"].(map[string]interface{})
	status["properties"] = map[string]interface{}{
		"availableReplicas": status["properties"].(map[string]interface{})["availableReplicas"],
	}
}

func TestOutdatedCRDIsRefusedAtStartWithTheFix(t *testing.T) {
	ns := newNamespace(t, "outdated-crd")
	ensureStandardCRD(t)
	restoreStandardCRDAtEnd(t)
	for name, tc := range map[string]struct {
		edit    func(version map[string]interface{})
		missing string
	}{
		"the classic sample-controller's CRD": {
			edit: func(v map[string]interface{}) {
				delete(v, "subresources")
				withClassicStatus(v)
			},
			missing: "version v1beta1 does not enable the status subresource; version v1beta1 does not enable the scale subresource; " +
				"its schema lacks status.replicas, status.selector, status.observedGeneration, status.conditions, which the API server would prune from every status write",
		},
		"a CRD without subresources": {
			edit:    func(v map[string]interface{}) { delete(v, "subresources") },
			missing: "version v1beta1 does not enable the status subresource; version v1beta1 does not enable the scale subresource",
		},
		"a CRD without the status fields": {
			edit:    withClassicStatus,
			missing: "its schema lacks status.replicas, status.selector, status.observedGeneration, status.conditions, which the API server would prune from every status write",
		},
	} {
		t.Run(name, func(t *testing.T) {
			crd := standardCRD(t)
			editFooVersion(t, crd, tc.edit)
			putCRD(t, crd)
			waitCRDEstablished(t)
			// The controller is started once the cluster serves the edited
			// CRD: what it then says is its own reading.
			waitFooAPI(t, name, func(api *apicheck.FooAPI) bool {
				return api.Resources[samplecontroller.FooResource] && strings.Join(api.Missing(), "; ") == tc.missing
			})

			c := startController(t, "controller", controllerArgs(ns)...)
			expectExitSaying(t, c, time.Minute, samplecontroller.FooCRDName+" is outdated: "+tc.missing+"; update it with: kubectl apply -f "+crdManifest)
		})
	}
}

func TestStatusPrunedUnderARunningControllerIsReportedOnce(t *testing.T) {
	ns := newNamespace(t, "pruned-status")
	ensureStandardCRD(t)
	restoreStandardCRDAtEnd(t)
	c := startController(t, "controller", controllerArgs(ns)...)
	foo := createFoo(t, newFoo(ns, "pruned", "pruned", int32p(1)))
	waitFooReady(t, ns, foo.Name)

	// Someone applies an older CRD while the controller runs.
	crd := standardCRD(t)
	editFooVersion(t, crd, withClassicStatus)
	putCRD(t, crd)
	// The API server prunes what the schema lacks on reads as well: once
	// the Foo reads back without its conditions, the old schema is in force.
	waitFoo(t, ns, foo.Name, "the Foo read without conditions", func(f *samplev1beta1.Foo) bool {
		return len(f.Status.Conditions) == 0
	})

	// A change the controller reports in status: the write loses fields.
	updateFoo(t, ns, foo.Name, func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(2) })
	waitEvent(t, foo, samplecontroller.ReasonStatusPruned)
	settled := waitFoo(t, ns, foo.Name, "status.availableReplicas 2 (the field the old schema keeps)", func(f *samplev1beta1.Foo) bool {
		return f.Status.AvailableReplicas == 2
	})
	consistently(t, 3*time.Second, "no rewrite of the pruned status, one event", func(ctx context.Context) error {
		now, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Get(ctx, foo.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if now.ResourceVersion != settled.ResourceVersion {
			return fmt.Errorf("Foo written again: %s (was %s)", describeFoo(now), describeFoo(settled))
		}
		return nil
	})
	e := expectOneEvent(t, foo, corev1.EventTypeWarning, samplecontroller.ReasonStatusPruned)
	for _, want := range []string{"status.conditions", samplecontroller.FooCRDName + " is outdated", "kubectl apply -f " + crdManifest} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("event message %q does not say %q", e.Message, want)
		}
	}
	if c.Exited() {
		t.Fatalf("controller exited: %s", framework.Trim(c.Log(), 3000))
	}
}
