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

package main

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/replicas"
)

// The informers' initial lists and resyncs queue Foos in the backlog; a Foo
// created, a new generation, or a change to its Deployment queue it fresh.
func TestEventsQueueFreshOrBacklog(t *testing.T) {
	foo := testfixtures.NewFoo("test", 1)
	newGeneration := foo.DeepCopy()
	newGeneration.Generation++
	// The handlers get Deployments as the cache keeps them.
	served := testfixtures.OwnedDeployment(t, foo)
	d := desired.CacheDeployment(served)
	served.ResourceVersion = "2"
	changed := desired.CacheDeployment(served)
	for name, tc := range map[string]struct {
		handle         func(c *Controller)
		fresh, backlog int
	}{
		"Foo in the initial list":        {func(c *Controller) { c.onFooAdd(foo, true) }, 0, 1},
		"Foo created":                    {func(c *Controller) { c.onFooAdd(foo, false) }, 1, 0},
		"Foo resynced or status written": {func(c *Controller) { c.onFooUpdate(foo, foo) }, 0, 1},
		"Foo spec changed":               {func(c *Controller) { c.onFooUpdate(foo, newGeneration) }, 1, 0},
		"Deployment in the initial list": {func(c *Controller) { c.onOwnedAdd(d, true) }, 0, 1},
		"Deployment changed":             {func(c *Controller) { c.onOwnedUpdate(d, changed) }, 1, 0},
		"Deployment resynced":            {func(c *Controller) { c.onOwnedUpdate(d, d) }, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.foos = append(f.foos, foo)
			_, ctx := ktesting.NewTestContext(t)
			f.newController(ctx)
			tc.handle(f.controller)
			if fresh, backlog := f.controller.workqueue.Len(), f.controller.workqueue.BacklogLen(); fresh != tc.fresh || backlog != tc.backlog {
				t.Errorf("queued fresh %d, backlog %d; want %d, %d", fresh, backlog, tc.fresh, tc.backlog)
			}
		})
	}
}

// gate is a write fence the test opens (Config.Admission, as pkg/replicas'
// Scope admits while its Fence is closed); it says when a worker waits at it.
type gate struct {
	waiting chan struct{}
	open    chan struct{}
}

func (g *gate) Admit(ctx context.Context) (func(), error) {
	g.waiting <- struct{}{}
	select {
	case <-g.open:
		return func() {}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// While the leader's Lease is overdue (pkg/replicas' fence is closed), a
// worker holds the key it took and syncs nothing; it syncs once the fence
// opens, on the cache as it is then.
func TestWorkerSyncsOnlyOnceTheWriteFenceOpens(t *testing.T) {
	f := newFixture(t)
	f.foos = append(f.foos, testfixtures.NewFoo("test", 1))
	_, ctx := ktesting.NewTestContext(t)
	g := &gate{waiting: make(chan struct{}), open: make(chan struct{})}
	f.admission = g
	f.newController(ctx)
	f.controller.workqueue.Add(cache.NewObjectName(metav1.NamespaceDefault, "test"))

	processed := make(chan bool)
	go func() { processed <- f.controller.processNextWorkItem(ctx) }()
	select {
	case <-g.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not ask the fence")
	}
	f.expectKubeWrites()
	f.expectFooWrites()

	close(g.open)
	select {
	case ok := <-processed:
		if !ok {
			t.Fatal("processNextWorkItem reported a shutdown")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not sync once the fence opened")
	}
	f.expectKubeWrites("create deployments test-deployment")
	f.expectFooWrites("patch foos/status test application/json-patch+json")
}

// A worker waiting at a closed fence, or for room for a sync, when shutdown
// ends its grace period stops without syncing.
func TestWaitingWorkerStopsOnShutdown(t *testing.T) {
	for _, tc := range []struct {
		at   string
		wait func(t *testing.T, f *fixture)
	}{
		{"at the fence", func(_ *testing.T, f *fixture) {
			f.admission = &gate{waiting: make(chan struct{}, 1), open: make(chan struct{})}
		}},
		{"for room for a sync", func(t *testing.T, f *fixture) {
			syncs := replicas.NewSyncs(1)
			if err := syncs.Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
			f.admission = replicas.Scope{Syncs: syncs}
		}},
	} {
		t.Run(tc.at, func(t *testing.T) {
			f := newFixture(t)
			f.foos = append(f.foos, testfixtures.NewFoo("test", 1))
			_, ctx := ktesting.NewTestContext(t)
			tc.wait(t, f)
			f.newController(ctx)
			f.controller.workqueue.Add(cache.NewObjectName(metav1.NamespaceDefault, "test"))

			workCtx, cancel := context.WithCancel(ctx)
			cancel()
			if f.controller.processNextWorkItem(workCtx) {
				t.Errorf("processNextWorkItem went on after its context ended %s", tc.at)
			}
			f.expectKubeWrites()
			f.expectFooWrites()
		})
	}
}

// Sharded, a worker waits while the replica's other shards use every sync it
// may run (pkg/replicas' Syncs), holding its key and writing nothing; it
// syncs once one ends, and it gives the room back.
func TestWorkerSyncsOnlyOnceTheReplicaHasRoomForASync(t *testing.T) {
	f := newFixture(t)
	f.foos = append(f.foos, testfixtures.NewFoo("test", 1))
	_, ctx := ktesting.NewTestContext(t)
	syncs := replicas.NewSyncs(1)
	f.admission = replicas.Scope{Syncs: syncs}
	f.newController(ctx)
	f.controller.workqueue.Add(cache.NewObjectName(metav1.NamespaceDefault, "test"))
	// Another shard's worker syncs.
	if err := syncs.Acquire(ctx); err != nil {
		t.Fatal(err)
	}

	processed := make(chan bool)
	go func() { processed <- f.controller.processNextWorkItem(ctx) }()
	select {
	case <-processed:
		t.Fatal("the worker synced while the replica's one sync was in use")
	case <-time.After(200 * time.Millisecond):
	}
	f.expectKubeWrites()
	f.expectFooWrites()

	syncs.Release()
	select {
	case ok := <-processed:
		if !ok {
			t.Fatal("processNextWorkItem reported a shutdown")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not sync once the other sync ended")
	}
	f.expectKubeWrites("create deployments test-deployment")
	f.expectFooWrites("patch foos/status test application/json-patch+json")
	acquired, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := syncs.Acquire(acquired); err != nil {
		t.Fatalf("the worker kept the replica's sync after its sync: %v", err)
	}
}
