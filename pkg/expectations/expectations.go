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

// Package expectations is what the controller knows of each Foo that its Foo
// cache does not show yet, kept by the Foo's UID in Foos until the cache
// shows the Foo deleted. Upstream trusts its cache, but a cache lags the API
// server, by seconds after an outage, and a sync on a Foo as it was undoes
// what the API server already holds. Each part is one way the controller
// learns ahead of its cache. StatusWrites (ReplacedVersions): the version
// each of its own status writes replaced, so that a sync on it sends nothing
// and waits for the write's event, rather than being refused 409 and retried
// with backoff, thousands of times during a cold start. Deleted
// (DeletedFoos): the Foos a status write or a takeover found gone, whose
// Deployments a lagging cache made a new leader recreate 78 times in a second
// (the chaos test). Outdated (ReplacedVersions): the Foos a standby finds
// changed on the API server when it takes over (RememberChangedWhileStandby),
// as its caches count as synced from their first list: a new leader scaled a
// Deployment back to what its Foo had asked for before. PrunedStatus
// (PrunedStatuses): the last status an outdated CRD pruned, so that it is
// reported once and not written again on every sync.
package expectations

import (
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Foos is what the controller knows of each Foo beyond its cache, each part
// for the reason the package says. All of it is keyed by the Foo's UID and
// forgotten at once when the cache shows the Foo deleted (Forget): a part
// added here and not to Forget leaks an entry per deleted Foo. The versions
// replaced by a status write and those a takeover found outdated are kept
// apart, as they hold back different steps: an outdated Foo is not synced at
// all, and a Foo whose status write the cache has not shown gets its
// Deployment synced and no status written. Its zero value is ready to use.
type Foos struct {
	StatusWrites ReplacedVersions // by its status write, until the cache shows it
	Deleted      DeletedFoos      // the API server said it is gone
	Outdated     ReplacedVersions // changed while this replica stood by (RememberChangedWhileStandby)
	PrunedStatus PrunedStatuses   // the status an outdated CRD pruned
}

// Forget forgets everything known of the Foo uid.
func (f *Foos) Forget(uid types.UID) {
	f.StatusWrites.Forget(uid)
	f.Deleted.Forget(uid)
	f.Outdated.Forget(uid)
	f.PrunedStatus.Forget(uid)
}

// ReplacedVersions remember, per Foo, a resourceVersion its cache holds that
// the API server has replaced, until the cache shows another one (after a
// takeover's list, one of the listed generation or a later one): the
// expectations of kube-controller-manager's controllers, for one version.
// The controller learns of it before its cache does in two ways: its own
// status write (Wrote), and the list of the API server a new leader makes
// (ListedNewer, RememberChangedWhileStandby). A sync that finds the cache behind gives up
// at once (ErrCacheBehind) and is not retried with backoff; the watch event
// that brings a newer version queues the Foo ahead of the backlog, if it is
// due a sync (CacheCaughtUp).
//
// Why, after a status write: a Deployment event can queue a Foo before the
// watch delivers the controller's own status write of it. A sync then would
// compute status from the Foo as it was before that write, and the write it
// would make is refused with 409 Conflict. Waiting for the event rather than
// retrying with backoff matters at scale: during a cold start over thousands
// of Foos, thousands of syncs find their echo not yet delivered, and retries
// all together are rate limited.
//
// Why, at a takeover: a standby's cache can lag the API server by seconds,
// most after an outage, when the informers re-list and re-watch with
// backoff. Taking over with it, a replica would bring Deployments back to
// what their Foos asked for seconds ago, as the chaos test found under load
// (docs/failure-modes.md, Post-mortems).
//
// Its zero value is ready to use.
type ReplacedVersions struct {
	mu sync.Mutex
	// byUID holds the replaced version of each Foo the cache has not moved
	// past yet.
	byUID map[types.UID]replacedVersion
}

type replacedVersion struct {
	// resourceVersion is the version of the Foo the API server replaced.
	resourceVersion string
	// generation is the Foo's generation in the API server's list of a
	// takeover (0 after a status write): a version of an older generation
	// is behind too. The cache can move from the replaced version to one
	// between it and the listed one, such as the old leader's status write
	// made before its user's last change: moving on is not catching up.
	// Generations, unlike resourceVersions, may be compared.
	generation int64
	// due is set once the Foo is due a sync when the cache moves on: a sync
	// gave up on the replaced version, or the Foo changed while a standby's
	// cache lagged, a change its user may be waiting for. The echo of a
	// status write no sync waited for is not.
	due bool
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
// a Foo as it was before the API server's list of a takeover (ListedNewer).
var ErrCacheOutdated = fmt.Errorf("%w: it holds the Foo as it was before this replica took over", ErrCacheBehind)

// Wrote records a successful status write of cached, which the API server
// stored as stored.
func (r *ReplacedVersions) Wrote(cached, stored metav1.Object) {
	if stored.GetResourceVersion() == cached.GetResourceVersion() {
		return // nothing changed on the server: no watch event will come
	}
	r.remember(cached, 0, false)
}

// ListedNewer records that the API server holds a newer version of its Foo
// than cached: listed, as its list returned it. The cache is behind until it
// shows another version of at least listed's generation.
func (r *ReplacedVersions) ListedNewer(cached, listed metav1.Object) {
	r.remember(cached, listed.GetGeneration(), true)
}

func (r *ReplacedVersions) remember(cached metav1.Object, generation int64, due bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byUID == nil {
		r.byUID = map[types.UID]replacedVersion{}
	}
	r.byUID[cached.GetUID()] = replacedVersion{
		resourceVersion: cached.GetResourceVersion(), generation: generation, due: due,
	}
}

// caughtUp reports whether cached is past the replaced version: another
// version, of the listed generation or a later one.
func (v replacedVersion) caughtUp(cached metav1.Object) bool {
	return v.resourceVersion != cached.GetResourceVersion() && cached.GetGeneration() >= v.generation
}

// CacheIsBehind reports whether cached is the version the API server
// replaced, or one older than its list (ListedNewer); if so, the Foo is due a sync once the cache moves on, as the
// caller's sync gives up. Once the cache has moved on, the version is
// dropped.
func (r *ReplacedVersions) CacheIsBehind(cached metav1.Object) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	replaced, ok := r.byUID[cached.GetUID()]
	if !ok {
		return false
	}
	if replaced.caughtUp(cached) {
		delete(r.byUID, cached.GetUID())
		return false
	}
	replaced.due = true
	r.byUID[cached.GetUID()] = replaced
	return true
}

// CacheCaughtUp is told of every Foo the cache receives. Once the cache has
// moved past the replaced version, it drops it and reports whether the Foo
// is due a sync.
func (r *ReplacedVersions) CacheCaughtUp(cached metav1.Object) (due bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	replaced, ok := r.byUID[cached.GetUID()]
	if !ok || !replaced.caughtUp(cached) {
		return false
	}
	delete(r.byUID, cached.GetUID())
	return replaced.due
}

// Forget drops a Foo the cache has shown deleted.
func (r *ReplacedVersions) Forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byUID, uid)
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
