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
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/expectations"
)

// A Deployment event can reach the controller before the watch delivers its
// own last status write. A sync then works on the Foo as it was before that
// write: it sends nothing, and it is not retried with backoff. The watch
// event that delivers the write queues the Foo again, ahead of the backlog,
// and that sync writes the new status.
func TestSyncBehindOurOwnStatusWriteWaitsForItsEcho(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	foo.ResourceVersion = "1"
	d := testfixtures.OwnedDeployment(t, foo)
	d.Status.AvailableReplicas = 0 // rolling out
	f.foos = append(f.foos, foo)
	f.deployments = append(f.deployments, d)
	f.answerStatusWritesAtVersion2(foo, nil)
	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.expectFooWrites("patch foos/status test application/json-patch+json")

	// The Deployment becomes available before the Foo's watch event.
	_, ctx := ktesting.NewTestContext(t)
	q := f.controller.workqueue
	key := cache.MetaObjectToName(foo)
	available := d.DeepCopy()
	available.Status.AvailableReplicas = 1
	available.ResourceVersion = "5"
	if err := deploymentCache(f.controller).Update(desired.CacheDeployment(available)); err != nil {
		t.Fatal(err)
	}
	f.client.ClearActions()
	if err := f.controller.syncHandler(ctx, key); !errors.Is(err, expectations.ErrCacheBehindOwnWrite) || apierrors.IsConflict(err) {
		t.Fatalf("sync on a cache behind our write: error %v, want expectations.ErrCacheBehindOwnWrite (and no made-up conflict)", err)
	}
	before := reconcileCount(t, "deferred")
	f.controller.onOwnedUpdate(desired.CacheDeployment(d), desired.CacheDeployment(available))
	f.controller.processNextWorkItem(ctx)
	f.expectFooWrites()
	if n := q.NumRequeues(key); n != 0 {
		t.Errorf("retries with backoff: %d, want 0", n)
	}
	if got := reconcileCount(t, "deferred") - before; got != 1 {
		t.Errorf("syncs counted as deferred: %v, want 1", got)
	}
	if fresh, backlog := q.Len(), q.BacklogLen(); fresh != 0 || backlog != 0 {
		t.Fatalf("queued while the cache is behind: %d fresh, %d backlog; want none", fresh, backlog)
	}

	// The watch catches up: the Foo is queued ahead of the backlog, and its
	// sync writes the new status.
	caughtUp := foo.DeepCopy()
	caughtUp.ResourceVersion = "2"
	if err := f.controller.foosIndexer.Update(caughtUp); err != nil {
		t.Fatal(err)
	}
	f.controller.onFooUpdate(foo, caughtUp)
	if fresh, backlog := q.Len(), q.BacklogLen(); fresh != 1 || backlog != 0 {
		t.Fatalf("queued by the echo: %d fresh, %d backlog; want 1 fresh", fresh, backlog)
	}
	f.controller.processNextWorkItem(ctx)
	f.expectFooWrites("patch foos/status test application/json-patch+json")
}

// The echo of a status write that no sync waited for is a sync no user waits
// for: it goes to the backlog.
func TestStatusEchoNobodyWaitsForGoesToTheBacklog(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	foo.ResourceVersion = "1"
	f.foos = append(f.foos, foo)
	f.deployments = append(f.deployments, testfixtures.OwnedDeployment(t, foo))
	f.build()
	stored := foo.DeepCopy()
	stored.ResourceVersion = "2"
	f.controller.expectations.StatusWrites.Wrote(foo, stored)

	f.controller.onFooUpdate(foo, stored)
	q := f.controller.workqueue
	if fresh, backlog := q.Len(), q.BacklogLen(); fresh != 0 || backlog != 1 {
		t.Fatalf("queued by the echo: %d fresh, %d backlog; want 1 in the backlog", fresh, backlog)
	}
}

// A replica that takes over with a cache behind the API server
// (RememberChangedWhileStandby) does not act on the Foos its cache holds in
// an outdated version: the user scaled this one from 1 to 3 while the cache
// lagged, and the old leader scaled its Deployment. A sync on the outdated
// Foo would scale the Deployment back to 1. It writes nothing and is not
// retried with backoff; the watch event that brings the current Foo queues it
// again.
func TestSyncOnFooOutdatedAtTakeoverWritesNothingUntilTheCacheShowsTheCurrentFoo(t *testing.T) {
	f := newFixture(t)
	cached := testfixtures.NewFoo("test", 1)
	cached.ResourceVersion = "1"
	current := testfixtures.NewFoo("test", 3)
	current.ResourceVersion = "2"
	current.Generation = 2
	f.foos = append(f.foos, cached)
	f.deployments = append(f.deployments, testfixtures.OwnedDeployment(t, current))
	f.build()
	f.controller.expectations.Outdated.ListedNewer(cached, current)

	_, ctx := ktesting.NewTestContext(t)
	q := f.controller.workqueue
	key := cache.MetaObjectToName(cached)
	if err := f.sync(cached); !errors.Is(err, expectations.ErrCacheOutdated) {
		t.Fatalf("sync on an outdated Foo: error %v, want expectations.ErrCacheOutdated", err)
	}
	f.expectKubeWrites()
	f.expectFooWrites()
	before := reconcileCount(t, "deferred")
	q.Add(key)
	f.controller.processNextWorkItem(ctx)
	f.expectKubeWrites()
	f.expectFooWrites()
	if n := q.NumRequeues(key); n != 0 {
		t.Errorf("retries with backoff: %d, want 0", n)
	}
	if got := reconcileCount(t, "deferred") - before; got != 1 {
		t.Errorf("syncs counted as deferred: %v, want 1", got)
	}
	if fresh, backlog := q.Len(), q.BacklogLen(); fresh != 0 || backlog != 0 {
		t.Fatalf("queued while the cache is outdated: %d fresh, %d backlog; want none", fresh, backlog)
	}

	// The watch catches up: the Foo is queued, and its sync leaves the
	// Deployment at the 3 replicas the Foo asks for.
	f.addToCache(f.controller.foosIndexer, current.DeepCopy())
	f.controller.onFooUpdate(cached, current)
	if fresh, backlog := q.Len(), q.BacklogLen(); fresh != 1 || backlog != 0 {
		t.Fatalf("queued by the current Foo: %d fresh, %d backlog; want 1 fresh", fresh, backlog)
	}
	f.client.ClearActions()
	f.kubeclient.ClearActions()
	f.controller.processNextWorkItem(ctx)
	f.expectKubeWrites()
	f.expectFooWrites("patch foos/status test application/json-patch+json")
}

// A Foo outdated at takeover whose newer version changed only its status (the
// old leader's last status write) is queued ahead of the backlog once the
// cache shows it: its sync gave up on the outdated version, and no new
// generation would queue it.
func TestFooOutdatedAtTakeoverIsQueuedFreshWhenTheCacheCatchesUp(t *testing.T) {
	f := newFixture(t)
	cached := testfixtures.NewFoo("test", 1)
	cached.ResourceVersion = "1"
	f.foos = append(f.foos, cached)
	f.build()
	f.controller.expectations.Outdated.ListedNewer(cached, cached)
	statusWritten := cached.DeepCopy()
	statusWritten.ResourceVersion = "2"
	statusWritten.Status.AvailableReplicas = 1

	f.controller.onFooUpdate(cached, statusWritten)
	q := f.controller.workqueue
	if fresh, backlog := q.Len(), q.BacklogLen(); fresh != 1 || backlog != 0 {
		t.Fatalf("queued by the current Foo: %d fresh, %d backlog; want 1 fresh", fresh, backlog)
	}
}

// A Foo the user deleted while the cache still holds it (a cache lagging
// after an API server outage, in a replica that then takes over) gets at
// most one Deployment create, which the garbage collector undoes; its status
// write answers 404, and no sync acts on it again until the cache shows the
// deletion. Without that, each garbage collection of that Deployment queued
// the Foo again for another create.
func TestDeletedFooStillCachedIsNotSyncedAgain(t *testing.T) {
	f := newFixture(t)
	_, ctx := ktesting.NewTestContext(t)
	f.newController(ctx)
	foo := testfixtures.NewFoo("gone", 1) // in the cache only: deleted on the API server
	f.addToCache(f.controller.foosIndexer, foo.DeepCopy())

	if err := f.sync(foo); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	f.expectKubeWrites("create deployments gone-deployment")
	f.expectFooWrites("patch foos/status gone application/json-patch+json")

	// The garbage collector deletes the Deployment; the cache still holds
	// the Foo.
	if err := f.kubeclient.AppsV1().Deployments("default").Delete(ctx, "gone-deployment", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(foo); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	f.expectKubeWrites()
	f.expectFooWrites()

	// Once the cache shows the deletion, the memory is dropped.
	f.controller.onFooDelete(foo)
	if f.controller.expectations.Deleted.Has(foo.UID) {
		t.Error("the deleted Foo is still remembered after its delete event")
	}
}

// Every part of what the controller remembers of a Foo goes with the Foo's
// delete event, a tombstone's included: nothing is kept per deleted Foo.
func TestDeletedFooIsForgottenWhole(t *testing.T) {
	for _, deleteEvent := range []struct {
		name string
		obj  func(foo *samplev1beta1.Foo) interface{}
	}{
		{"the Foo", func(foo *samplev1beta1.Foo) interface{} { return foo }},
		{"a tombstone", func(foo *samplev1beta1.Foo) interface{} {
			return cache.DeletedFinalStateUnknown{Key: "default/test", Obj: foo}
		}},
	} {
		t.Run(deleteEvent.name, func(t *testing.T) {
			f := newFixture(t)
			f.build()
			c := f.controller
			foo := testfixtures.NewFoo("test", 1)
			foo.ResourceVersion = "1"
			stored := foo.DeepCopy()
			stored.ResourceVersion = "2"
			c.expectations.StatusWrites.Wrote(foo, stored)
			c.expectations.Deleted.Add(foo.UID)
			c.expectations.Outdated.ListedNewer(foo, stored)
			c.expectations.PrunedStatus.Remember(foo.UID, foo.Status)

			c.onFooDelete(deleteEvent.obj(foo))
			if c.expectations.StatusWrites.CacheIsBehind(foo) {
				t.Error("its status write is still expected")
			}
			if c.expectations.Deleted.Has(foo.UID) {
				t.Error("it is still remembered as deleted")
			}
			if c.expectations.Outdated.CacheIsBehind(foo) {
				t.Error("it is still remembered as outdated")
			}
			if c.expectations.PrunedStatus.SameAsPruned(foo.UID, foo.Status) {
				t.Error("its pruned status is still remembered")
			}
		})
	}
}
