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
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// newFooQueue returns the queue of Foo keys to sync. Only keys are queued,
// never objects: a worker reads the latest state from the cache when it gets
// to the key. The queue never holds a key twice, so many events for one Foo
// cost one sync, and never hands one key to two workers at once.
//
// Retries back off per Foo from 5 ms to 1000 s; all retries together are
// held to 50 per second (bursts of 300) so a failing API cannot turn the
// queue into a storm. Fresh events are not rate limited.
func newFooQueue() workqueue.TypedRateLimitingInterface[cache.ObjectName] {
	rateLimiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[cache.ObjectName]{Limiter: rate.NewLimiter(rate.Limit(50), 300)},
	)
	return workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter,
		workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "foo"})
}

// enqueueFoo queues a Foo's key.
func (c *Controller) enqueueFoo(obj interface{}) {
	objectRef, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.workqueue.Add(objectRef)
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

	start := time.Now()
	err := c.syncHandler(ctx, objRef)
	observeReconcile(time.Since(start), err)
	switch {
	case err == nil:
		c.workqueue.Forget(objRef)
	case apierrors.IsConflict(err):
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
