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

// Package freshfirst is the controller's workqueue: client-go's
// rate-limited queue, with a backlog for the keys queued in bulk (the
// informers' initial lists, resyncs, the echoes of status writes) fed to it
// only while it is nearly empty. A Foo a user just created or changed is
// synced next, not after the whole backlog.
//
// Why upstream's one queue is not enough: it is first in, first out, and a
// cold start or a failover queues every Foo at once, and a Foo created then
// waits out the whole cold start; with the backlog, it waits for a free
// worker only (measured in docs/performance.md, "Fresh changes during a
// cold start").
package freshfirst

import (
	"context"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// Queue holds the keys of Foos to sync. Only keys are queued, never
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
// BacklogMaxWait whatever the other queue holds: fresh changes cannot
// starve the backlog.
//
// A key in both queues is synced twice; the second sync finds nothing to
// do and makes no API call.
type Queue struct {
	workqueue.TypedRateLimitingInterface[cache.ObjectName]

	backlog workqueue.TypedInterface[cache.ObjectName]
	// taken is signalled each time a worker takes a key: there may be room
	// for backlog keys now.
	taken chan struct{}
}

// Tuning of the backlog feeder.
const (
	// BacklogLowWater: backlog keys are moved while fewer than this many
	// keys wait for a worker. One is enough to keep every worker busy: the
	// feeder tops the queue up each time a worker takes a key, within
	// microseconds, while a sync takes milliseconds. More would only put
	// backlog keys ahead of the next fresh one (docs/performance.md has the
	// measurement).
	BacklogLowWater = 1
	// BacklogMaxWait: the longest a backlog key waits behind fresh ones.
	BacklogMaxWait = time.Second
)

// The queues' names, which label their metrics (workqueue_depth{name=...}
// and the others client-go serves): the Foo's singular, as
// kube-controller-manager names each queue after the kind it syncs.
const (
	QueueName        = samplecontroller.FooSingular
	BacklogQueueName = QueueName + "_backlog"
)

// Retries: each Foo backs off from RetryBaseDelay, doubling per failure up
// to RetryMaxDelay (client-go's defaults); all retries together are held to
// RetryQPS per second, in bursts of up to RetryBurst, so that a failing API
// cannot turn the queue into a storm. Fresh events are not rate limited.
const (
	RetryBaseDelay = 5 * time.Millisecond
	RetryMaxDelay  = 1000 * time.Second
	RetryQPS       = 50
	RetryBurst     = 300
)

// New returns an empty queue, retries limited as the Retry constants say.
func New() *Queue {
	rateLimiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](RetryBaseDelay, RetryMaxDelay),
		&workqueue.TypedBucketRateLimiter[cache.ObjectName]{Limiter: rate.NewLimiter(rate.Limit(RetryQPS), RetryBurst)},
	)
	return &Queue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter,
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: QueueName}),
		backlog: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[cache.ObjectName]{Name: BacklogQueueName}),
		taken:   make(chan struct{}, 1),
	}
}

// AddToBacklog queues a key behind every fresh one.
func (q *Queue) AddToBacklog(key cache.ObjectName) {
	q.backlog.Add(key)
}

// Get takes the next key for a worker, as the rate-limited queue's Get
// does, except that once ShutDown is called it hands out no key, however
// many wait: a worker shutting down finishes the key in hand and takes no
// other.
func (q *Queue) Get() (cache.ObjectName, bool) {
	key, shutdown := q.TypedRateLimitingInterface.Get()
	if !shutdown && q.ShuttingDown() {
		q.Done(key)
		return cache.ObjectName{}, true
	}
	select {
	case q.taken <- struct{}{}:
	default: // the feeder has a signal pending already
	}
	return key, shutdown
}

// BacklogLen is the number of keys in the backlog; Len, the rate-limited
// queue's, does not count them. Today only the tests of the controller
// read it (which key went where): it stays exported beside Len, as a queue's
// lengths are its API, and an export_test.go cannot serve another
// package's tests.
func (q *Queue) BacklogLen() int {
	return q.backlog.Len()
}

// ShutDown stops both queues and drops the keys still in them: whoever
// syncs these Foos next (this replica once it leads again, or the replica
// that took the shard) lists them all anyway.
//
// Why drop them rather than leave them: client-go counts a queue's depth in
// one gauge per queue name (workqueue_depth{name=...}), added to on Add and
// taken from on Get, and a queue shut down is never read again. In a
// sharded replica each shard's controller has a queue of the same name,
// one after the other as the shard comes and goes: keys left in a queue
// that lost its shard would stay in the replica's depth for as long as it
// runs, a backlog no worker will ever take (its alert firing, a test
// waiting for the queue to drain, forever).
//
// A worker's key in hand, added again while it was synced, goes back in
// the queue when the worker calls Done: the controller calls ShutDown again
// once its workers have stopped.
func (q *Queue) ShutDown() {
	q.backlog.ShutDown()
	q.TypedRateLimitingInterface.ShutDown()
	// A queue shut down still hands out what it holds, then reports
	// shutdown; neither accepts a key any more (Add returns at once).
	for {
		key, shutdown := q.backlog.Get()
		if shutdown {
			break
		}
		q.backlog.Done(key)
	}
	for {
		key, shutdown := q.TypedRateLimitingInterface.Get()
		if shutdown {
			break
		}
		q.Done(key)
	}
}

// FeedBacklog moves backlog keys to the workers' queue, keeping
// BacklogLowWater keys waiting there while the backlog lasts, and one key
// every BacklogMaxWait whatever it holds, until the queue shuts down or ctx
// ends.
func (q *Queue) FeedBacklog(ctx context.Context) {
	q.feedBacklog(ctx, BacklogLowWater, BacklogMaxWait)
}

func (q *Queue) feedBacklog(ctx context.Context, lowWater int, maxWait time.Duration) {
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
