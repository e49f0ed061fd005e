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
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// A Foo deleted with foreground propagation, and held meanwhile by another
// controller's finalizer: the garbage collector deletes its Deployment once,
// the controller never creates it again, and the Foo goes once released.
func TestForegroundDeletionDeletesTheDeploymentOnce(t *testing.T) {
	const hold = "example.com/hold"
	ns := newNamespace(t, "deletion")
	ensureStandardCRD(t)
	c := startController(t, "controller", controllerArgs(ns)...)

	// Every creation and deletion of the Deployment, from before the Foo.
	events := watchDeployment(t, ns, "held")

	held := newFoo(ns, "held", "held", int32p(1))
	held.Finalizers = []string{hold}
	held = createFoo(t, held)
	t.Cleanup(func() { releaseFoo(ns, held.Name) }) // or the namespace stays
	held = waitFooReady(t, ns, held.Name)
	waitManagedDeployment(t, ns, "held", held)

	foos := cluster.Sample.SamplecontrollerV1beta1().Foos(ns)
	err := foos.Delete(context.Background(), held.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	if err != nil {
		t.Fatal(err)
	}
	// onFooUpdate queues the Foo fresh on a new generation: the API server
	// starts a custom resource's deletion with one.
	if deleting := getFoo(t, ns, held.Name); deleting.DeletionTimestamp == nil || deleting.Generation != held.Generation+1 {
		t.Errorf("Foo being deleted: deletionTimestamp %v generation %d, want set and %d",
			deleting.DeletionTimestamp, deleting.Generation, held.Generation+1)
	}

	// The collector deletes the Deployment (its ReplicaSet and pod first),
	// then lets go of the Foo, which the foreign finalizer still holds.
	eventually(t, gcTimeout, "the garbage collector done with Foo held", func(ctx context.Context) (bool, error) {
		foo, err := foos.Get(ctx, held.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if deleted := events.count(watch.Deleted); deleted == 0 || !slices.Equal(foo.Finalizers, []string{hold}) {
			return false, fmt.Errorf("Deployment deletions seen: %d; Foo finalizers %q", deleted, foo.Finalizers)
		}
		return true, nil
	})

	// The Deployment's deletion queued the Foo being deleted; a Foo created
	// since is Ready only after the controller saw that deletion (the events
	// of its Deployment come later on the same watch), and the queue empties
	// only after the Foo being deleted was taken from it.
	createFoo(t, newFoo(ns, "after", "after", int32p(1)))
	waitFooReady(t, ns, "after")
	eventually(t, convergeTimeout, "the controller's queue empty", func(ctx context.Context) (bool, error) {
		samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
		if err != nil {
			return false, err
		}
		if depth := queueDepth(samples); depth != 0 {
			return false, fmt.Errorf("queue depth %v", depth)
		}
		return true, nil
	})
	if d, err := getDeployment(context.Background(), ns, "held"); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment held while its Foo is being deleted: %v (error %v), want none", d, err)
	}
	if created, deleted := events.count(watch.Added), events.count(watch.Deleted); created != 1 || deleted != 1 {
		t.Fatalf("Deployment held created %d times and deleted %d times, want once each", created, deleted)
	}

	updateFoo(t, ns, held.Name, func(foo *samplev1beta1.Foo) {
		foo.Finalizers = slices.DeleteFunc(foo.Finalizers, func(f string) bool { return f == hold })
	})
	eventually(t, convergeTimeout, "Foo held gone", func(ctx context.Context) (bool, error) {
		_, err := foos.Get(ctx, held.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if created := events.count(watch.Added); created != 1 {
		t.Errorf("Deployment held created %d times, want once", created)
	}
}

// deploymentEvents counts the events of a watch by type.
type deploymentEvents struct {
	mu       sync.Mutex
	counts   map[watch.EventType]int
	brokeOff bool           // the watch ended before the test did
	failure  runtime.Object // the first error event's
}

func (e *deploymentEvents) count(typ watch.EventType) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[typ]
}

// watchDeployment counts the events of the Deployment ns/name, whatever its
// uid, until the test ends. A watch that breaks off fails the test: it
// would miss a creation.
func watchDeployment(t *testing.T, ns, name string) *deploymentEvents {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := cluster.Kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	events := &deploymentEvents{counts: map[watch.EventType]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for event := range w.ResultChan() {
			events.mu.Lock()
			events.counts[event.Type]++
			// client-go ends a watch canceled by the test with an error event.
			if event.Type == watch.Error && events.failure == nil && ctx.Err() == nil {
				events.failure = event.Object
			}
			events.mu.Unlock()
		}
		events.mu.Lock()
		events.brokeOff = ctx.Err() == nil
		events.mu.Unlock()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if events.brokeOff || events.failure != nil {
			t.Errorf("the watch of Deployment %s/%s ended early (%v) or failed (%v): creations may have been missed",
				ns, name, events.brokeOff, events.failure)
		}
	})
	return events
}

// releaseFoo removes every finalizer of a Foo, if it is still there.
func releaseFoo(ns, name string) {
	_, _ = cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Patch(context.Background(), name,
		types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
}
