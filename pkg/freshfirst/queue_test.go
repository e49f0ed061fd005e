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

package freshfirst

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // the provider the controller registers (pkg/metrics)
)

func key(name string) cache.ObjectName { return cache.ObjectName{Namespace: "default", Name: name} }

// startFeeder runs the queue's backlog feeder until the test ends.
func startFeeder(t *testing.T, q *Queue, lowWater int, maxWait time.Duration) {
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
func waitLen(t *testing.T, q *Queue, n int) {
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
func take(q *Queue) cache.ObjectName {
	k, _ := q.Get()
	q.Done(k)
	return k
}

// A cold start queues hundreds of Foos at once; a Foo a user creates then is
// synced after at most the few backlog keys already handed to the workers'
// queue, not after the whole backlog.
func TestFreshKeyGoesAheadOfTheBacklog(t *testing.T) {
	q := New()
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
	q := New()
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
	q := New()
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
	q := New()
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

// Once shut down, the queue hands out no key, however many wait: a worker
// shutting down takes no other Foo, and its key in hand is still Done.
func TestShutDownHandsOutNoMoreKeys(t *testing.T) {
	q := New()
	q.Add(key("a"))
	q.Add(key("b"))
	inHand, _ := q.Get()
	q.ShutDown()
	if k, shutdown := q.Get(); !shutdown {
		t.Fatalf("took %s after ShutDown, want none", k)
	}
	q.Done(inHand)
	if k, shutdown := q.Get(); !shutdown {
		t.Fatalf("took %s after ShutDown and Done, want none", k)
	}
}

// A queue shut down with keys in it takes them out of workqueue_depth,
// which every queue of its name shares: a sharded replica's next
// controller of a shard it lost and took again (a queue of the same name)
// reports its own keys alone, not those of the queue before it.
func TestShutDownTakesItsKeysOutOfTheDepthItSharesWithQueuesOfItsName(t *testing.T) {
	before := map[string]float64{QueueName: queueDepth(t, QueueName), BacklogQueueName: queueDepth(t, BacklogQueueName)}
	expectDepths := func(when string, fresh, backlog float64) {
		t.Helper()
		for name, want := range map[string]float64{QueueName: fresh, BacklogQueueName: backlog} {
			if got := queueDepth(t, name) - before[name]; got != want {
				t.Errorf("%s: workqueue_depth{name=%q} up by %v, want %v", when, name, got, want)
			}
		}
	}
	lost := New()
	lost.Add(key("a"))
	lost.Add(key("b"))
	lost.AddToBacklog(key("c"))
	inHand, _ := lost.Get() // a
	lost.Add(inHand)        // changed again while a worker syncs it
	next := New()
	defer next.ShutDown()
	next.Add(key("d"))
	expectDepths("before ShutDown", 3, 1) // a again, b; d. c.

	lost.ShutDown()
	expectDepths("after ShutDown", 2, 0) // a again, counted until the worker's Done puts it back; d
	lost.Done(inHand)
	expectDepths("after the worker's Done", 2, 0)
	lost.ShutDown() // as the controller does once its workers stopped
	expectDepths("after the second ShutDown", 1, 0)
	if lost.Len() != 0 || lost.BacklogLen() != 0 {
		t.Errorf("the queue shut down holds %d keys and %d in its backlog, want none", lost.Len(), lost.BacklogLen())
	}
}

// queueDepth reads workqueue_depth{name=name} as the controller serves it
// (k8s.io/component-base's workqueue metrics, registered as the controller
// registers them).
func queueDepth(t *testing.T, name string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != "workqueue_depth" {
			continue
		}
		for _, m := range family.GetMetric() {
			for _, label := range m.GetLabel() {
				if label.GetName() == "name" && label.GetValue() == name {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0 // no queue of that name counted yet
}
