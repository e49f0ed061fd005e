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
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-samples/sample-controller/pkg/contract"
)

func key(name string) cache.ObjectName { return cache.ObjectName{Namespace: "default", Name: name} }

// startFeeder runs the queue's backlog feeder until the test ends.
func startFeeder(t *testing.T, q *fooQueue, lowWater int, maxWait time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		q.feedBacklog(ctx, lowWater, maxWait)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		q.ShutDown()
		<-done
	})
}

// waitLen waits (bounded) until the workers' queue holds n keys.
func waitLen(t *testing.T, q *fooQueue, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q.Len() != n {
		if time.Now().After(deadline) {
			t.Fatalf("queue length %d, want %d", q.Len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// take gets the next key as a worker does and marks it done.
func take(q *fooQueue) cache.ObjectName {
	k, _ := q.Get()
	q.Done(k)
	return k
}

// A cold start queues hundreds of Foos at once; a Foo a user creates then is
// synced after at most the few backlog keys already handed to the workers'
// queue, not after the whole backlog.
func TestFreshKeyGoesAheadOfTheBacklog(t *testing.T) {
	q := newFooQueue()
	for i := range 100 {
		q.AddToBacklog(key(fmt.Sprintf("listed-%03d", i)))
	}
	startFeeder(t, q, 2, time.Hour)
	waitLen(t, q, 2) // the feeder keeps two keys waiting, no more

	q.Add(key("fresh"))
	seen := map[cache.ObjectName]int{}
	for i := range 101 {
		k := take(q)
		seen[k]++
		if k == key("fresh") && i > 2 {
			t.Errorf("fresh key taken %dth, behind %d backlog keys; want within the first 3", i+1, i)
		}
	}
	if len(seen) != 101 {
		t.Errorf("%d distinct keys taken, want all 101", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s taken %d times", k, n)
		}
	}
}

// However many fresh keys wait, a backlog key gets in after maxWait: the
// backlog is never starved.
func TestBacklogIsNotStarvedByFreshKeys(t *testing.T) {
	q := newFooQueue()
	for i := range 5 {
		q.Add(key(fmt.Sprintf("fresh-%d", i)))
	}
	q.AddToBacklog(key("listed-a"))
	q.AddToBacklog(key("listed-b"))
	startFeeder(t, q, 1, 10*time.Millisecond)
	// No worker takes anything: the queue stays above its low water, and
	// still both backlog keys go in, one maxWait each.
	waitLen(t, q, 7)
}

// A key a worker holds is not handed to a second worker when the backlog
// feeds it again meanwhile; it is synced again after Done, once.
func TestKeyInHandIsNotSyncedTwiceAtOnce(t *testing.T) {
	q := newFooQueue()
	q.Add(key("a"))
	inHand, _ := q.Get()
	startFeeder(t, q, 10, time.Hour)
	q.AddToBacklog(key("a"))
	q.AddToBacklog(key("a")) // the backlog dedups too
	q.AddToBacklog(key("b"))
	waitLen(t, q, 1) // b only: a waits for Done
	if k := take(q); k != key("b") {
		t.Fatalf("took %s, want b while a is in hand", k)
	}
	q.Done(inHand)
	waitLen(t, q, 1)
	if k := take(q); k != key("a") {
		t.Fatalf("took %s, want a again after Done", k)
	}
	if q.Len() != 0 {
		t.Errorf("queue length %d after a was taken again, want 0 (no duplicate)", q.Len())
	}
}

// Retries keep their backoff: a rate-limited key is not available at once,
// and arrives when its backoff has passed.
func TestRetryWaitsForItsBackoff(t *testing.T) {
	q := newFooQueue()
	defer q.ShutDown()
	for range 6 { // the next backoff: 5 ms × 2^6 = 320 ms
		q.AddRateLimited(key("failing"))
		waitLen(t, q, 1)
		take(q)
	}
	q.AddRateLimited(key("failing"))
	if q.Len() != 0 {
		t.Errorf("retry available at once, want it held for its backoff")
	}
	waitLen(t, q, 1)
	if n := q.NumRequeues(key("failing")); n != 7 {
		t.Errorf("requeues %d, want 7", n)
	}
}

// The informers' initial lists and resyncs queue Foos in the backlog; a Foo
// created, a new generation, or a change to its Deployment queue it fresh.
func TestEventsQueueFreshOrBacklog(t *testing.T) {
	foo := newFoo("test", 1)
	newGeneration := foo.DeepCopy()
	newGeneration.Generation++
	// The handlers get Deployments as the cache keeps them.
	served := ownedDeployment(t, foo)
	d := contract.NewCachedDeployment(served)
	served.ResourceVersion = "2"
	changed := contract.NewCachedDeployment(served)
	for name, tc := range map[string]struct {
		handle         func(c *Controller)
		fresh, backlog int
	}{
		"Foo in the initial list":        {func(c *Controller) { c.onFooAdd(foo, true) }, 0, 1},
		"Foo created":                    {func(c *Controller) { c.onFooAdd(foo, false) }, 1, 0},
		"Foo resynced or status written": {func(c *Controller) { c.onFooUpdate(foo, foo) }, 0, 1},
		"Foo spec changed":               {func(c *Controller) { c.onFooUpdate(foo, newGeneration) }, 1, 0},
		"Deployment in the initial list": {func(c *Controller) { c.onDeploymentAdd(d, true) }, 0, 1},
		"Deployment changed":             {func(c *Controller) { c.onDeploymentUpdate(d, changed) }, 1, 0},
		"Deployment resynced":            {func(c *Controller) { c.onDeploymentUpdate(d, d) }, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.foos = append(f.foos, foo)
			_, ctx := ktesting.NewTestContext(t)
			f.newController(ctx)
			tc.handle(f.controller)
			if fresh, backlog := f.controller.workqueue.Len(), f.controller.workqueue.backlog.Len(); fresh != tc.fresh || backlog != tc.backlog {
				t.Errorf("queued fresh %d, backlog %d; want %d, %d", fresh, backlog, tc.fresh, tc.backlog)
			}
		})
	}
}

// gate is a write fence the test opens; it says when a worker waits at it.
type gate struct {
	waiting chan struct{}
	open    chan struct{}
}

func (g *gate) WaitOpen(ctx context.Context) error {
	g.waiting <- struct{}{}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// While the leader's Lease is overdue (pkg/leader's fence is closed), a
// worker holds the key it took and syncs nothing; it syncs once the fence
// opens, on the cache as it is then.
func TestWorkerSyncsOnlyOnceTheWriteFenceOpens(t *testing.T) {
	f := newFixture(t)
	f.foos = append(f.foos, newFoo("test", 1))
	_, ctx := ktesting.NewTestContext(t)
	f.newController(ctx)
	g := &gate{waiting: make(chan struct{}), open: make(chan struct{})}
	f.controller.fence = g
	f.controller.workqueue.Add(key("test"))

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

// A worker waiting at a closed fence when shutdown ends its grace period
// stops without syncing.
func TestWorkerWaitingAtTheFenceStopsOnShutdown(t *testing.T) {
	f := newFixture(t)
	f.foos = append(f.foos, newFoo("test", 1))
	_, ctx := ktesting.NewTestContext(t)
	f.newController(ctx)
	g := &gate{waiting: make(chan struct{}, 1), open: make(chan struct{})}
	f.controller.fence = g
	f.controller.workqueue.Add(key("test"))

	workCtx, cancel := context.WithCancel(ctx)
	cancel()
	if f.controller.processNextWorkItem(workCtx) {
		t.Error("processNextWorkItem went on after its context ended at the fence")
	}
	f.expectKubeWrites()
	f.expectFooWrites()
}
