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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/freshfirst"
	"github.com/kube-samples/sample-controller/test/framework"
)

// Renaming spec.deployment.name moves the Deployment: the controller creates
// the new one and deletes the old one itself.
func TestRenameMovesDeployment(t *testing.T) {
	ns := newNamespace(t, "rename")
	ensureStandardCRD(t)
	startController(t, "controller", controllerArgs(ns)...)

	foo := createFoo(t, newFoo(ns, "renamed", "deploy-a", int32p(1)))
	waitManagedDeployment(t, ns, "deploy-a", foo)
	waitFooReady(t, ns, foo.Name)

	foo = updateFoo(t, ns, foo.Name, func(f *samplev1beta1.Foo) { f.Spec.Deployment.Name = "deploy-b" })
	waitManagedDeployment(t, ns, "deploy-b", foo)
	waitDeploymentGone(t, ns, "deploy-a")
	waitFooReady(t, ns, foo.Name)
	waitEventCount(t, foo, samplecontroller.ReasonSynced, "Deleted Deployment deploy-a: replaced by deploy-b", 1)
}

// Of two Foos asking for one Deployment name the first keeps it, and the
// second gets it once it is freed.
func TestContestedDeploymentNameGoesToSecondFooOnceFreed(t *testing.T) {
	ns := newNamespace(t, "ownership")
	ensureStandardCRD(t)
	// The takeover below must not wait for the collector to learn of Foos.
	waitGarbageCollectorKnowsFoos(t, ns)
	c := startController(t, "controller", controllerArgs(ns)...)

	first := createFoo(t, newFoo(ns, "first", "shared", int32p(1)))
	original := waitManagedDeployment(t, ns, "shared", first)
	waitFooReady(t, ns, first.Name)

	errorsBefore := reconciles(scrape(t, c), "error")
	second := createFoo(t, newFoo(ns, "second", "shared", int32p(2)))
	second = waitFooNotReady(t, ns, second.Name, samplecontroller.ReasonResourceExists)
	if msg := readyCondition(second).Message; !strings.Contains(msg, `Deployment "shared" already exists`) || !strings.Contains(msg, `Foo "first"`) {
		t.Errorf("Ready message %q does not name the Deployment and its Foo", msg)
	}
	waitEvent(t, second, samplecontroller.ReasonResourceExists)

	// The refused Foo is retried with exponential backoff (from
	// RetryBaseDelay, doubling). Once it has failed often enough that its
	// next retry is more than takeoverBound away, a takeover within
	// takeoverBound comes from the Deployment's deletion, not from a
	// retry; the bound leaves the garbage collector, which deletes the
	// Deployment, plenty of time on a loaded machine.
	const takeoverBound = 30 * time.Second
	failures := 1
	for freshfirst.RetryBaseDelay<<(failures-1) <= takeoverBound {
		failures++
	}
	waitFailed := 2 * freshfirst.RetryBaseDelay << failures // the backoff of every failure so far, and as much again
	eventually(t, waitFailed, fmt.Sprintf("the second Foo's %dth failed sync", failures), func(ctx context.Context) (bool, error) {
		samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
		if err != nil {
			return false, err
		}
		return reconciles(samples, "error")-errorsBefore >= float64(failures), nil
	})
	d, err := getDeployment(context.Background(), ns, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if d.UID != original.UID || checkManagedDeployment(d, first) != nil {
		t.Fatalf("the first Foo lost its Deployment: uid %s (was %s): %v", d.UID, original.UID, checkManagedDeployment(d, first))
	}
	expectOneEvent(t, second, corev1.EventTypeWarning, samplecontroller.ReasonResourceExists)

	deleteFoo(t, ns, first.Name)
	freed := time.Now()
	eventually(t, takeoverBound, "the second Foo to get the Deployment once the first is deleted", func(ctx context.Context) (bool, error) {
		d, err := getDeployment(ctx, ns, "shared")
		if err != nil {
			return false, err
		}
		if d.UID == original.UID {
			return false, fmt.Errorf("still the first Foo's Deployment")
		}
		return true, checkManagedDeployment(d, second)
	})
	t.Logf("the second Foo got the Deployment %v after the first Foo's deletion", time.Since(freed).Round(time.Millisecond))
	waitFooReady(t, ns, second.Name)
	expectOneEvent(t, second, corev1.EventTypeWarning, samplecontroller.ReasonResourceExists)
}

func deleteFoo(t *testing.T, ns, name string) {
	t.Helper()
	err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// waitGarbageCollectorKnowsFoos waits until kube-controller-manager's
// garbage collector collects what a deleted Foo owned: it creates a Foo (in
// a namespace without a controller) owning a ConfigMap, deletes the Foo and
// waits for the ConfigMap to go. A test that needs the collector to act
// quickly on a Foo's deletion calls this first.
func waitGarbageCollectorKnowsFoos(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	foo := createFoo(t, newFoo(ns, "gc-probe", "gc-probe", nil))
	cm, err := cluster.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "gc-probe",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: samplev1beta1.SchemeGroupVersion.String(), Kind: samplecontroller.FooKind, Name: foo.Name, UID: foo.UID,
		}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteFoo(t, ns, foo.Name)
	eventually(t, gcTimeout, "the garbage collector to collect a deleted Foo's ConfigMap", func(ctx context.Context) (bool, error) {
		_, err := cluster.Kube.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
