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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// SIGTERM with hundreds of Foos still queued: the controller stops taking
// work, lets the Foos in hand finish and exits 0, leaving the backlog for
// the next leader.
func TestSIGTERMWithBacklogFinishesSyncsInHandAndExits(t *testing.T) {
	ensureStandardCRD(t)
	ns := newNamespace(t, "prod-backlog")
	const count = 300

	// Created before any controller runs.
	createFoos(t, ns, "backlog", count)

	// 5 requests per second: a sync takes two or three, so the queue drains
	// at a couple of Foos per second, and would take minutes to empty.
	const workers = 4
	c := startController(t, "controller", controllerArgs(ns, "-kube-api-qps=5", "-kube-api-burst=5", fmt.Sprintf("-workers=%d", workers))...)
	started := time.Now()
	var (
		samples     []framework.Sample
		deployments int
	)
	// Returns as soon as syncs are under way, backlog or not; the backlog is
	// checked below.
	eventually(t, convergeTimeout, "syncs under way", func(ctx context.Context) (bool, error) {
		if c.Exited() {
			return false, fmt.Errorf("controller exited")
		}
		var err error
		if samples, err = framework.ScrapeURL(ctx, c.MetricsURL()); err != nil {
			return false, err
		}
		list, err := cluster.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: samplecontroller.LabelManagedBy + "=" + samplecontroller.ControllerName})
		if err != nil {
			return false, err
		}
		deployments = len(list.Items)
		if syncs := reconciles(samples, "success"); syncs < 2 || deployments < 2 {
			return false, fmt.Errorf("%v successful syncs, %d Deployments, queue depth %v", syncs, deployments, queueDepth(samples))
		}
		return true, nil
	})
	depth := queueDepth(samples)
	if depth <= 100 {
		t.Fatalf("queue depth %v once syncs were under way, want over 100", depth)
	}

	// Signal right after a sync's last write, the status: its worker has
	// moved on to the next Foo and waits for the rate limiter to create its
	// Deployment, so the signal finds a sync in hand.
	waitStatusWrite(t, ns)
	before := managedDeployments(t, ns)
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	// The controller bounds its own shutdown (the syncs in hand get a grace
	// period); how long a loaded machine takes to run it is reported, not
	// asserted. What is asserted is below: the backlog was left alone.
	code, err := c.Wait(2 * time.Minute)
	exit := time.Since(signalled)
	if err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	t.Logf("SIGTERM %v after start, with %v successful syncs, %d Deployments and %v Foos queued: exit code %d after %v",
		signalled.Sub(started).Round(10*time.Millisecond), reconciles(samples, "success"), deployments, depth, code, exit.Round(10*time.Millisecond))
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	// Each worker finishes at most the Foo in hand (one more Deployment),
	// and one whose create was in flight as the Deployments were listed
	// may land after: far from the hundreds a drained queue would make.
	after := managedDeployments(t, ns)
	if len(after) > len(before)+2*workers {
		t.Errorf("%d Deployments after the exit, %d at SIGTERM: more than the %d workers' Foos in hand were synced", len(after), len(before), workers)
	}
	log := c.Log()
	for _, line := range []string{`"Shutting down workers"`, `"Workers stopped"`} {
		if !strings.Contains(log, line) {
			t.Errorf("the log lacks %s:\n%s", line, framework.Trim(log, 3000))
		}
	}
	// The Foos in hand are finished during the grace period, and so must be
	// their events: a Deployment created then gets no "Created Deployment"
	// event from anyone else (the next controller finds it in place). The
	// controller has exited: what it wrote is all there will be.
	for name, foo := range after {
		if _, ok := before[name]; ok {
			continue
		}
		events, err := fooEvents(context.Background(), ns, string(foo), samplecontroller.ReasonSynced)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(events, func(e corev1.Event) bool { return e.Message == "Created Deployment "+name }) {
			t.Errorf("Deployment %s, created after SIGTERM, has no \"Created Deployment %s\" event on its Foo: %s", name, name, describeEvents(events))
		}
	}
}

// managedDeployments lists the Deployments the controller made in ns: the
// uid of each one's controlling Foo, by name.
func managedDeployments(t *testing.T, ns string) map[string]types.UID {
	t.Helper()
	list, err := cluster.Kube.AppsV1().Deployments(ns).List(context.Background(),
		metav1.ListOptions{LabelSelector: samplecontroller.LabelManagedBy + "=" + samplecontroller.ControllerName})
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]types.UID{}
	for i := range list.Items {
		if ref := metav1.GetControllerOf(&list.Items[i]); ref != nil {
			owners[list.Items[i].Name] = ref.UID
		}
	}
	return owners
}

// waitStatusWrite waits, with a watch, for the next write of a Foo's status
// in ns (a Foo that gets its first Ready condition).
func waitStatusWrite(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fooClient := cluster.Sample.SamplecontrollerV1beta1().Foos(ns)
	list, err := fooClient.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := fooClient.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for event := range w.ResultChan() {
		if foo, ok := event.Object.(*samplev1beta1.Foo); ok && event.Type == "MODIFIED" && readyCondition(foo) != nil {
			return
		}
	}
	t.Fatalf("no Foo status written in %s within 30s: %v", ns, ctx.Err())
}
