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

package expectations

import (
	"testing"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
)

// After a status write, the cache's copy it replaced is behind; the first
// newer copy the cache receives drops the expectation and says whether a sync
// gave up waiting for it.
func TestStatusWriteIsExpectedUntilTheCacheShowsIt(t *testing.T) {
	var e StatusWrites
	cached := testfixtures.NewFoo("test", 1)
	cached.ResourceVersion = "1"
	stored := cached.DeepCopy()
	stored.ResourceVersion = "2"

	e.Wrote(cached, stored)
	if e.CacheCaughtUp(cached) {
		t.Error("the cache delivering the replaced version counts as caught up")
	}
	if !e.CacheIsBehind(cached) {
		t.Fatal("the replaced version is not behind the write")
	}
	if !e.CacheCaughtUp(stored) {
		t.Error("the written version did not report the sync waiting for it")
	}
	if e.CacheIsBehind(cached) || e.CacheCaughtUp(stored) {
		t.Error("the expectation outlived the cache catching up")
	}
}

// A write the API server stored unchanged brings no watch event: nothing to
// wait for.
func TestUnchangedWriteIsNotExpected(t *testing.T) {
	var e StatusWrites
	cached := testfixtures.NewFoo("test", 1)
	cached.ResourceVersion = "1"
	e.Wrote(cached, cached.DeepCopy())
	if e.CacheIsBehind(cached) {
		t.Error("a write that changed nothing is waited for")
	}
}

// A Foo found deleted is remembered until the cache shows it deleted.
func TestDeletedFooIsRememberedUntilForgotten(t *testing.T) {
	var d DeletedFoos
	if d.Has("uid-a") {
		t.Fatal("an empty memory holds a Foo")
	}
	d.Add("uid-a")
	if !d.Has("uid-a") || d.Has("uid-b") {
		t.Errorf("after Add(uid-a): Has(uid-a)=%v Has(uid-b)=%v, want true, false", d.Has("uid-a"), d.Has("uid-b"))
	}
	d.Forget("uid-a")
	if d.Has("uid-a") {
		t.Error("a forgotten Foo is still remembered")
	}
}

// A Foo a takeover found outdated in the cache stays so until the cache
// receives another version of it; that version reports it due a sync, once.
func TestOutdatedFooIsBehindUntilTheCacheMovesOn(t *testing.T) {
	var o OutdatedFoos
	cached := testfixtures.NewFoo("test", 1)
	cached.ResourceVersion = "1"
	current := cached.DeepCopy()
	current.ResourceVersion = "2"

	if o.CacheIsBehind(cached) {
		t.Fatal("an empty memory holds a Foo")
	}
	o.Add(cached)
	if o.CacheCaughtUp(cached) {
		t.Error("the cache delivering the outdated version again counts as caught up")
	}
	if !o.CacheIsBehind(cached) {
		t.Fatal("the outdated version is not behind")
	}
	if !o.CacheCaughtUp(current) {
		t.Error("the current version did not report the Foo due a sync")
	}
	if o.CacheIsBehind(cached) || o.CacheCaughtUp(current) {
		t.Error("the outdated version outlived the cache catching up")
	}
}

// A sync that finds the cache already moved on drops the outdated version;
// a Foo the cache shows deleted is forgotten.
func TestOutdatedFooIsDroppedOnceSeenNewerOrForgotten(t *testing.T) {
	var o OutdatedFoos
	cached := testfixtures.NewFoo("test", 1)
	cached.ResourceVersion = "1"
	current := cached.DeepCopy()
	current.ResourceVersion = "2"

	o.Add(cached)
	if o.CacheIsBehind(current) {
		t.Error("the current version counts as behind")
	}
	if o.CacheIsBehind(cached) {
		t.Error("the outdated version outlived a sync that saw the current one")
	}
	o.Add(cached)
	o.Forget(cached.UID)
	if o.CacheIsBehind(cached) {
		t.Error("a forgotten Foo is still remembered")
	}
}
