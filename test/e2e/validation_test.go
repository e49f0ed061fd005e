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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// With a CRD that does not validate, the controller refuses an invalid
// spec itself: once, without a retry loop, without creating anything.
func TestControllerRefusesInvalidSpecOnceWithoutSchema(t *testing.T) {
	ns := newNamespace(t, "validation")
	ensureStandardCRD(t)
	restoreStandardCRDAtEnd(t)

	// The same CRD with an open schema: no pattern, no bounds, no default.
	// Status is named and kept whole: the controller refuses at start a CRD
	// that would prune the status it writes.
	crd := standardCRD(t)
	editFooVersion(t, crd, func(v map[string]interface{}) {
		v["schema"] = map[string]interface{}{
			"openAPIV3Schema": map[string]interface{}{
				"type":                                 "object",
				"x-kubernetes-preserve-unknown-fields": true,
				"properties": map[string]interface{}{
					"status": map[string]interface{}{
						"type":                                 "object",
						"x-kubernetes-preserve-unknown-fields": true,
					},
				},
			},
		}
	})
	putCRD(t, crd)
	waitCRDEstablished(t)
	waitFooAPI(t, "foos, foos/status and foos/scale, and the full schema", withSubresources)
	waitSchemaEnforced(t, false)

	c := startController(t, "controller", controllerArgs(ns)...)
	waitControllerReady(t, c)

	foo := createFoo(t, badNameFoo(ns, "bad-name"))
	foo = waitFooNotReady(t, ns, foo.Name, samplecontroller.ReasonInvalidSpec)
	msg := readyCondition(foo).Message
	if !strings.Contains(msg, "spec.deployment.name") || !strings.Contains(msg, "Bad_Name") {
		t.Errorf("Ready message %q does not name spec.deployment.name and its value", msg)
	}
	waitEvent(t, foo, samplecontroller.ReasonInvalidSpec)
	before := scrape(t, c)
	// Measured over a window: a Foo requeued with backoff would fail again
	// within it (the retries of the first seconds come at 1.3 s, 2.6 s).
	consistently(t, 3*time.Second, "no Deployment, one event, no failed sync", func(ctx context.Context) error {
		list, err := cluster.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 0 {
			return fmt.Errorf("%d Deployments in %s, e.g. %s", len(list.Items), ns, list.Items[0].Name)
		}
		events, err := fooEvents(ctx, ns, string(foo.UID), "")
		if err != nil {
			return err
		}
		if len(events) != 1 {
			return fmt.Errorf("events %s, want the one InvalidSpec", describeEvents(events))
		}
		return nil
	})
	e := expectOneEvent(t, foo, corev1.EventTypeWarning, samplecontroller.ReasonInvalidSpec)
	if e.Message != msg {
		t.Errorf("event message %q, want the Ready message %q", e.Message, msg)
	}
	after := scrape(t, c)
	if errs := reconciles(after, "error"); errs != 0 || reconciles(before, "error") != 0 {
		t.Fatalf("failed syncs: %v before the window, %v after; want none (no requeue loop)", reconciles(before, "error"), errs)
	}
	if now := getFoo(t, ns, foo.Name); now.ResourceVersion != foo.ResourceVersion {
		t.Fatalf("Foo written again: %s", describeFoo(now))
	}
	t.Logf("%v syncs, all successful", reconciles(after, ""))
}
