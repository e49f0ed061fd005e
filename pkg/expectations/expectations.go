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

// Package expectations is what the controller remembers of its own writes
// until its cache shows them: the status write the Foo cache has not
// delivered yet (StatusWrites), and the Foos a write found deleted while the
// cache still holds them (DeletedFoos).
//
// Why upstream's way is not enough: upstream trusts its cache. At scale the
// cache lags the controller's own writes, and a sync on a Foo whose status
// write has not come back is refused 409 and retried with backoff, thousands
// of times during a cold start; and a cache that still holds deleted Foos
// made a new leader recreate a deleted Foo's Deployment 78 times in a
// second, each undone by the garbage collector (the chaos test).
package expectations

import (
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

// StatusWrites remember, per Foo, the resourceVersion the
// controller's last status write replaced, until the cache shows a newer Foo:
// the expectations of kube-controller-manager's controllers, for one write.
//
// Why: a Deployment event can queue a Foo before the watch delivers the
// controller's own status write of it. A sync then would compute status from
// the Foo as it was before that write, and the write it would make is
// refused with 409 Conflict. Instead the sync gives up at once and is noted
// as waiting (ErrCacheBehindOwnWrite); the watch event that delivers the
// write queues the Foo again, ahead of the backlog. Waiting for the event
// rather than retrying with backoff matters at scale: during a cold start
// over thousands of Foos, thousands of syncs find their echo not yet
// delivered, and retries all together are rate limited.
//
// Its zero value is ready to use.
type StatusWrites struct {
	mu sync.Mutex
	// byUID holds the expectation of each Foo with a status write the
	// cache has not shown yet.
	byUID map[types.UID]statusWriteExpectation
}

type statusWriteExpectation struct {
	// replacedVersion is the resourceVersion of the Foo the write replaced.
	replacedVersion string
	// syncWaiting is set once a sync gave up on the Foo until the write
	// shows in the cache.
	syncWaiting bool
}

// ErrCacheBehindOwnWrite is returned by a sync that found the cache still
// holding the Foo its last status write replaced. It is counted apart, as
// "deferred", and not retried: the watch event bringing that write queues
// the Foo again.
var ErrCacheBehindOwnWrite = errors.New("the cache has not seen the controller's last status write yet")

// Wrote records a successful status write of cached, which the API server
// stored as stored.
func (e *StatusWrites) Wrote(cached, stored *samplev1alpha1.Foo) {
	if stored.ResourceVersion == cached.ResourceVersion {
		return // nothing changed on the server: no watch event will come
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byUID == nil {
		e.byUID = map[types.UID]statusWriteExpectation{}
	}
	e.byUID[cached.UID] = statusWriteExpectation{replacedVersion: cached.ResourceVersion}
}

// CacheIsBehind reports whether cached is the version the last status write
// replaced; if so, the caller's sync is noted as waiting for the write to
// show. Once the cache has moved on, the expectation is dropped.
func (e *StatusWrites) CacheIsBehind(cached *samplev1alpha1.Foo) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.byUID[cached.UID]
	if !ok {
		return false
	}
	if exp.replacedVersion != cached.ResourceVersion {
		delete(e.byUID, cached.UID)
		return false
	}
	exp.syncWaiting = true
	e.byUID[cached.UID] = exp
	return true
}

// CacheCaughtUp is told of every Foo the cache receives. Once the cache has
// moved past the version the last write replaced, it drops the expectation
// and reports whether a sync was waiting for that.
func (e *StatusWrites) CacheCaughtUp(cached *samplev1alpha1.Foo) (syncWaiting bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	exp, ok := e.byUID[cached.UID]
	if !ok || exp.replacedVersion == cached.ResourceVersion {
		return false
	}
	delete(e.byUID, cached.UID)
	return exp.syncWaiting
}

// Forget drops the expectation of a deleted Foo.
func (e *StatusWrites) Forget(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byUID, uid)
}

// DeletedFoos remembers the Foos the API server said are gone (a status
// write answered 404) while the cache still holds them, until the cache shows
// them deleted.
//
// Why: a cache can lag the API server by seconds, most after an outage, when
// the informers re-list and re-watch with backoff; a standby that takes over
// then acts on what it last saw. Found by the chaos test: a new leader whose
// cache still held two Foos the user had deleted created their Deployments;
// the status write answered 404; the garbage collector deleted the
// Deployments (their owner is gone), whose delete events queued the Foos
// again, and so on: 78 creates in a second until the watch delivered the
// deletions. Remembered, a deleted Foo costs at most one such create, which
// the garbage collector undoes.
//
// Its zero value is ready to use.
type DeletedFoos struct {
	mu   sync.Mutex
	uids map[types.UID]struct{}
}

// Add remembers that the Foo with uid no longer exists.
func (d *DeletedFoos) Add(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.uids == nil {
		d.uids = map[types.UID]struct{}{}
	}
	d.uids[uid] = struct{}{}
}

// Has reports whether the Foo with uid is known to be deleted.
func (d *DeletedFoos) Has(uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.uids[uid]
	return ok
}

// Forget drops a Foo the cache has shown deleted.
func (d *DeletedFoos) Forget(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.uids, uid)
}
