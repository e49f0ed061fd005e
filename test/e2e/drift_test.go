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

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/test/framework"
)

// Drift in the fields the controller owns is reverted; what others added
// stays.
func TestDriftIsRepairedAndForeignFieldsKept(t *testing.T) {
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
		delete(d.Labels, samplecontroller.LabelController)
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
	if edited.Spec.Template.Spec.Containers[0].Image != foreignImage || edited.Labels[samplecontroller.LabelController] != "" {
		t.Fatalf("the hand edit did not stick: %+v", edited.Labels)
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
	waitEventCount(t, foo, samplecontroller.ReasonSynced, `Updated Deployment drift: .metadata.labels.controller, .spec.template.spec.containers[name="nginx"].image`, 1)
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
	waitEventCount(t, foo, samplecontroller.ReasonSynced, `Updated Deployment drift: .metadata.labels.controller, .spec.template.spec.containers[name="nginx"].image`, 1)
	settled, err := getDeployment(context.Background(), ns, "drift")
	if err != nil {
		t.Fatal(err)
	}
	if settled.Labels["team"] != "payments" || settled.Annotations[noteKey] != noteValue || checkManagedDeployment(settled, foo) != nil {
		t.Fatalf("after the roll-out: labels %v annotations %v: %v", settled.Labels, settled.Annotations, checkManagedDeployment(settled, foo))
	}
	t.Logf("repaired at resourceVersion %v; field managers now %v", repaired.ResourceVersion, managers(settled))
}

// A repair is conditional on the Deployment it was computed from: the API
// server refuses a forced apply that carries a resourceVersion older than the
// Deployment's, so a replica acting on a stale cache (a leader that woke from
// a pause, see pkg/replicas/fence.go) cannot undo a newer write; the same apply
// on the current version goes through.
func TestStaleRepairIsRefusedByTheAPIServer(t *testing.T) {
	ns := newNamespace(t, "stale-repair")
	deployments := cluster.Kube.AppsV1().Deployments(ns)
	// The Foo exists (no controller runs here): a Deployment whose owner is
	// missing would be the garbage collector's to delete during the test.
	ensureStandardCRD(t)
	foo := createFoo(t, newFoo(ns, "stale", "stale", int32p(1)))
	object := desired.NewDeployment(foo)
	seen, err := deployments.Create(context.Background(), object, metav1.CreateOptions{FieldManager: samplecontroller.ControllerName})
	if err != nil {
		t.Fatal(err)
	}
	// Another writer (the leader that took over) sets 3 replicas.
	scaledFoo := foo.DeepCopy()
	scaledFoo.Spec.Replicas = int32p(3)
	var scaled *appsv1.Deployment
	err = retry.RetryOnConflict(retry.DefaultRetry, applyOnCurrentVersion(ns, desired.DeploymentFor(scaledFoo), &scaled))
	if err != nil {
		t.Fatal(err)
	}

	// The stale replica still sees the first version and asks for 1.
	_, err = deployments.Apply(context.Background(),
		desired.DeploymentFor(foo).WithResourceVersion(seen.ResourceVersion),
		metav1.ApplyOptions{FieldManager: samplecontroller.ControllerName, Force: true})
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply on resourceVersion %s after %s: %v, want 409 Conflict", seen.ResourceVersion, scaled.ResourceVersion, err)
	}
	current, err := getDeployment(context.Background(), ns, "stale")
	if err != nil {
		t.Fatal(err)
	}
	// (The deployment controller's status writes move the resourceVersion
	// meanwhile; a spec change would move the generation.)
	if *current.Spec.Replicas != 3 || current.Generation != scaled.Generation {
		t.Fatalf("the refused apply changed the Deployment: replicas %d, generation %d (was %d)",
			*current.Spec.Replicas, current.Generation, scaled.Generation)
	}

	// Computed from the current version, the same apply is accepted. The
	// deployment controller may write the status between the read and the
	// apply, which makes that version stale too: then read again.
	var applied *appsv1.Deployment
	err = retry.RetryOnConflict(retry.DefaultRetry, applyOnCurrentVersion(ns, desired.DeploymentFor(foo), &applied))
	if err != nil {
		t.Fatalf("apply on the current resourceVersion: %v", err)
	}
	if *applied.Spec.Replicas != 1 {
		t.Errorf("replicas %d after the apply, want 1", *applied.Spec.Replicas)
	}
}

// applyOnCurrentVersion returns an apply of desired made conditional on the
// Deployment's version as just read, as the controller's repairs are; the
// result goes to *applied. The deployment controller's status writes can make
// that version stale before the apply lands, so callers retry on conflict.
func applyOnCurrentVersion(ns string, want *appsv1ac.DeploymentApplyConfiguration, applied **appsv1.Deployment) func() error {
	return func() error {
		current, err := getDeployment(context.Background(), ns, *want.Name)
		if err != nil {
			return err
		}
		*applied, err = cluster.Kube.AppsV1().Deployments(ns).Apply(context.Background(),
			want.WithResourceVersion(current.ResourceVersion),
			metav1.ApplyOptions{FieldManager: samplecontroller.ControllerName, Force: true})
		return err
	}
}
