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
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// A replaced version is behind until the cache receives another version of
// the Foo; that version reports the Foo due a sync, once, if a sync gave up
// on the replaced one or a takeover's list found it: the echo of a status
// write no sync waited for is not due.
func TestReplacedVersionIsBehindUntilTheCacheMovesOn(t *testing.T) {
	for _, tc := range []struct {
		name           string
		remember       func(r *ReplacedVersions, cached, newer *samplev1beta1.Foo)
		dueWithoutSync bool
	}{
		{"by a status write", func(r *ReplacedVersions, cached, newer *samplev1beta1.Foo) { r.Wrote(cached, newer) }, false},
		{"by a takeover's list", func(r *ReplacedVersions, cached, newer *samplev1beta1.Foo) { r.ListedNewer(cached, newer) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r ReplacedVersions
			cached, newer := twoVersions()

			tc.remember(&r, cached, newer)
			if r.CacheCaughtUp(cached) {
				t.Error("the cache delivering the replaced version again counts as caught up")
			}
			if got := r.CacheCaughtUp(newer); got != tc.dueWithoutSync {
				t.Errorf("the newer version, no sync having given up: due %v, want %v", got, tc.dueWithoutSync)
			}
			if r.CacheIsBehind(cached) {
				t.Error("the replaced version outlived the cache catching up")
			}

			tc.remember(&r, cached, newer)
			if !r.CacheIsBehind(cached) {
				t.Fatal("the replaced version is not behind")
			}
			if !r.CacheCaughtUp(newer) {
				t.Error("the newer version, a sync having given up: not due")
			}
			if r.CacheIsBehind(cached) || r.CacheCaughtUp(newer) {
				t.Error("the replaced version outlived the cache catching up")
			}
		})
	}
}

// A write the API server stored unchanged brings no watch event: nothing to
// wait for.
func TestUnchangedWriteIsNotExpected(t *testing.T) {
	var r ReplacedVersions
	cached, _ := twoVersions()
	r.Wrote(cached, cached.DeepCopy())
	if r.CacheIsBehind(cached) {
		t.Error("a write that changed nothing is waited for")
	}
}

// A sync that finds the cache already moved on drops the replaced version;
// a Foo the cache shows deleted is forgotten.
func TestReplacedVersionIsDroppedOnceSeenNewerOrForgotten(t *testing.T) {
	var r ReplacedVersions
	cached, newer := twoVersions()

	r.ListedNewer(cached, newer)
	if r.CacheIsBehind(newer) {
		t.Error("the newer version counts as behind")
	}
	if r.CacheIsBehind(cached) {
		t.Error("the replaced version outlived a sync that saw the newer one")
	}
	r.ListedNewer(cached, newer)
	r.Forget(cached.UID)
	if r.CacheIsBehind(cached) {
		t.Error("a forgotten Foo is still remembered")
	}
}

// The cache can move from the version a takeover's list replaced to one
// between it and the listed one (here the old leader's status write, made
// before its user scaled the Foo): that is not catching up, as its spec is
// as old. The listed generation, or a later one, is.
func TestListedNewerIsBehindUntilTheCacheShowsTheListedGeneration(t *testing.T) {
	var r ReplacedVersions
	cached := testfixtures.NewFoo("test", 1)
	cached.ResourceVersion, cached.Generation = "1", 1
	statusWritten := cached.DeepCopy()
	statusWritten.ResourceVersion = "2"
	listed := testfixtures.NewFoo("test", 3)
	listed.ResourceVersion, listed.Generation = "3", 2
	later := listed.DeepCopy()
	later.ResourceVersion, later.Generation = "4", 3

	r.ListedNewer(cached, listed)
	if r.CacheCaughtUp(statusWritten) {
		t.Error("a version between the replaced and the listed one counts as caught up")
	}
	if !r.CacheIsBehind(statusWritten) {
		t.Error("a version of the replaced generation is not behind")
	}
	if !r.CacheCaughtUp(listed) {
		t.Error("the listed version, a sync having given up: not due")
	}
	if r.CacheIsBehind(listed) || r.CacheIsBehind(statusWritten) {
		t.Error("the replaced version outlived the cache catching up")
	}

	// A relist can skip past the listed version: a later generation is
	// caught up too.
	r.ListedNewer(cached, listed)
	if r.CacheIsBehind(later) {
		t.Error("a version later than the listed one counts as behind")
	}
}

// twoVersions returns a Foo at resourceVersion 1 and the same Foo at 2.
func twoVersions() (cached, newer *samplev1beta1.Foo) {
	cached = testfixtures.NewFoo("test", 1)
	cached.ResourceVersion = "1"
	newer = cached.DeepCopy()
	newer.ResourceVersion = "2"
	return cached, newer
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
