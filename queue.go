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
	"errors"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/metrics"
)

// fooQueue holds the keys of Foos to sync. Only keys are queued, never
// objects: a worker reads the latest state from the cache when it gets to the
// key.
//
// It is two client-go queues. Workers take from the first, the rate-limited
// queue: it never holds a key twice, so many events for one Foo cost one
// sync, never hands one key to two workers at once, and delays retries. The
// second, the backlog, holds the keys queued in bulk, by the informers'
// initial list and periodic resyncs: thousands at once after a start or a
// failover. A feeder moves them into the first queue only while it is
// nearly empty, so a Foo a user just created or changed is synced next, not
// after the whole backlog. The feeder also moves one backlog key every
// backlogMaxWait whatever the other queue holds: fresh changes cannot
// starve the backlog.
//
// A key in both queues is synced twice; the second sync finds nothing to
// do and makes no API call.
type fooQueue struct {
	workqueue.TypedRateLimitingInterface[cache.ObjectName]

	backlog workqueue.TypedInterface[cache.ObjectName]
	// taken is signalled each time a worker takes a key: there may be room
	// for backlog keys now.
	taken chan struct{}
}

// Tuning of the backlog feeder.
const (
	// backlogLowWater: backlog keys are moved while fewer than this many
	// keys wait for a worker. One is enough to keep every worker busy: the
	// feeder tops the queue up each time a worker takes a key, within
	// microseconds, while a sync takes milliseconds. More would only put
	// backlog keys ahead of the next fresh one (docs/performance.md has the
	// measurement).
	backlogLowWater = 1
	// backlogMaxWait: the longest a backlog key waits behind fresh ones.
	backlogMaxWait = time.Second
)

// newFooQueue returns an empty queue.
//
// Retries back off per Foo from 5 ms to 1000 s; all retries together are
// held to 50 per second (bursts of 300) so a failing API cannot turn the
// queue into a storm. Fresh events are not rate limited.
func newFooQueue() *fooQueue {
	rateLimiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[cache.ObjectName]{Limiter: rate.NewLimiter(rate.Limit(50), 300)},
	)
	return &fooQueue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter,
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "foo"}),
		backlog: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[cache.ObjectName]{Name: "foo_backlog"}),
		taken:   make(chan struct{}, 1),
	}
}

// AddToBacklog queues a key behind every fresh one.
func (q *fooQueue) AddToBacklog(key cache.ObjectName) {
	q.backlog.Add(key)
}

// Get takes the next key for a worker, as the rate-limited queue's Get does.
func (q *fooQueue) Get() (cache.ObjectName, bool) {
	key, shutdown := q.TypedRateLimitingInterface.Get()
	select {
	case q.taken <- struct{}{}:
	default: // the feeder has a signal pending already
	}
	return key, shutdown
}

// ShutDown stops both queues.
func (q *fooQueue) ShutDown() {
	q.backlog.ShutDown()
	q.TypedRateLimitingInterface.ShutDown()
}

// feedBacklog moves backlog keys to the workers' queue, keeping at least
// lowWater keys waiting there while the backlog lasts, until the queue shuts
// down.
func (q *fooQueue) feedBacklog(ctx context.Context, lowWater int, maxWait time.Duration) {
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	for {
		key, shutdown := q.backlog.Get()
		if shutdown {
			return
		}
		timer.Reset(maxWait)
	wait:
		for q.Len() >= lowWater {
			select {
			case <-q.taken:
			case <-timer.C:
				break wait // waited long enough: this key goes in anyway
			case <-ctx.Done():
				q.backlog.Done(key)
				return
			}
		}
		q.Add(key)
		q.backlog.Done(key)
	}
}

// enqueueFoo queues a Foo's key ahead of the backlog: a change a user waits
// for.
func (c *Controller) enqueueFoo(obj interface{}) {
	if key, ok := fooKey(obj); ok {
		c.workqueue.Add(key)
	}
}

// enqueueFooInBacklog queues a Foo's key behind the fresh ones: a sync no
// user waits for, from the initial list or a resync.
func (c *Controller) enqueueFooInBacklog(obj interface{}) {
	if key, ok := fooKey(obj); ok {
		c.workqueue.AddToBacklog(key)
	}
}

func fooKey(obj interface{}) (cache.ObjectName, bool) {
	key, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return key, false
	}
	return key, true
}

// runWorker processes work items until the queue shuts down or ctx ends;
// syncs themselves run on workCtx.
func (c *Controller) runWorker(ctx, workCtx context.Context) {
	for ctx.Err() == nil && c.processNextWorkItem(workCtx) {
	}
}

// processNextWorkItem takes one key off the queue and syncs it. A failed sync
// is queued again with backoff; a successful one resets the backoff.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	objRef, shutdown := c.workqueue.Get()
	if shutdown {
		return false
	}
	// Done lets the queue hand this key out again: to another worker if it
	// was queued meanwhile, or after its backoff if we requeue it below.
	defer c.workqueue.Done(objRef)
	if c.fence != nil {
		if err := c.fence.WaitOpen(ctx); err != nil {
			// Shutting down: the next leader syncs every Foo anyway.
			return false
		}
	}

	start := time.Now()
	err := c.syncHandler(ctx, objRef)
	result := syncResultOf(err)
	metrics.ObserveReconcile(result, time.Since(start))
	switch result {
	case syncSucceeded:
		c.workqueue.Forget(objRef)
	case syncDeferred:
		// The watch event bringing our last status write queues the Foo
		// again; a retry before that would find the same stale cache.
		klog.FromContext(ctx).V(4).Info("Waiting for the cache to show the last status write", "foo", objRef)
		c.workqueue.Forget(objRef)
	case syncConflict:
		// The cache was behind the API server: nothing failed. Retry once
		// the watch has caught up.
		klog.FromContext(ctx).V(4).Info("Stale cache, retrying", "foo", objRef, "err", err)
		c.workqueue.AddRateLimited(objRef)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "Error syncing; requeuing for later retry", "objectReference", objRef)
		c.workqueue.AddRateLimited(objRef)
	}
	return true
}

// The results of a sync, as samplecontroller_reconcile_total counts them.
const (
	syncSucceeded = "success"
	// syncDeferred: the cache had not shown the controller's own last
	// status write (errCacheBehindOwnWrite); its watch event queues the Foo.
	syncDeferred = "deferred"
	// syncConflict: a write was answered 409, the cache was behind.
	syncConflict = "conflict"
	syncFailed   = "error"
)

// syncResultOf classifies the error a sync returned.
func syncResultOf(err error) string {
	switch {
	case err == nil:
		return syncSucceeded
	case errors.Is(err, errCacheBehindOwnWrite):
		return syncDeferred
	case apierrors.IsConflict(err):
		return syncConflict
	default:
		return syncFailed
	}
}
