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

// Package expectations is what the controller knows that its Foo cache does
// not show yet: the status write the cache has not delivered (StatusWrites),
// the Foos a write or a takeover found deleted while the cache still holds
// them (DeletedFoos), and the Foos a takeover found changed on the API
// server that the cache holds as they were (OutdatedFoos).
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
	"fmt"
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

// ErrCacheBehind is returned, wrapped, by a sync that found the cache
// holding a Foo the API server has replaced. It is counted apart, as
// "deferred", and not retried: the watch event that brings the newer Foo
// queues it again.
var ErrCacheBehind = errors.New("the Foo cache is behind the API server")

// ErrCacheBehindOwnWrite is returned by a sync that found the cache still
// holding the Foo its last status write replaced.
var ErrCacheBehindOwnWrite = fmt.Errorf("%w: it has not shown the controller's last status write yet", ErrCacheBehind)

// ErrCacheOutdated is returned by a sync that found the cache still holding
// a Foo as it was before the API server's list of a takeover (OutdatedFoos).
var ErrCacheOutdated = fmt.Errorf("%w: it holds the Foo as it was before this replica took over", ErrCacheBehind)

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

// OutdatedFoos remember, per Foo, the resourceVersion a replica's cache held
// when it took over that the API server had already replaced, until the
// cache shows a newer one.
//
// Why: a standby's cache can lag the API server by seconds, most after an
// outage, when the informers re-list and re-watch with backoff. Taking over
// with it, a replica would bring Deployments back to what their Foos asked
// for seconds ago. Found by the chaos test under load: a new leader set a
// Deployment to 1 replica 6 s after it took over, though its Foo had asked
// for 3 for the 28 s before; the watch event that corrected it came later.
//
// Its zero value is ready to use.
type OutdatedFoos struct {
	mu sync.Mutex
	// byUID holds the outdated resourceVersion of each Foo.
	byUID map[types.UID]string
}

// Add remembers that cached is older than the Foo the API server holds.
func (o *OutdatedFoos) Add(cached *samplev1alpha1.Foo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byUID == nil {
		o.byUID = map[types.UID]string{}
	}
	o.byUID[cached.UID] = cached.ResourceVersion
}

// CacheIsBehind reports whether cached is the outdated version of its Foo.
// Once the cache has moved on, the outdated version is dropped.
func (o *OutdatedFoos) CacheIsBehind(cached *samplev1alpha1.Foo) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	version, ok := o.byUID[cached.UID]
	if ok && version != cached.ResourceVersion {
		delete(o.byUID, cached.UID)
	}
	return ok && version == cached.ResourceVersion
}

// CacheCaughtUp is told of every Foo the cache receives. Once the cache has
// moved past the outdated version, it drops it and reports true: the Foo
// waited, and is due a sync.
func (o *OutdatedFoos) CacheCaughtUp(cached *samplev1alpha1.Foo) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	version, ok := o.byUID[cached.UID]
	if !ok || version == cached.ResourceVersion {
		return false
	}
	delete(o.byUID, cached.UID)
	return true
}

// Forget drops a Foo the cache has shown deleted.
func (o *OutdatedFoos) Forget(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.byUID, uid)
}
