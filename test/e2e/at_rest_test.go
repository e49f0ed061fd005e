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
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// At rest the controller writes nothing, resyncs included.
func TestZeroWritesAtRest(t *testing.T) {
	ns := newNamespace(t, "zero-writes")
	ensureStandardCRD(t)
	c := startController(t, "controller", controllerArgs(ns, "-resync-period=5s")...)

	created := make([]*samplev1beta1.Foo, 0, 3)
	for i := range 3 {
		created = append(created, createFoo(t, newFoo(ns, fmt.Sprintf("foo-%d", i), fmt.Sprintf("deploy-%d", i), int32p(int32(i+1)))))
	}
	rv := map[string]string{}
	for _, foo := range created {
		ready := waitFooReady(t, ns, foo.Name)
		rv["foo/"+foo.Name] = ready.ResourceVersion
		d := waitManagedDeployment(t, ns, foo.Spec.Deployment.Name, ready)
		rv["deployment/"+d.Name] = d.ResourceVersion
		// Events go out asynchronously: the last write of the roll-out is
		// the one "Created Deployment" event per Foo.
		waitEvent(t, foo, samplecontroller.ReasonSynced)
		expectOneEvent(t, foo, corev1.EventTypeNormal, samplecontroller.ReasonSynced)
	}

	before := scrape(t, c)
	eventsBefore := namespaceEvents(t, ns)
	writes := writeRequests(before)
	t.Logf("at rest: %v write requests so far, %v syncs", writes, reconciles(before, ""))
	const window = 12 * time.Second // more than two resync periods
	consistently(t, window, "no write requests at rest", func(ctx context.Context) error {
		samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
		if err != nil {
			return err
		}
		if got := writeRequests(samples); got != writes {
			return fmt.Errorf("write requests went from %v to %v: %v", writes, got, writeBreakdown(samples))
		}
		return nil
	})
	after := scrape(t, c)
	syncs := reconciles(after, "") - reconciles(before, "")
	t.Logf("over %v: %v syncs, %v errors, 0 writes", window, syncs, reconciles(after, "error")-reconciles(before, "error"))
	// Two resyncs of three Foos at least: the syncs ran and found nothing
	// to do.
	if syncs < 6 {
		t.Fatalf("%v syncs over %v with -resync-period=5s; want at least 6 (3 Foos, 2 resyncs)", syncs, window)
	}
	if errs := reconciles(after, "error") - reconciles(before, "error"); errs != 0 {
		t.Fatalf("%v failed syncs at rest", errs)
	}

	eventsAfter := namespaceEvents(t, ns)
	if !sameEvents(eventsBefore, eventsAfter) {
		t.Fatalf("events changed at rest:\nbefore %s\nafter  %s", describeEvents(eventsBefore), describeEvents(eventsAfter))
	}
	for _, foo := range created {
		now := getFoo(t, ns, foo.Name)
		d, err := getDeployment(context.Background(), ns, foo.Spec.Deployment.Name)
		if err != nil {
			t.Fatal(err)
		}
		if now.ResourceVersion != rv["foo/"+foo.Name] || d.ResourceVersion != rv["deployment/"+d.Name] {
			t.Fatalf("Foo %s or its Deployment written at rest: resourceVersions %s/%s, were %s/%s",
				foo.Name, now.ResourceVersion, d.ResourceVersion, rv["foo/"+foo.Name], rv["deployment/"+d.Name])
		}
	}
}

// writeBreakdown lists the controller's write requests by method and code.
func writeBreakdown(samples []framework.Sample) string {
	var parts []string
	for _, s := range samples {
		if s.Name == "rest_client_requests_total" && framework.IsWriteVerb(s.Labels["method"]) {
			parts = append(parts, fmt.Sprintf("%s %s: %v", s.Labels["method"], s.Labels["code"], s.Value))
		}
	}
	return strings.Join(parts, ", ")
}

// sameEvents reports whether two listings hold the same events with the
// same counts.
func sameEvents(a, b []corev1.Event) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int32{}
	for _, e := range a {
		seen[string(e.UID)] = e.Count
	}
	for _, e := range b {
		if count, ok := seen[string(e.UID)]; !ok || count != e.Count {
			return false
		}
	}
	return true
}

// namespaceEvents lists the events in a namespace.
func namespaceEvents(t *testing.T, ns string) []corev1.Event {
	t.Helper()
	list, err := cluster.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
