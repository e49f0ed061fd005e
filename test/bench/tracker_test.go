//go:build bench

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

package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions"
)

// tracker follows one namespace's (or every namespace's) Foos and Deployments through watches and
// tells when a milestone of a run (every Deployment exists, every Foo is
// Ready, ...) was first reached. Watching, not polling lists, keeps the
// bench's own load on the API server small, the same for the floor and the
// controller, and dates each milestone to the event that reached it rather
// than to the next poll.
type tracker struct {
	stop context.CancelFunc

	mu     sync.Mutex
	counts counts
	// Per object, by namespace/name, what counts already include, so an
	// update moves a count by at most one.
	foos        map[string]fooProgress
	deployments map[string]bool // name → available
	// firstSeen is when each Deployment was first seen, by namespace/name,
	// for latencies.
	firstSeen map[string]time.Time
	// fooChanges counts Foo updates that changed the stored object: every
	// write that carries a change produces one, a write equal to what is
	// stored produces none.
	fooChanges int
	waiters    []*waiter
}

// counts are a namespace's numbers of objects in each state.
type counts struct {
	foos, foosCurrent, foosReady      int
	deployments, deploymentsAvailable int
}

type fooProgress struct{ current, ready bool }

type waiter struct {
	cond func(counts) bool
	at   chan time.Time
}

// newTracker starts watching ns (every namespace if "") and returns once the watches have listed
// what exists.
func (b *bench) newTracker(ns string) *tracker {
	ctx, cancel := context.WithCancel(b.ctx)
	t := &tracker{
		stop:        cancel,
		foos:        map[string]fooProgress{},
		deployments: map[string]bool{},
		firstSeen:   map[string]time.Time{},
	}
	sampleFactory := informers.NewSharedInformerFactoryWithOptions(b.sample, 0, informers.WithNamespace(ns))
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(b.kube, 0, kubeinformers.WithNamespace(ns))
	fooInformer := sampleFactory.Samplecontroller().V1beta1().Foos().Informer()
	deploymentInformer := kubeFactory.Apps().V1().Deployments().Informer()
	_, err := fooInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { t.observeFoo(obj.(*samplev1beta1.Foo), false) },
		UpdateFunc: func(oldObj, newObj interface{}) {
			t.observeFoo(newObj.(*samplev1beta1.Foo), oldObj.(*samplev1beta1.Foo).ResourceVersion != newObj.(*samplev1beta1.Foo).ResourceVersion)
		},
	})
	if err != nil {
		b.t.Fatal(err)
	}
	_, err = deploymentInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { t.observeDeployment(obj.(*appsv1.Deployment)) },
		UpdateFunc: func(_, newObj interface{}) { t.observeDeployment(newObj.(*appsv1.Deployment)) },
	})
	if err != nil {
		b.t.Fatal(err)
	}
	sampleFactory.Start(ctx.Done())
	kubeFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), fooInformer.HasSynced, deploymentInformer.HasSynced) {
		b.t.Fatalf("tracker for %s: caches did not sync", ns)
	}
	return t
}

func (t *tracker) observeFoo(foo *samplev1beta1.Foo, changed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := foo.Namespace + "/" + foo.Name
	old, known := t.foos[key]
	now := fooProgress{current: foo.Status.ObservedGeneration == foo.Generation}
	now.ready = now.current && meta.IsStatusConditionTrue(foo.Status.Conditions, samplecontroller.ConditionReady)
	t.foos[key] = now
	if !known {
		t.counts.foos++
	}
	t.counts.foosCurrent += delta(old.current, now.current)
	t.counts.foosReady += delta(old.ready, now.ready)
	if changed {
		t.fooChanges++
	}
	t.notify()
}

func (t *tracker) observeDeployment(d *appsv1.Deployment) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := d.Namespace + "/" + d.Name
	old, known := t.deployments[key]
	available := d.Spec.Replicas != nil && d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.ObservedGeneration >= d.Generation
	t.deployments[key] = available
	if !known {
		t.counts.deployments++
		t.firstSeen[key] = time.Now()
	}
	t.counts.deploymentsAvailable += delta(old, available)
	t.notify()
}

func delta(was, is bool) int {
	switch {
	case !was && is:
		return 1
	case was && !is:
		return -1
	}
	return 0
}

// notify hands the current time to every waiter whose condition now holds.
// Called with mu held.
func (t *tracker) notify() {
	kept := t.waiters[:0]
	for _, w := range t.waiters {
		if w.cond(t.counts) {
			w.at <- time.Now()
		} else {
			kept = append(kept, w)
		}
	}
	t.waiters = kept
}

// waitUntil returns the time cond first held on the tracker's counts, at
// or after the call; it fails the bench after timeout.
func (b *bench) waitUntil(t *tracker, what string, timeout time.Duration, cond func(counts) bool) time.Time {
	b.t.Helper()
	w := &waiter{cond: cond, at: make(chan time.Time, 1)}
	t.mu.Lock()
	if cond(t.counts) {
		t.mu.Unlock()
		return time.Now()
	}
	t.waiters = append(t.waiters, w)
	t.mu.Unlock()
	select {
	case at := <-w.at:
		return at
	case <-time.After(timeout):
		b.t.Fatalf("waiting for %s: still %s after %v", what, t.snapshot(), timeout)
		return time.Time{}
	}
}

func (t *tracker) snapshot() counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts
}

func (c counts) String() string {
	return fmt.Sprintf("%d Foos (%d current, %d Ready), %d Deployments (%d available)",
		c.foos, c.foosCurrent, c.foosReady, c.deployments, c.deploymentsAvailable)
}

// deploymentSeen is when the Deployment ns/name was first seen.
func (t *tracker) deploymentSeen(ns, name string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.firstSeen[ns+"/"+name]
	return at, ok
}

// fooChangeCount is how many Foo updates changed the stored object so far.
func (t *tracker) fooChangeCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fooChanges
}

// Milestones of a run over n Foos.
func allFoos(n int) func(counts) bool { return func(c counts) bool { return c.foos >= n } }

// converged: every Deployment exists and every Foo's status is current.
func converged(n int) func(counts) bool {
	return func(c counts) bool { return c.deployments >= n && c.foosCurrent >= n }
}

func allAvailable(n int) func(counts) bool {
	return func(c counts) bool { return c.deploymentsAvailable >= n }
}

func allReady(n int) func(counts) bool { return func(c counts) bool { return c.foosReady >= n } }
