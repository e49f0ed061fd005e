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

// The reconciliation contract, one test per item, each in its own namespace
// with its own controller (-namespace=<ns> -leader-elect=false). The tests
// that change the CRD restore artifacts/examples/crd.yaml when they end; the
// one that deletes it runs last.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// 1. At rest the controller writes nothing, resyncs included.
func TestReconcile_1_ZeroWritesAtRest(t *testing.T) {
	ns := newNamespace(t, "zero-writes")
	ensureStandardCRD(t)
	c := startController(t, "controller", controllerArgs(ns, "-resync-period=5s")...)

	var created []*samplev1alpha1.Foo
	for i := range 3 {
		created = append(created, createFoo(t, newFoo(ns, fmt.Sprintf("foo-%d", i), fmt.Sprintf("deploy-%d", i), int32p(int32(i+1)))))
	}
	rv := map[string]string{}
	for _, foo := range created {
		ready := waitFooReady(t, ns, foo.Name)
		rv["foo/"+foo.Name] = ready.ResourceVersion
		d := waitManagedDeployment(t, ns, foo.Spec.DeploymentName, ready)
		rv["deployment/"+d.Name] = d.ResourceVersion
		// Events go out asynchronously: the last write of the roll-out is
		// the one "Created Deployment" event per Foo.
		waitEvent(t, foo, samplev1alpha1.ReasonSynced)
		expectOneEvent(t, foo, corev1.EventTypeNormal, samplev1alpha1.ReasonSynced)
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
		d, err := getDeployment(context.Background(), ns, foo.Spec.DeploymentName)
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

// 2. Drift in the fields the controller owns is reverted; what others added
// stays.
func TestReconcile_2_DriftRepair(t *testing.T) {
	ns := newNamespace(t, "drift")
	ensureStandardCRD(t)
	c := startController(t, "controller", controllerArgs(ns)...)

	foo := createFoo(t, newFoo(ns, "drift", "drift", int32p(1)))
	foo = waitFooReady(t, ns, foo.Name)
	waitManagedDeployment(t, ns, "drift", foo)

	// Pod template labels are left alone: they must match the selector,
	// which cannot change.
	const (
		foreignImage = "nginx:1.25-alpine"
		noteKey      = "payments.example.com/on-call"
		noteValue    = "#payments-oncall"
	)
	deployments := cluster.Kube.AppsV1().Deployments(ns)
	var edited *appsv1.Deployment
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := deployments.Get(context.Background(), "drift", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = foreignImage
		delete(d.Labels, samplev1alpha1.LabelController)
		d.Labels["team"] = "payments"
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[noteKey] = noteValue
		edited, err = deployments.Update(context.Background(), d, metav1.UpdateOptions{FieldManager: "payments-team"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if edited.Spec.Template.Spec.Containers[0].Image != foreignImage || edited.Labels[samplev1alpha1.LabelController] != "" {
		t.Fatalf("the hand edit did not stick: %+v", edited.ObjectMeta.Labels)
	}

	var repaired *appsv1.Deployment
	eventually(t, convergeTimeout, "image and controller label reverted, team label and annotation kept", func(ctx context.Context) (bool, error) {
		d, err := getDeployment(ctx, ns, "drift")
		if err != nil {
			return false, err
		}
		if d.ResourceVersion == edited.ResourceVersion {
			return false, fmt.Errorf("not written since the hand edit")
		}
		if err := checkManagedDeployment(d, foo); err != nil {
			return false, err
		}
		if d.Labels["team"] != "payments" || d.Annotations[noteKey] != noteValue {
			return false, fmt.Errorf("foreign label or annotation lost: labels %v annotations %v", d.Labels, d.Annotations)
		}
		repaired = d
		return true, nil
	})
	waitEventCount(t, foo, samplev1alpha1.ReasonSynced, "Updated Deployment drift: labels, container nginx", 1)
	waitFooReady(t, ns, foo.Name)

	// Repaired once (one apply, one event), and no tug of war afterwards.
	// The deployment controller may still write the Deployment's status
	// while it returns to the old ReplicaSet, so its resourceVersion proves
	// nothing; the sample-controller's writes are counted instead. Its
	// Deployment writes are applies, PATCH requests (as are its Foo status
	// writes and event repeats): none may follow once all is settled.
	eventually(t, convergeTimeout, "the repaired Deployment rolled out", func(ctx context.Context) (bool, error) {
		d, err := getDeployment(ctx, ns, "drift")
		return err == nil && rolledOut(d), err
	})
	waitFooReady(t, ns, foo.Name)
	patches := func(samples []framework.Sample) float64 {
		return framework.Sum(samples, "rest_client_requests_total", func(l map[string]string) bool { return l["method"] == "PATCH" })
	}
	applied := patches(scrape(t, c))
	consistently(t, 3*time.Second, "no further apply", func(ctx context.Context) error {
		samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
		if err != nil {
			return err
		}
		if got := patches(samples); got != applied {
			return fmt.Errorf("PATCH requests went from %v to %v", applied, got)
		}
		return nil
	})
	waitEventCount(t, foo, samplev1alpha1.ReasonSynced, "Updated Deployment drift: labels, container nginx", 1)
	settled, err := getDeployment(context.Background(), ns, "drift")
	if err != nil {
		t.Fatal(err)
	}
	if settled.Labels["team"] != "payments" || settled.Annotations[noteKey] != noteValue || checkManagedDeployment(settled, foo) != nil {
		t.Fatalf("after the roll-out: labels %v annotations %v: %v", settled.Labels, settled.Annotations, checkManagedDeployment(settled, foo))
	}
	t.Logf("repaired at resourceVersion %v; field managers now %v", repaired.ResourceVersion, managers(settled))
}

// 3. Status: Ready with reason Available once rolled out, observedGeneration
// following spec changes, and kubectl wait working on it.
func TestReconcile_3_StatusAndConditions(t *testing.T) {
	ns := newNamespace(t, "status")
	ensureStandardCRD(t)
	startController(t, "controller", controllerArgs(ns)...)

	const name = "status"
	foo := createFoo(t, newFoo(ns, name, "status-deploy", int32p(1)))
	foo = waitFooReady(t, ns, name)
	ready := readyCondition(foo)
	if want := "Deployment status-deploy: 1 of 1 replicas available"; ready.Message != want {
		t.Errorf("Ready message %q, want %q", ready.Message, want)
	}
	if want := "app=nginx,controller=" + name; foo.Status.Selector != want {
		t.Errorf("status.selector %q, want %q", foo.Status.Selector, want)
	}

	generation := foo.Generation
	foo = updateFoo(t, ns, name, func(f *samplev1alpha1.Foo) { f.Spec.Replicas = int32p(2) })
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

// 4. The Foo API works with kubectl as a built-in type does.
func TestReconcile_4_KubectlNative(t *testing.T) {
	ns := newNamespace(t, "kubectl")
	ensureStandardCRD(t)
	startController(t, "controller", controllerArgs(ns)...)
	foos := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns)

	// Admission rejects what the schema forbids.
	out := kubectlFails(t, fooManifest(ns, "bad-name", "Bad_Name"), "apply", "-f", "-")
	if !strings.Contains(out, "spec.deploymentName") {
		t.Errorf("kubectl apply of deploymentName Bad_Name: error does not mention spec.deploymentName:\n%s", out)
	}
	out = kubectlFails(t, fooManifest(ns, "too-many", "too-many", "replicas: 11"), "apply", "-f", "-")
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
	if out, err := cluster.Kubectl(fooManifest(ns, name, name), "apply", "-f", "-"); err != nil {
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
	foo = waitFooReady(t, ns, name)

	raw := kubectl(t, "get", "--raw", "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/"+ns+"/foos/"+name+"/scale")
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
	eventually(t, convergeTimeout, "kubectl explain foo.spec.deploymentName", func(ctx context.Context) (bool, error) {
		out, err := cluster.Kubectl("", "explain", "foo.spec.deploymentName")
		if err != nil {
			return false, err
		}
		text := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{"FIELD: deploymentName <string>", "Name of the Deployment to create in the Foo's namespace. It must be a DNS-1123 subdomain"} {
			if !strings.Contains(text, want) {
				return false, fmt.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		return true, nil
	})
}

// 5. With a CRD that does not validate, the controller refuses an invalid
// spec itself: once, without a retry loop, without creating anything.
func TestReconcile_5_ControllerSideValidation(t *testing.T) {
	ns := newNamespace(t, "validation")
	ensureStandardCRD(t)
	restoreStandardCRDAtEnd(t)

	// The same CRD with an open schema: no pattern, no bounds, no default.
	crd := standardCRD(t)
	editFooVersion(t, crd, func(v map[string]interface{}) {
		v["schema"] = map[string]interface{}{
			"openAPIV3Schema": map[string]interface{}{
				"type":                                 "object",
				"x-kubernetes-preserve-unknown-fields": true,
			},
		}
	})
	putCRD(t, crd)
	waitCRDEstablished(t)
	waitFooDiscovery(t, "foos, foos/status and foos/scale", withSubresources)
	waitSchemaEnforced(t, false)

	c := startController(t, "controller", controllerArgs(ns)...)
	waitControllerReady(t, c)

	foo := createFoo(t, badNameFoo(ns, "bad-name"))
	foo = waitFooNotReady(t, ns, foo.Name, samplev1alpha1.ReasonInvalidSpec)
	msg := readyCondition(foo).Message
	if !strings.Contains(msg, "spec.deploymentName") || !strings.Contains(msg, "Bad_Name") {
		t.Errorf("Ready message %q does not name spec.deploymentName and its value", msg)
	}
	waitEvent(t, foo, samplev1alpha1.ReasonInvalidSpec)
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
	e := expectOneEvent(t, foo, corev1.EventTypeWarning, samplev1alpha1.ReasonInvalidSpec)
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

// 6. Renaming spec.deploymentName moves the Deployment; of two Foos asking
// for one name the first keeps it, and the second gets it once it is freed.
func TestReconcile_6_OwnershipAndLifecycle(t *testing.T) {
	ns := newNamespace(t, "ownership")
	ensureStandardCRD(t)
	// The takeover below must not wait for the collector to learn of Foos.
	waitGarbageCollectorKnowsFoos(t, ns)
	c := startController(t, "controller", controllerArgs(ns)...)

	t.Run("rename_a_to_b", func(t *testing.T) {
		foo := createFoo(t, newFoo(ns, "renamed", "deploy-a", int32p(1)))
		waitManagedDeployment(t, ns, "deploy-a", foo)
		waitFooReady(t, ns, foo.Name)

		foo = updateFoo(t, ns, foo.Name, func(f *samplev1alpha1.Foo) { f.Spec.DeploymentName = "deploy-b" })
		waitManagedDeployment(t, ns, "deploy-b", foo)
		waitDeploymentGone(t, ns, "deploy-a")
		waitFooReady(t, ns, foo.Name)
		waitEventCount(t, foo, samplev1alpha1.ReasonSynced, "Deleted Deployment deploy-a: spec.deploymentName is now deploy-b", 1)
	})

	t.Run("two_foos_one_name", func(t *testing.T) {
		first := createFoo(t, newFoo(ns, "first", "shared", int32p(1)))
		original := waitManagedDeployment(t, ns, "shared", first)
		waitFooReady(t, ns, first.Name)

		errorsBefore := reconciles(scrape(t, c), "error")
		second := createFoo(t, newFoo(ns, "second", "shared", int32p(2)))
		second = waitFooNotReady(t, ns, second.Name, samplev1alpha1.ReasonResourceExists)
		if msg := readyCondition(second).Message; !strings.Contains(msg, `Deployment "shared" already exists`) || !strings.Contains(msg, `Foo "first"`) {
			t.Errorf("Ready message %q does not name the Deployment and its Foo", msg)
		}
		waitEvent(t, second, samplev1alpha1.ReasonResourceExists)

		// The refused Foo is retried with exponential backoff (5 ms
		// doubling). After its 12th failed sync the next retry is 10 s
		// away: a takeover quicker than that comes from the Deployment's
		// deletion, not from a retry.
		eventually(t, convergeTimeout, "the second Foo's 12th failed sync", func(ctx context.Context) (bool, error) {
			samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
			if err != nil {
				return false, err
			}
			return reconciles(samples, "error")-errorsBefore >= 12, nil
		})
		d, err := getDeployment(context.Background(), ns, "shared")
		if err != nil {
			t.Fatal(err)
		}
		if d.UID != original.UID || checkManagedDeployment(d, first) != nil {
			t.Fatalf("the first Foo lost its Deployment: uid %s (was %s): %v", d.UID, original.UID, checkManagedDeployment(d, first))
		}
		expectOneEvent(t, second, corev1.EventTypeWarning, samplev1alpha1.ReasonResourceExists)

		deleteFoo(t, ns, first.Name)
		freed := time.Now()
		var taken *appsv1.Deployment
		eventually(t, 8*time.Second, "the second Foo to get the Deployment once the first is deleted", func(ctx context.Context) (bool, error) {
			d, err := getDeployment(ctx, ns, "shared")
			if err != nil {
				return false, err
			}
			if d.UID == original.UID {
				return false, fmt.Errorf("still the first Foo's Deployment")
			}
			taken = d
			return true, checkManagedDeployment(d, second)
		})
		t.Logf("the second Foo got the Deployment %v after the first Foo's deletion", time.Since(freed).Round(time.Millisecond))
		if taken.UID == original.UID {
			t.Fatalf("not recreated")
		}
		waitFooReady(t, ns, second.Name)
		expectOneEvent(t, second, corev1.EventTypeWarning, samplev1alpha1.ReasonResourceExists)
	})
}

// 7. Deployments the controller does not manage are not cached; a name
// collision with one is still found (through the API) and nothing of them
// is touched.
func TestReconcile_7_CachesOnlyWhatItManages(t *testing.T) {
	ns := newNamespace(t, "unrelated")
	ensureStandardCRD(t)
	deployments := cluster.Kube.AppsV1().Deployments(ns)
	const unrelated = 200
	create := func(from, to int) {
		for i := from; i < to; i++ {
			d := unmanagedDeployment(ns, fmt.Sprintf("unrelated-%03d", i), 0)
			if _, err := deployments.Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	create(0, unrelated/2) // before the controller starts
	c := startController(t, "controller", controllerArgs(ns)...)
	create(unrelated/2, unrelated) // while it runs
	waitControllerReady(t, c)

	// Let the deployment controller finish with them, then remember them.
	snapshot := map[string]appsv1.Deployment{}
	eventually(t, 2*convergeTimeout, "the unrelated Deployments rolled out", func(ctx context.Context) (bool, error) {
		list, err := deployments.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pending := 0
		for _, d := range list.Items {
			if !rolledOut(&d) {
				pending++
			}
		}
		if len(list.Items) != unrelated || pending > 0 {
			return false, fmt.Errorf("%d Deployments, %d not rolled out", len(list.Items), pending)
		}
		for _, d := range list.Items {
			snapshot[d.Name] = d
		}
		return true, nil
	})

	// Foos asking for names taken by unrelated Deployments, some created
	// before the controller started, some after: none of them is in its
	// cache, the API tells it the name is taken.
	var colliding []*samplev1alpha1.Foo
	for i := 0; i < unrelated; i += 10 {
		name := fmt.Sprintf("unrelated-%03d", i+i/10%10)
		colliding = append(colliding, createFoo(t, newFoo(ns, "wants-"+name, name, int32p(1))))
	}
	for i, foo := range colliding {
		colliding[i] = waitFooNotReady(t, ns, foo.Name, samplev1alpha1.ReasonResourceExists)
		want := fmt.Sprintf("Deployment %q already exists and is not managed by this Foo (it is controlled by no Foo)", foo.Spec.DeploymentName)
		if msg := readyCondition(colliding[i]).Message; msg != want {
			t.Errorf("Foo %s Ready message %q, want %q", foo.Name, msg, want)
		}
		waitEvent(t, foo, samplev1alpha1.ReasonResourceExists)
	}
	// Each is retried with backoff meanwhile; each problem is reported once.
	consistently(t, 2*time.Second, "one ResourceExists event per Foo", func(ctx context.Context) error {
		var problems []string
		for _, foo := range colliding {
			events, err := fooEvents(ctx, ns, string(foo.UID), samplev1alpha1.ReasonResourceExists)
			if err != nil {
				return err
			}
			if len(events) != 1 || events[0].Count != 1 || events[0].Type != corev1.EventTypeWarning {
				problems = append(problems, foo.Name+": "+describeEvents(events))
			}
		}
		if len(problems) > 0 {
			return fmt.Errorf("want exactly one Warning event with count 1 per Foo:\n%s", strings.Join(problems, "\n"))
		}
		return nil
	})

	list, err := deployments.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != unrelated {
		t.Fatalf("%d Deployments in %s, want the %d unrelated ones only", len(list.Items), ns, unrelated)
	}
	for _, d := range list.Items {
		was, ok := snapshot[d.Name]
		switch {
		case !ok:
			t.Errorf("unexpected Deployment %s", d.Name)
		case d.ResourceVersion != was.ResourceVersion || !equality.Semantic.DeepEqual(d.Spec, was.Spec) ||
			!equality.Semantic.DeepEqual(d.Labels, was.Labels):
			t.Errorf("Deployment %s changed: resourceVersion %s (was %s), managers %v", d.Name, d.ResourceVersion, was.ResourceVersion, managers(&d))
		case len(d.OwnerReferences) != 0 || touchedByController(&d) || d.Labels[samplev1alpha1.LabelManagedBy] != "":
			t.Errorf("Deployment %s touched by the controller: owners %+v, managers %v, labels %v", d.Name, d.OwnerReferences, managers(&d), d.Labels)
		}
	}
}

// 8. With a CRD without subresources the controller writes status to the
// Foo itself, and settles: no further writes once the Foo is Ready.
func TestReconcile_8_StatuslessCRD(t *testing.T) {
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

// 10. -namespace confines the controller; -workers and the client limits
// are taken.
func TestReconcile_10_Flags(t *testing.T) {
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
		now, err := cluster.Sample.SamplecontrollerV1alpha1().Foos(ignored).Get(ctx, other.Name, metav1.GetOptions{})
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

// 9. Without the CRD the controller says what to do and exits non-zero.
// Deleting the CRD deletes every Foo in the cluster, so this runs last.
func TestReconcile_9_MissingCRDAtStart(t *testing.T) {
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
