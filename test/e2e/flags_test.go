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

	"github.com/kube-samples/sample-controller/test/framework"
)

// -namespace confines the controller; -workers and the client limits
// are taken.
func TestNamespaceFlagConfinesControllerAndWorkersFlagApplies(t *testing.T) {
	watched := newNamespace(t, "flags-watched")
	ignored := newNamespace(t, "flags-ignored")
	ensureStandardCRD(t)
	c := startController(t, "controller", controllerArgs(watched, "-workers=3", "-kube-api-qps=20", "-kube-api-burst=30")...)

	other := createFoo(t, newFoo(ignored, "ignored", "ignored", int32p(1)))
	foo := createFoo(t, newFoo(watched, "watched", "watched", int32p(1)))
	foo = waitFooReady(t, watched, foo.Name)
	waitManagedDeployment(t, watched, "watched", foo)

	// The Foo in the other namespace was created first; by now it would
	// have a Deployment and a status if the controller saw it.
	consistently(t, 3*time.Second, "the Foo in "+ignored+" ignored", func(ctx context.Context) error {
		list, err := cluster.Kube.AppsV1().Deployments(ignored).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 0 {
			return fmt.Errorf("%d Deployments in %s", len(list.Items), ignored)
		}
		now, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ignored).Get(ctx, other.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if now.ResourceVersion != other.ResourceVersion {
			return fmt.Errorf("Foo written: %s", describeFoo(now))
		}
		events, err := fooEvents(ctx, ignored, string(other.UID), "")
		if err != nil {
			return err
		}
		if len(events) != 0 {
			return fmt.Errorf("events %s", describeEvents(events))
		}
		return nil
	})
	if c.Exited() {
		t.Fatalf("controller exited")
	}
	if log := c.Log(); !strings.Contains(log, `"Starting workers" count=3`) {
		t.Fatalf("-workers=3 not in effect; log:\n%s", framework.Trim(log, 3000))
	}
}
