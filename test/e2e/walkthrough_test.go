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
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// exampleFooManifest is the Foo the README creates, relative to the
// repository root (kubectl runs there).
const exampleFooManifest = "artifacts/examples/example-foo.yaml"

// TestReadmeWalkthrough walks through the README as a user does, in the
// default namespace with artifacts/examples/example-foo.yaml, one controller
// for the whole cluster (no -namespace), and then the controller's life
// cycle. The subtests run in order and share example-foo; one failing stops
// the rest.
func TestReadmeWalkthrough(t *testing.T) {
	const (
		ns      = metav1.NamespaceDefault
		fooName = "example-foo" // metadata.name and spec.deployment.name in example-foo.yaml
		// takenName is the Deployment someone made by hand, which
		// rivalName asks for too.
		takenName = "nginx-by-hand"
		rivalName = "wants-nginx-by-hand"
	)
	ctx := context.Background()
	deployments := cluster.Kube.AppsV1().Deployments(ns)
	fooClient := cluster.Sample.SamplecontrollerV1beta1().Foos(ns)

	// The controller below watches every namespace: no other controller
	// may run meanwhile, or the two would race for the same Foos.
	if running := framework.RunningProcesses(); len(running) > 0 {
		t.Fatalf("%s must run alone, but these are still running: %v", t.Name(), running)
	}

	// A user starts without the Foo CRD. The other tests leave it installed,
	// and a cluster reused from an earlier, interrupted run (E2E_KUBECONFIG)
	// may hold what this test creates. Removing the CRD removes every Foo,
	// and the garbage collector their Deployments.
	if _, err := crds(t).Get(ctx, samplecontroller.FooCRDName, metav1.GetOptions{}); err == nil {
		t.Logf("the Foo CRD exists already; deleting it so that the first step installs it as a user does")
		deleteCRD(t)
	}
	for _, name := range []string{fooName, takenName} {
		if err := deployments.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		waitDeploymentGone(t, ns, name)
	}
	t.Cleanup(func() {
		_, _ = cluster.Kubectl("", "delete", "foo", fooName, "--ignore-not-found")
		waitDeploymentGone(t, ns, fooName)
	})

	// The controller outlives the subtest that starts it, so it is stopped
	// when the walkthrough ends, not the subtest.
	startWalkthroughController := func(st *testing.T, name string) *framework.Controller {
		st.Helper()
		return startControllerFor(t, st, name, "-leader-elect=false")
	}

	var (
		controller *framework.Controller
		foo        *samplev1beta1.Foo
		deployment *appsv1.Deployment
	)
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("example_foo_gets_its_deployment_and_becomes_ready", func(t *testing.T) {
		out := kubectl(t, "create", "-f", crdManifest)
		if !strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/"+samplecontroller.FooCRDName+" created") {
			t.Fatalf("kubectl create -f %s: %s", crdManifest, out)
		}
		// Not kubectl wait: it fails on a CRD created a moment ago whose
		// status has no conditions yet (".status.conditions accessor
		// error"), where this waits.
		waitCRDEstablished(t)
		// The controller reads discovery once, at start.
		waitFooAPI(t, "foos, foos/status and foos/scale, and the full schema", withSubresources)

		controller = startWalkthroughController(t, "controller")
		waitControllerReady(t, controller)

		out = kubectl(t, "create", "-f", exampleFooManifest)
		if !strings.Contains(out, "foo.samplecontroller.k8s.io/"+fooName+" created") {
			t.Fatalf("kubectl create -f %s: %s", exampleFooManifest, out)
		}
		foo = getFoo(t, ns, fooName)
		deployment = waitManagedDeployment(t, ns, fooName, foo)
		t.Logf("Deployment %s uid %s controlled by Foo uid %s", deployment.Name, deployment.UID, foo.UID)

		selector := labels.SelectorFromSet(deployment.Spec.Selector.MatchLabels).String()
		eventually(t, convergeTimeout, "the Foo's pod Ready on "+nodeName, func(ctx context.Context) (bool, error) {
			pods, err := cluster.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err
			}
			if len(pods.Items) != 1 {
				return false, fmt.Errorf("%d pods match %s, want 1", len(pods.Items), selector)
			}
			pod := pods.Items[0]
			if pod.Spec.NodeName != nodeName || !podReady(&pod) {
				return false, fmt.Errorf("pod %s on node %q, phase %s, ready %v", pod.Name, pod.Spec.NodeName, pod.Status.Phase, podReady(&pod))
			}
			return true, nil
		})

		foo = waitFooReady(t, ns, fooName)
		if foo.Status.AvailableReplicas != 1 {
			t.Fatalf("status.availableReplicas %d, want 1", foo.Status.AvailableReplicas)
		}
		out = kubectl(t, "wait", "--for=condition=Ready", "foo/"+fooName, "--timeout=60s")
		if !strings.Contains(out, "foo.samplecontroller.k8s.io/"+fooName+" condition met") {
			t.Fatalf("kubectl wait: %s", out)
		}
		waitEvent(t, foo, samplecontroller.ReasonSynced)
		if e := expectOneEvent(t, foo, corev1.EventTypeNormal, samplecontroller.ReasonSynced); e.Message != "Created Deployment "+fooName {
			t.Fatalf("Synced event message %q, want %q", e.Message, "Created Deployment "+fooName)
		}
	})

	step("foo_scaled_to_3_scales_its_deployment", func(t *testing.T) {
		foo = updateFoo(t, ns, fooName, func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(3) })
		deployment = waitManagedDeployment(t, ns, fooName, foo) // spec.replicas 3
		foo = waitFooReady(t, ns, fooName)
		if foo.Status.AvailableReplicas != 3 {
			t.Fatalf("status.availableReplicas %d, want 3", foo.Status.AvailableReplicas)
		}
		waitEventCount(t, foo, samplecontroller.ReasonSynced, "Updated Deployment "+fooName+": .spec.replicas", 1)
		d, err := deployments.Get(ctx, fooName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.AvailableReplicas != 3 {
			t.Fatalf("Deployment status.availableReplicas %d, want 3", d.Status.AvailableReplicas)
		}
	})

	step("deployment_scaled_by_hand_is_scaled_back", func(t *testing.T) {
		before, err := deployments.Get(ctx, fooName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := kubectl(t, "scale", "deploy/"+fooName, "--replicas=5")
		if !strings.Contains(out, "deployment.apps/"+fooName+" scaled") {
			t.Fatalf("kubectl scale: %s", out)
		}
		// One generation for the scale to 5, one for the way back to 3.
		eventually(t, convergeTimeout, "spec.replicas back to 3 after the scale to 5", func(ctx context.Context) (bool, error) {
			d, err := deployments.Get(ctx, fooName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if d.Generation < before.Generation+2 || *d.Spec.Replicas != 3 {
				return false, fmt.Errorf("generation %d (was %d), spec.replicas %d", d.Generation, before.Generation, *d.Spec.Replicas)
			}
			return true, nil
		})
		// The same event as for the scale to 3 in the step before, now seen
		// twice.
		waitEventCount(t, foo, samplecontroller.ReasonSynced, "Updated Deployment "+fooName+": .spec.replicas", 2)
		deployment = waitManagedDeployment(t, ns, fooName, foo)
		if deployment.UID != before.UID {
			t.Fatalf("Deployment replaced (uid %s, was %s); want it updated in place", deployment.UID, before.UID)
		}
		foo = waitFooReady(t, ns, fooName)
	})

	step("deleted_deployment_is_recreated", func(t *testing.T) {
		old := deployment
		kubectl(t, "delete", "deploy/"+fooName)
		eventually(t, convergeTimeout, "a new Deployment "+fooName, func(ctx context.Context) (bool, error) {
			d, err := deployments.Get(ctx, fooName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if d.UID == old.UID {
				return false, fmt.Errorf("still the old Deployment %s", d.UID)
			}
			deployment = d
			return true, checkManagedDeployment(d, foo)
		})
		t.Logf("Deployment recreated: uid %s (was %s)", deployment.UID, old.UID)
		// The same event as for the creation in the first step, now seen
		// twice.
		waitEventCount(t, foo, samplecontroller.ReasonSynced, "Created Deployment "+fooName, 2)
		foo = waitFooReady(t, ns, fooName)
	})

	step("deleted_foo_has_its_deployment_garbage_collected", func(t *testing.T) {
		kubectl(t, "delete", "foo/"+fooName)
		if _, err := fooClient.Get(ctx, fooName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("Foo still there after kubectl delete: %v", err)
		}
		// kube-controller-manager's garbage collector deletes it; it knows
		// Foos once it resynced with discovery after the first step created
		// the CRD (every 30 s), so this can take that long.
		waitDeploymentGoneWithin(t, gcTimeout, ns, fooName)
		selector := labels.SelectorFromSet(deployment.Spec.Selector.MatchLabels).String()
		eventually(t, convergeTimeout, "the Foo's ReplicaSets to be collected", func(ctx context.Context) (bool, error) {
			rs, err := cluster.Kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err
			}
			if len(rs.Items) > 0 {
				return false, fmt.Errorf("%d ReplicaSets left", len(rs.Items))
			}
			return true, nil
		})
	})

	step("taken_deployment_name_is_refused_and_left_untouched", func(t *testing.T) {
		taken, err := deployments.Create(ctx, unmanagedDeployment(ns, takenName, 1), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = fooClient.Delete(context.Background(), rivalName, metav1.DeleteOptions{})
			_ = deployments.Delete(context.Background(), takenName, metav1.DeleteOptions{})
			waitDeploymentGone(t, ns, takenName)
		})
		// The deployment controller writes its status; once it is done,
		// nobody else has a reason to write it.
		eventually(t, convergeTimeout, takenName+" rolled out", func(ctx context.Context) (bool, error) {
			taken, err = deployments.Get(ctx, takenName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return rolledOut(taken), nil
		})

		createFoo(t, newFoo(ns, rivalName, takenName, int32p(2)))
		rival := waitFooNotReady(t, ns, rivalName, samplecontroller.ReasonResourceExists)
		if msg := readyCondition(rival).Message; !strings.Contains(msg, `Deployment "`+takenName+`" already exists`) {
			t.Fatalf("Ready message %q does not name the Deployment", msg)
		}
		waitEvent(t, rival, samplecontroller.ReasonResourceExists)
		// The controller keeps retrying with backoff; the event must still
		// be the one recorded the first time.
		consistently(t, 5*time.Second, "exactly one ResourceExists event", func(ctx context.Context) error {
			events, err := fooEvents(ctx, ns, string(rival.UID), samplecontroller.ReasonResourceExists)
			if err != nil {
				return err
			}
			if len(events) != 1 || events[0].Count != 1 {
				return fmt.Errorf("events %s", describeEvents(events))
			}
			return nil
		})
		e := expectOneEvent(t, rival, corev1.EventTypeWarning, samplecontroller.ReasonResourceExists)
		if e.Message != readyCondition(rival).Message {
			t.Fatalf("event message %q, want the Ready message %q", e.Message, readyCondition(rival).Message)
		}
		if events, _ := fooEvents(ctx, ns, string(rival.UID), samplecontroller.ReasonSynced); len(events) != 0 {
			t.Fatalf("Synced events on the refused Foo: %s", describeEvents(events))
		}

		after, err := deployments.Get(ctx, takenName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != taken.ResourceVersion {
			t.Errorf("Deployment %s resourceVersion %s, was %s; managers %v", takenName, after.ResourceVersion, taken.ResourceVersion, managers(after))
		}
		if !equality.Semantic.DeepEqual(after.Spec, taken.Spec) {
			t.Errorf("Deployment %s spec changed:\nbefore %+v\nafter  %+v", takenName, taken.Spec, after.Spec)
		}
		if len(after.OwnerReferences) != 0 || touchedByController(after) {
			t.Errorf("Deployment %s owner references %+v, managers %v; want none by the controller", takenName, after.OwnerReferences, managers(after))
		}
	})

	step("sigterm_exits_0_and_the_restarted_controller_writes_nothing", func(t *testing.T) {
		kubectl(t, "create", "-f", exampleFooManifest)
		foo = getFoo(t, ns, fooName)
		deployment = waitManagedDeployment(t, ns, fooName, foo)
		foo = waitFooReady(t, ns, fooName)

		if err := controller.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		code, err := controller.Wait(time.Minute)
		if err != nil {
			t.Fatalf("after SIGTERM: %v", err)
		}
		if code != 0 {
			t.Fatalf("exit code %d after SIGTERM, want 0; log:\n%s", code, framework.Trim(controller.Log(), 3000))
		}
		t.Logf("controller exited with 0, %v after SIGTERM", time.Since(start).Round(time.Millisecond))

		controller = startWalkthroughController(t, "controller-restarted")
		waitControllerReady(t, controller)
		eventually(t, convergeTimeout, "the restarted controller to sync the Foo", func(ctx context.Context) (bool, error) {
			samples, err := framework.ScrapeURL(ctx, controller.MetricsURL())
			if err != nil {
				return false, err
			}
			return reconciles(samples, "success") >= 1, nil
		})

		list, err := deployments.List(ctx, metav1.ListOptions{LabelSelector: samplecontroller.LabelController + "=" + fooName})
		if err != nil {
			t.Fatal(err)
		}
		var controlled []string
		for i := range list.Items {
			if checkControlledBy(&list.Items[i], foo) == nil {
				controlled = append(controlled, list.Items[i].Name+"/"+string(list.Items[i].UID))
			}
		}
		if len(list.Items) != 1 || len(controlled) != 1 {
			t.Fatalf("%d Deployments labelled %s=%s, %d controlled by the Foo (%v); want exactly one", len(list.Items), samplecontroller.LabelController, fooName, len(controlled), controlled)
		}
		if got := list.Items[0]; got.UID != deployment.UID || checkManagedDeployment(&got, foo) != nil {
			t.Fatalf("Deployment after restart: uid %s (was %s): %v", got.UID, deployment.UID, checkManagedDeployment(&got, foo))
		}
		foo = getFoo(t, ns, fooName)
		if !isReady(foo) || foo.Status.AvailableReplicas != specReplicas(foo) {
			t.Fatalf("after restart: %s", describeFoo(foo))
		}
		// Everything was right already: the new controller has nothing to
		// write.
		if writes := writeRequests(scrape(t, controller)); writes != 0 {
			t.Fatalf("restarted controller made %v write requests; want none", writes)
		}
	})
}
