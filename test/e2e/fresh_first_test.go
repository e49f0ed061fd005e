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
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// A Foo a user creates while the controller works through a cold-start
// backlog is synced ahead of it, and the backlog still drains: nothing is
// lost. The ordering is what is asserted, not a speed: the controller is
// held to 40 requests per second so that the backlog surely outlasts the
// fresh Foo's sync on any machine.
func TestFreshFooIsSyncedAheadOfTheColdStartBacklog(t *testing.T) {
	ensureStandardCRD(t)
	ns := newNamespace(t, "fresh-first")
	const backlog = 300
	createFoos(t, ns, "backlog", backlog)

	c := startController(t, "controller", controllerArgs(ns, "-kube-api-qps=40", "-kube-api-burst=40")...)
	waitControllerReady(t, c)
	fresh := createFoo(t, newFoo(ns, "fresh", "fresh", int32p(1)))
	created := time.Now()

	managed := metav1.ListOptions{LabelSelector: samplecontroller.LabelManagedBy + "=" + samplecontroller.ControllerName}
	var before int
	eventually(t, convergeTimeout, "the fresh Foo's Deployment", func(ctx context.Context) (bool, error) {
		if _, err := getDeployment(ctx, ns, fresh.Name); err != nil {
			return false, err
		}
		list, err := cluster.Kube.AppsV1().Deployments(ns).List(ctx, managed)
		if err != nil {
			return false, err
		}
		before = len(list.Items) - 1
		return true, nil
	})
	took := time.Since(created)
	if before >= backlog {
		t.Fatalf("the fresh Foo got its Deployment after the whole backlog (%d of %d backlog Deployments existed)", before, backlog)
	}
	t.Logf("fresh Foo: Deployment %v after create, %d of %d backlog Foos synced by then", took.Round(time.Millisecond), before, backlog)

	eventually(t, 5*convergeTimeout, "every backlog Foo's Deployment", func(ctx context.Context) (bool, error) {
		list, err := cluster.Kube.AppsV1().Deployments(ns).List(ctx, managed)
		if err != nil {
			return false, err
		}
		if len(list.Items) != backlog+1 {
			return false, fmt.Errorf("%d of %d Deployments", len(list.Items), backlog+1)
		}
		return true, nil
	})
	t.Logf("backlog drained %v after the controller was ready", time.Since(created).Round(time.Millisecond))
}
