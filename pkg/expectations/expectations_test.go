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
