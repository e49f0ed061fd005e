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

package replicas

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/metrics"
)

// Replica takes part in sharding: it renews its member Lease, and holds the
// shard Leases Assign gives it, running a Controller for each, at each retry
// period. It needs no coordinator: every replica reads the same Leases. It
// renews the shard Leases it holds apart from reading them (Run): what the
// API server is slow to list, or refuses to, takes no shard from it.
//
// A shard changes hands in two ways. Released: its holder, no longer
// assigned it, stops its Controller (the workers finish the Foo in hand),
// closes the fence, and then clears the Lease, which the new holder takes at
// its next retry. Lost: its holder stopped renewing (killed, frozen, cut off
// from the API server), and the new holder takes the Lease once it has seen
// it unchanged for the lease duration, by its own clock, as client-go's
// elector does. Either way the old holder's fence is closed before the new
// holder can write, for the same reason as the leader's (fence.go), and the
// new holder lists the shard afresh before its first write: a Foo changed
// during the handover is in that list.
type Replica[C Controller] struct {
	count         int
	workers       int
	cfg           Config
	leases        coordinationclient.LeaseInterface
	newController func(context.Context, Scope) (C, error)
	syncs         *Syncs // the replica's -workers syncs at once, which the shards it holds share
	now           func() time.Time
	// detect asks who filters the shard (DetectMode), at each shard taken;
	// nil, not asked.
	detect func(context.Context, Shard) (Mode, error)
	// weigh counts the Foos of each namespace, for boundaries split by
	// weight (rebalance); nil, the ranges are equal.
	weigh Weigh

	// observed is when this replica saw each Lease change, by name, of the
	// Leases its last List returned: the round's alone.
	observed map[string]observation
	// firstSeen is when this replica first saw each of those Leases, and
	// restarted the member Leases of a replica that restarted in its pod
	// (liveMembers).
	firstSeen map[string]time.Time
	restarted map[string]bool
	// hosts is the identity of the last member this replica saw of each
	// host, and when.
	hosts map[string]hostMember

	mu        sync.Mutex
	mode      Mode // who filters the shards, as last asked (detect)
	held      map[int]*heldShard[C]
	releasing map[int]bool // shards being given up: not taken again until cleared
	// renewalsFinished and roundFinished are when Run's loops last finished
	// a pass (Check); zero while Run does not loop.
	renewalsFinished, roundFinished time.Time
	// weighing: a weighing in flight (rebalance); lastWeighed, when the
	// last began.
	weighing    bool
	lastWeighed time.Time
	done        sync.WaitGroup
}

// Weigh counts the Foos of each namespace that holds any.
type Weigh func(context.Context) (map[string]int, error)

// observation is a Lease's last resourceVersion, and when this replica saw it.
type observation struct {
	resourceVersion string
	at              time.Time
	// refused: the API server refused to prune this version (pruneLeases),
	// an admission policy or RBAC that does not admit it. Not tried again
	// until the Lease changes: a refusal every round would load the API
	// server and keep rest_client_requests_total{code="403"} rising.
	refused bool
}

// heldShard is a shard whose Lease this replica holds.
type heldShard[C Controller] struct {
	shard      Shard
	fence      *Fence
	controller C
	stop       context.CancelFunc
	stopped    chan struct{} // closed once the Controller returned

	// mu is held through a renewal: a release or a loss waits for the one
	// in flight, so that none reopens the fence after them, nor leaves the
	// release an outdated resourceVersion.
	mu      sync.Mutex
	lease   *coordinationv1.Lease // as last written
	renewed time.Time             // when the last successful renewal was sent
	gone    bool                  // released or lost: renewed no more
}

// NewReplica returns the sharding of count shards for the replica of cfg
// (its identity, the Leases' namespace, name and timing), whose Leases
// leases reads and writes: a client of their own, as leader election has.
// For each shard it holds, it builds a Controller with newController and
// runs it with workers workers; the shards share the replica's workers syncs
// at once (Syncs).
func NewReplica[C Controller](count, workers int, cfg Config, leases coordinationclient.LeaseInterface,
	newController func(context.Context, Scope) (C, error)) *Replica[C] {
	return &Replica[C]{
		count: count, workers: workers, cfg: cfg, leases: leases, newController: newController,
		syncs: NewSyncs(workers), now: time.Now,
		observed: map[string]observation{}, firstSeen: map[string]time.Time{}, restarted: map[string]bool{},
		hosts: map[string]hostMember{}, held: map[int]*heldShard[C]{}, releasing: map[int]bool{},
	}
}

// Run takes part in sharding until ctx ends. Then it deletes its member
// Lease, stops the Controllers of the shards it holds, waits for them to
// finish, and releases their Leases: the other replicas take its shards at
// their next retry instead of after the lease duration.
func (r *Replica[C]) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("shards", r.count, "identity", r.cfg.Identity)
	ctx = klog.NewContext(ctx, logger)
	metrics.Shards.Set(float64(r.count))
	logger.Info("Sharding the Foos among the replicas")
	r.mu.Lock()
	r.renewalsFinished, r.roundFinished = r.now(), r.now()
	r.mu.Unlock()
	// Two loops: the renewals of the shards held, from their Leases as this
	// replica last wrote them, a retry period after each pass, as
	// client-go's elector renews; and the round, which reads every Lease, at
	// the retry period with the elector's jitter (replicas started together
	// spread out). A List that is slow or refused, or a member Lease's
	// write, holds up no renewal: a loaded API server does not take every
	// shard from a replica at once, each dropped shard a relist that adds to
	// the load. The renewals take no jitter: the flags allow a renew
	// deadline of just over JitterFactor retry periods, which a jittered
	// wait (up to 1 + JitterFactor) would outlast, dropping every shard.
	var renewals sync.WaitGroup
	renewals.Go(func() { wait.UntilWithContext(ctx, r.renewHeld, r.cfg.RetryPeriod) })
	wait.JitterUntilWithContext(ctx, r.round, r.cfg.RetryPeriod, leaderelection.JitterFactor, true)
	renewals.Wait()
	r.mu.Lock()
	r.renewalsFinished, r.roundFinished = time.Time{}, time.Time{} // leaving: no pass is due
	r.mu.Unlock()

	// The leave is announced before the releases: with the member Lease
	// gone, the other replicas assign this one's shards among themselves at
	// their next round, while its workers finish, and each new holder takes
	// its shard the moment it is released. Deleted last, the Lease kept them
	// assigned here until the slowest shard's workers finished, and a shard
	// released early waited, unheld, for that. Announcing early makes no
	// second writer: a replica takes a shard only once its Lease is released
	// (after this replica's workers finished and its fence closed) or went
	// unrenewed for the lease duration, whatever the assignment says.
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.RenewDeadline)
	defer cancel()
	err := r.leases.Delete(shutdown, memberLeaseName(r.cfg.Name, r.cfg.Identity), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Could not delete this replica's member Lease; the others see it gone after the lease duration")
	}
	// Every shard at once: each waits for its workers to finish the Foo in hand.
	r.mu.Lock()
	for _, h := range r.held {
		r.done.Go(func() { r.release(ctx, h) })
	}
	r.mu.Unlock()
	r.done.Wait()
	logger.Info("Left sharding")
}

// renewHeld renews the Leases of the shards this replica holds, all at
// once (renew), and then gives up those whose renewal is overdue.
func (r *Replica[C]) renewHeld(ctx context.Context) {
	var renewals sync.WaitGroup
	for _, h := range r.heldNow() {
		renewals.Go(func() {
			if why := r.renew(ctx, h); why != "" {
				r.lose(ctx, h, why)
			}
		})
	}
	renewals.Wait()
	r.loseOverdue(ctx)
	r.mu.Lock()
	r.renewalsFinished = r.now()
	r.mu.Unlock()
}

// round is one retry period's bookkeeping, beside the renewals: read the
// Leases, renew its member Lease, give up the shards no longer assigned to
// it or taken by another, take those assigned to it that are free, once it
// has joined, and prune the Leases nobody renews. Its requests share one
// renew deadline, so that a slow API server delays the next round by no
// more (Check).
func (r *Replica[C]) round(ctx context.Context) {
	defer func() {
		r.mu.Lock()
		r.roundFinished = r.now()
		r.mu.Unlock()
	}()
	logger := klog.FromContext(ctx)
	requests, cancel := context.WithTimeout(ctx, r.cfg.RenewDeadline)
	defer cancel()
	list, err := r.leases.List(requests, metav1.ListOptions{})
	if err != nil {
		logger.Error(err, "Could not read the Leases; taking and giving up no shard this time")
		return
	}
	now := r.now()
	leases := r.observe(list, now)
	// A replica takes shards from its second round on: by then the
	// replicas started beside it (a Deployment's pods, a rollout) have
	// written their member Leases too, and it takes its share of the
	// shards. Taking every shard at its first round, it would list every
	// Foo, and hand most over a retry period later: the peak memory that
	// sharding saves, and the syncs done twice.
	member := leases[memberLeaseName(r.cfg.Name, r.cfg.Identity)]
	r.renewMember(requests, member, now)

	// The unsharded leader's Lease held, this replica gives every shard
	// up: the leader waits for that before its first write
	// (WaitUnsharded). Were it to wait for the shard holders to leave
	// instead, a standby of the leader's that took the Lease in the
	// instant a shard was taken (a rollout from one shard to several, the
	// old leader gone) would wait, and keep the other shards unheld, for as
	// long as the shard holders run.
	leader := r.leaderHeld(leases, now)
	holders := Assign(r.count, r.liveMembers(leases, now))
	// The ranges split anew, every shard of the old split is given up, and
	// the new ones are taken once none of the old is held, as in a change
	// of -shards: the new ranges are another sharding.
	boundaries, weighted := r.boundaries(ctx, leases, now)
	for _, h := range r.heldNow() {
		switch lease := leases[ShardLeaseName(r.cfg.Name, h.shard)]; {
		case holderOf(lease) != r.cfg.Identity:
			r.lose(ctx, h, fmt.Sprintf("its Lease is held by %q", holderOf(lease)))
		case leader || holders[h.shard.Index] != r.cfg.Identity || h.shard.Generation != boundaries.Generation:
			r.startRelease(ctx, h)
		}
	}

	published := leases[BoundariesLeaseName(r.cfg.Name, r.count)]
	switch other := r.otherWriter(leases, now, boundaries.Generation); {
	case member == nil:
		logger.V(2).Info("Joined; taking shards from the next round, once the replicas started beside this one have joined")
	case weighted && published == nil:
		// Equal ranges taken now would be listed once, cold, and handed
		// over a weighing later: tenant-0..99 put most Foos in one.
		logger.V(2).Info("Taking no shard until the Foos are weighed and the boundaries published")
	case other != "":
		logger.V(2).Info("Taking no shard while replicas sharded otherwise hold Leases", "lease", other)
	default:
		var taken []taken
		for index, holder := range holders {
			r.mu.Lock()
			_, isHeld := r.held[index]
			busy := isHeld || r.releasing[index]
			r.mu.Unlock()
			if holder != r.cfg.Identity || busy {
				continue
			}
			shard := boundaries.Shard(index)
			if t, ok := r.take(requests, shard, leases[ShardLeaseName(r.cfg.Name, shard)], now); ok {
				taken = append(taken, t)
			}
		}
		r.confirm(ctx, taken, boundaries.Generation)
	}
	r.pruneLeases(requests, leases, now, boundaries.Generation)
	if weighted && member != nil && holders[0] == r.cfg.Identity { // joined, as for its takes
		r.rebalance(ctx, published, boundaries, now)
	}
}

// observe notes when this replica saw each Lease of list change, and which
// member Leases are of replicas that restarted (liveMembers), and returns
// the Leases by name.
func (r *Replica[C]) observe(list *coordinationv1.LeaseList, now time.Time) map[string]*coordinationv1.Lease {
	leases := map[string]*coordinationv1.Lease{}
	byHost := map[string][]*coordinationv1.Lease{} // member Leases held, by their replica's host
	var appeared []*coordinationv1.Lease
	for i := range list.Items {
		lease := &list.Items[i]
		leases[lease.Name] = lease
		if seen, ok := r.observed[lease.Name]; !ok || seen.resourceVersion != lease.ResourceVersion {
			r.observed[lease.Name] = observation{resourceVersion: lease.ResourceVersion, at: now}
		}
		if !isMemberLease(r.cfg.Name, lease.Name) || holderOf(lease) == "" {
			continue
		}
		host := hostOf(holderOf(lease))
		byHost[host] = append(byHost[host], lease)
		if _, ok := r.firstSeen[lease.Name]; !ok {
			r.firstSeen[lease.Name] = now
			appeared = append(appeared, lease)
		}
	}
	for name := range r.observed {
		if leases[name] == nil {
			delete(r.observed, name) // gone: seen afresh if it comes back
			delete(r.firstSeen, name)
			delete(r.restarted, name)
		}
	}
	// A member Lease that appeared is a restart if its host had another
	// member before it: one still listed, acquired earlier (by the same
	// node's clock), or one this replica saw within restartMemory.
	for _, lease := range appeared {
		holder := holderOf(lease)
		host := hostOf(holder)
		last, remembered := r.hosts[host]
		restarted := remembered && last.identity != holder && now.Sub(last.at) < restartMemory
		for _, other := range byHost[host] {
			if holderOf(other) != holder && acquired(other).Before(acquired(lease)) {
				restarted = true
			}
		}
		if restarted {
			r.restarted[lease.Name] = true
		}
	}
	for host, members := range byHost {
		newest := slices.MaxFunc(members, func(a, b *coordinationv1.Lease) int {
			return acquired(a).Compare(acquired(b))
		})
		r.hosts[host] = hostMember{identity: holderOf(newest), at: now}
	}
	for host, last := range r.hosts {
		if now.Sub(last.at) >= restartMemory {
			delete(r.hosts, host)
		}
	}
	return leases
}

// hostOf is the host of a replica's identity, <host>_<UUID> (NewIdentity):
// its pod's name in a cluster, the same after a restart of its container.
func hostOf(identity string) string {
	if i := strings.LastIndex(identity, "_"); i > 0 {
		return identity[:i]
	}
	return identity
}

// acquired is when the Lease's holder took it, zero if unknown.
func acquired(lease *coordinationv1.Lease) time.Time {
	if lease.Spec.AcquireTime == nil {
		return time.Time{}
	}
	return lease.Spec.AcquireTime.Time
}

// startRelease gives up the shard h in the background (release), unless it
// is being given up already.
func (r *Replica[C]) startRelease(ctx context.Context, h *heldShard[C]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[h.shard.Index] == h {
		delete(r.held, h.shard.Index)
		r.releasing[h.shard.Index] = true
		r.done.Go(func() { r.release(ctx, h) })
	}
}

// heldNow are the shards this replica holds.
func (r *Replica[C]) heldNow() []*heldShard[C] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Values(r.held))
}

// liveMembers are the identities of the replicas of this one's count whose
// member Lease this replica saw renewed within the lease duration, itself
// among them: the members the shards are shared out among. A replica of
// another count, or of a release whose member Leases carry no count, is
// left out: it would be assigned shards it never takes, which would go
// unheld for as long as both run (a rollout that changes -shards). A
// release's replicas of the same count still share out the shards apart,
// but each takes only a shard released or gone unrenewed, and the newer
// share them all among themselves: a shard the older give up is always
// taken.
//
// A replica that restarted in its pod (its host seen before with another
// identity: a crash, or a crash loop, which gives it a new identity at each
// start) is given shards once this replica has seen it for the lease
// duration: one that crashes again sooner pulls no shard to itself, each
// pull a handover, a cold list and, at the crash, a lease duration unheld.
// Until then the others keep its share. A new pod counts at once, so that a
// rollout's new replicas take their shares as the old leave. Where no live
// member counts yet, they all count: there is none to keep the shards.
func (r *Replica[C]) liveMembers(leases map[string]*coordinationv1.Lease, now time.Time) []string {
	var live, counted []string
	count := strconv.Itoa(r.count)
	for name, lease := range leases {
		if lease.Labels[LabelLeaseSet] != r.cfg.Name || !isMemberLease(r.cfg.Name, name) ||
			lease.Labels[LabelShards] != count {
			continue
		}
		holder := holderOf(lease)
		if holder == "" || r.expired(name, now) || slices.Contains(live, holder) {
			continue
		}
		live = append(live, holder)
		if !r.restarted[name] || now.Sub(r.firstSeen[name]) >= r.cfg.LeaseDuration {
			counted = append(counted, holder)
		}
	}
	// Itself, whatever its member Lease looks like here (not written yet,
	// or its renewals failing): the others see it live for as long as it
	// renews its shards, and it keeps them; unless it restarted, as the
	// others see.
	self := memberLeaseName(r.cfg.Name, r.cfg.Identity)
	if !slices.Contains(live, r.cfg.Identity) {
		live = append(live, r.cfg.Identity)
	}
	if (!r.restarted[self] || now.Sub(r.firstSeen[self]) >= r.cfg.LeaseDuration) &&
		!slices.Contains(counted, r.cfg.Identity) {
		counted = append(counted, r.cfg.Identity)
	}
	if len(counted) > 0 {
		return counted
	}
	return live
}

// hostMember is the identity of a member, and when it was last seen live.
type hostMember struct {
	identity string
	at       time.Time
}

// restartMemory is how long a replica remembers the last member of each
// host: past kubelet's longest back-off between the restarts of a
// crash-looping container, five minutes.
const restartMemory = 10 * time.Minute

// pruneLeases removes the Leases of its set that this replica has seen
// unchanged for twice the lease duration, and that no replica renews: it
// deletes the member Leases of replicas gone (a replica killed leaves its
// own behind; one that stops deletes it), and the shard Leases of another
// count (a change of -shards rolled out) whose holder is no live member:
// released, it deletes them; held, it releases them first, to delete them
// once seen released as long, so that the only shard Leases it deletes are
// ones nobody holds (which the own-leases policy can tell). Written as
// seen, by resourceVersion: a Lease renewed or taken meanwhile stays; and
// any replica creates a missing Lease again. A write the API server refuses
// (403) is not sent again until the Lease changes (observation.refused).
func (r *Replica[C]) pruneLeases(ctx context.Context, leases map[string]*coordinationv1.Lease, now time.Time,
	generation string) {
	logger := klog.FromContext(ctx)
	live := map[string]bool{}
	for name, lease := range leases {
		if lease.Labels[LabelLeaseSet] == r.cfg.Name && isMemberLease(r.cfg.Name, name) && !r.expired(name, now) {
			live[holderOf(lease)] = true
		}
	}
	for name, lease := range leases {
		if lease.Labels[LabelLeaseSet] != r.cfg.Name || now.Sub(r.observed[name].at) < 2*r.cfg.LeaseDuration ||
			r.observed[name].refused {
			continue
		}
		shard, isShard := parseShardLease(r.cfg.Name, name)
		other := isShard && r.otherSharding(shard, generation)
		switch {
		case isMemberLease(r.cfg.Name, name), other && holderOf(lease) == "":
			err := r.leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{
				ResourceVersion: &lease.ResourceVersion}})
			if err != nil {
				r.markRefused(name, err)
				logger.V(2).Info("Could not delete a Lease nobody renews", "lease", name, "err", err)
				continue
			}
			logger.V(2).Info("Deleted a Lease nobody renews", "lease", name, "holder", holderOf(lease))
			delete(r.observed, name)
		case other && !live[holderOf(lease)]:
			released := lease.DeepCopy()
			release(released)
			updated, err := r.leases.Update(ctx, released, metav1.UpdateOptions{})
			if err != nil {
				r.markRefused(name, err)
				logger.V(2).Info("Could not release a shard Lease of another count nobody renews", "lease", name,
					"err", err)
				continue
			}
			r.observed[name] = observation{resourceVersion: updated.ResourceVersion, at: now}
			logger.V(2).Info("Released a shard Lease of another count nobody renews", "lease", name,
				"holder", holderOf(lease))
		}
	}
}

// markRefused marks the Lease name, as last seen, not to be pruned again if err
// is a refusal (403).
func (r *Replica[C]) markRefused(name string, err error) {
	if seen, ok := r.observed[name]; ok && apierrors.IsForbidden(err) {
		seen.refused = true
		r.observed[name] = seen
	}
}

// isMemberLease reports whether name is a member Lease of the set name.
func isMemberLease(set, name string) bool { return strings.HasPrefix(name, set+memberInfix) }

// expired reports whether this replica has seen the Lease name unchanged for
// the lease duration.
func (r *Replica[C]) expired(name string, now time.Time) bool {
	return now.Sub(r.observed[name].at) >= r.cfg.LeaseDuration
}

// otherWriter names a Lease, held and not expired, of replicas that would
// write for the same Foos under another sharding: the unsharded leader's, or
// a shard's of another count or boundaries (otherSharding). "" when there is
// none.
func (r *Replica[C]) otherWriter(leases map[string]*coordinationv1.Lease, now time.Time, generation string) string {
	for name, lease := range leases {
		if holderOf(lease) == "" || r.expired(name, now) {
			continue
		}
		if name == r.cfg.Name {
			return name
		}
		if shard, ok := parseShardLease(r.cfg.Name, name); ok && r.otherSharding(shard, generation) {
			return name
		}
	}
	return ""
}

// otherSharding reports whether shard is not of this replica's sharding: of
// another count, or of other boundaries than those of generation.
func (r *Replica[C]) otherSharding(shard Shard, generation string) bool {
	return shard.Count != r.count || shard.Generation != generation
}

// leaderHeld reports whether the unsharded leader's Lease is held and not
// expired.
func (r *Replica[C]) leaderHeld(leases map[string]*coordinationv1.Lease, now time.Time) bool {
	lease := leases[r.cfg.Name]
	return holderOf(lease) != "" && !r.expired(r.cfg.Name, now)
}

// renewMember creates or renews this replica's member Lease.
func (r *Replica[C]) renewMember(ctx context.Context, lease *coordinationv1.Lease, now time.Time) {
	var err error
	if lease == nil {
		lease = newMemberLease(r.cfg.Namespace, r.cfg.Name, r.cfg.Identity, r.count, r.weigh != nil,
			r.cfg.LeaseDuration, now)
		if _, err = r.leases.Create(ctx, lease, metav1.CreateOptions{}); err == nil {
			// Seen from now, as the others see it from their next round; a
			// restart if its host had another member (observe).
			r.firstSeen[lease.Name] = now
			last, ok := r.hosts[hostOf(r.cfg.Identity)]
			r.restarted[lease.Name] = ok && last.identity != r.cfg.Identity && now.Sub(last.at) < restartMemory
		}
	} else {
		hold(lease, r.cfg.Identity, r.cfg.LeaseDuration, now)
		_, err = r.leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Could not renew this replica's member Lease")
	}
}

// taken is a shard Lease this replica took, whose Controller it has not
// started yet (confirm).
type taken struct {
	shard Shard
	lease *coordinationv1.Lease // as written
	sent  time.Time             // when the take was sent
	// freeSince is when the previous holder last renewed or released it,
	// as seen here; zero for a Lease created.
	freeSince time.Time
}

// take takes the shard's Lease if it is free: missing, released, or seen
// unchanged for the lease duration.
func (r *Replica[C]) take(ctx context.Context, shard Shard, lease *coordinationv1.Lease, now time.Time) (taken, bool) {
	logger := klog.FromContext(ctx).WithValues("shard", shard.String())
	name := ShardLeaseName(r.cfg.Name, shard)
	t := taken{shard: shard, sent: r.now()}
	var err error
	switch {
	case lease == nil:
		t.lease, err = r.leases.Create(ctx, newLease(r.cfg.Namespace, name, r.cfg.Name, r.cfg.Identity,
			r.cfg.LeaseDuration, t.sent), metav1.CreateOptions{})
	case holderOf(lease) == "" || holderOf(lease) == r.cfg.Identity || r.expired(name, now):
		t.freeSince = r.observed[name].at
		previous := holderOf(lease)
		hold(lease, r.cfg.Identity, r.cfg.LeaseDuration, t.sent)
		t.lease, err = r.leases.Update(ctx, lease, metav1.UpdateOptions{})
		if err == nil && previous != "" && previous != r.cfg.Identity {
			logger.Info("Took over the shard of a replica that stopped renewing its Lease", "previous", previous)
		}
	default:
		logger.V(4).Info("Waiting for the shard's holder to release it", "holder", holderOf(lease))
		return taken{}, false
	}
	switch {
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		logger.V(2).Info("Another replica took the shard's Lease first", "err", err)
		return taken{}, false
	case err != nil:
		logger.Error(err, "Could not take the shard's Lease")
		return taken{}, false
	}
	return t, true
}

// confirm reads the Leases again after the round's takes, before any write
// for the shards taken: the check before it took may have missed replicas
// of another sharding that took theirs in the same instant. Of two sides
// that take at once, the one that took later sees the other's Lease here,
// and gives back what it took, unused; the earlier may see the later's
// too, and gives back as well (both take again at a later round, at
// jittered times, so seldom again at once). Unconfirmed, nothing is
// started: the shards are released.
func (r *Replica[C]) confirm(ctx context.Context, shards []taken, generation string) {
	if len(shards) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	// A renew deadline of its own, not what the round's List and takes
	// left of theirs: on a slow API server that would run out here at every
	// round, and no shard would ever be confirmed.
	requests, cancel := context.WithTimeout(ctx, r.cfg.RenewDeadline)
	defer cancel()
	other := ""
	list, err := r.leases.List(requests, metav1.ListOptions{})
	if err == nil {
		other = r.otherWriter(r.observe(list, r.now()), r.now(), generation)
	}
	if err == nil && other == "" {
		for _, t := range shards {
			r.start(ctx, requests, t)
		}
		return
	}
	if err != nil {
		logger.Error(err, "Could not read the Leases after taking shards; giving them back")
	} else {
		logger.Info("Replicas sharded otherwise took a Lease as this replica took shards; giving them back",
			"lease", other)
	}
	for _, t := range shards {
		release(t.lease)
		released, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.RenewDeadline)
		if _, err := r.leases.Update(released, t.lease, metav1.UpdateOptions{}); err != nil {
			logger.Error(err, "Could not give back the shard's Lease; it expires after the lease duration",
				"shard", t.shard.String())
		}
		cancel()
	}
}

// start starts the Controller of the shard taken, its fence open from when
// the take was sent.
func (r *Replica[C]) start(ctx, requests context.Context, t taken) {
	logger := klog.FromContext(ctx).WithValues("shard", t.shard.String())
	shard, lease := t.shard, t.lease
	if r.detect != nil {
		if mode, err := r.detect(requests, shard); err != nil {
			logger.V(2).Info("Could not learn who filters the shard", "err", err)
		} else {
			r.setMode(ctx, mode)
		}
	}
	fence := NewFence(r.cfg)
	fence.RenewedAt(t.sent)
	scope := Scope{Shard: &shard, Fence: fence, Syncs: r.syncs, Narrow: shard.Narrow}
	controller, err := r.newController(klog.NewContext(ctx, logger), scope)
	if err != nil {
		logger.Error(err, "Could not build the shard's controller; releasing its Lease")
		release(lease)
		if _, err := r.leases.Update(requests, lease, metav1.UpdateOptions{}); err != nil {
			logger.Error(err, "Could not release the shard's Lease")
		}
		return
	}
	runCtx, stop := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logger))
	h := &heldShard[C]{shard: shard, fence: fence, controller: controller, stop: stop,
		stopped: make(chan struct{}), lease: lease, renewed: t.sent}
	r.mu.Lock()
	r.held[shard.Index] = h
	metrics.ShardsHeld.Set(float64(len(r.held)))
	r.mu.Unlock()
	metrics.ShardHandovers.WithLabelValues("acquired").Inc()
	logger.Info("Acquired the shard, listing its Foos and what they own")
	r.done.Go(func() {
		defer close(h.stopped)
		if err := runWithInformers(runCtx, controller, r.workers); err != nil {
			logger.Error(err, "The shard's controller failed")
		}
	})
	r.done.Go(func() {
		if !waitSynced(runCtx, controller) {
			return
		}
		logger.Info("Reconciling the shard")
		if !t.freeSince.IsZero() {
			metrics.ShardTakeoverDuration.Observe(r.now().Sub(t.freeSince).Seconds())
		}
	})
}

// setMode records who filters the shards (samplecontroller_shard_filtering),
// and logs a change.
func (r *Replica[C]) setMode(ctx context.Context, mode Mode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mode == mode {
		return
	}
	if r.mode != "" {
		klog.FromContext(ctx).Info("Shards now filtered", "by", mode, "was", r.mode)
	}
	r.mode = mode
	metrics.ShardFiltering.Reset()
	metrics.ShardFiltering.WithLabelValues(string(mode)).Set(1)
}

// waitSynced waits until the Controller's caches have synced, or ctx ends.
func waitSynced(ctx context.Context, c Controller) bool {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return hasSynced(c), nil
	})
	return err == nil
}

// renew renews the shard's Lease from its copy as this replica last wrote
// it, with no List first, and opens its fence for another window as of the
// moment the renewal was sent. Refused as changed since (409), the Lease is
// read again: still this replica's (a renewal of its own answered too late
// to count), it is renewed as read; another's, or gone, the shard is lost,
// and renew says why. Together its requests may take what is left of the
// shard's renew deadline, and no more: past it loseOverdue gives the shard
// up, as client-go's elector bounds a leader's renewals.
func (r *Replica[C]) renew(ctx context.Context, h *heldShard[C]) (lost string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone {
		return ""
	}
	sent := r.now()
	ctx, cancel := context.WithTimeout(ctx, h.renewed.Add(r.cfg.RenewDeadline).Sub(sent))
	defer cancel()
	updated, err := r.renewLease(ctx, h.lease, sent)
	if apierrors.IsConflict(err) {
		var current *coordinationv1.Lease
		if current, err = r.leases.Get(ctx, h.lease.Name, metav1.GetOptions{}); err == nil {
			if holder := holderOf(current); holder != r.cfg.Identity {
				return fmt.Sprintf("its Lease is held by %q", holder)
			}
			updated, err = r.renewLease(ctx, current, sent)
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return "its Lease was deleted"
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Could not renew the shard's Lease", "shard", h.shard.String(), "err", err)
		return ""
	}
	h.lease, h.renewed = updated, sent
	h.fence.RenewedAt(sent)
	return ""
}

// renewLease writes lease held by this replica as of sent.
func (r *Replica[C]) renewLease(ctx context.Context, lease *coordinationv1.Lease,
	sent time.Time) (*coordinationv1.Lease, error) {
	lease = lease.DeepCopy()
	hold(lease, r.cfg.Identity, r.cfg.LeaseDuration, sent)
	return r.leases.Update(ctx, lease, metav1.UpdateOptions{})
}

// loseOverdue gives up the shards not renewed within the renew deadline: as
// client-go's elector gives up leadership, so that the fence (closed since
// the renew deadline plus a retry period at most) never reopens on a Lease
// another replica may have taken meanwhile.
func (r *Replica[C]) loseOverdue(ctx context.Context) {
	for _, h := range r.heldNow() {
		h.mu.Lock()
		overdue := r.now().Sub(h.renewed) > r.cfg.RenewDeadline
		h.mu.Unlock()
		if overdue {
			r.lose(ctx, h, "its Lease was not renewed within the renew deadline")
		}
	}
}

// lose stops the shard's Controller at once, its fence closed first: another
// replica holds, or may hold, the Lease.
func (r *Replica[C]) lose(ctx context.Context, h *heldShard[C], why string) {
	h.fence.Close()
	h.mu.Lock() // a renewal in flight ends first
	lost := h.gone
	h.gone = true
	h.mu.Unlock()
	if lost {
		return
	}
	h.fence.Close() // again: a renewal that was in flight may have opened it
	h.stop()
	r.mu.Lock()
	r.forget(h)
	r.mu.Unlock()
	metrics.ShardHandovers.WithLabelValues("lost").Inc()
	klog.FromContext(ctx).Error(nil, "Lost the shard, stopped reconciling it", "shard", h.shard.String(), "why", why)
}

// forget removes h from the shards held, unless the shard is held anew; r.mu held.
func (r *Replica[C]) forget(h *heldShard[C]) {
	if r.held[h.shard.Index] == h {
		delete(r.held, h.shard.Index)
	}
	metrics.ShardsHeld.Set(float64(len(r.held)))
}

// release gives up a shard this replica holds: its Controller stops and its
// workers finish the Foo in hand, its fence closes, and only then is the
// Lease cleared, for the replica it is assigned to now (or the unsharded
// leader) to take.
func (r *Replica[C]) release(ctx context.Context, h *heldShard[C]) {
	logger := klog.FromContext(ctx).WithValues("shard", h.shard.String())
	logger.Info("Releasing the shard: assigned to another replica, this one leaving, the ranges split anew, " +
		"or the unsharded leader's")
	h.stop()
	<-h.stopped
	h.mu.Lock() // a renewal in flight ends first: the release carries what it wrote
	lost := h.gone
	h.gone = true
	lease := h.lease.DeepCopy()
	h.mu.Unlock()
	h.fence.Close()
	var err error
	if !lost {
		release(lease)
		// Shutdown may have begun: the release is what lets another replica take the shard at once.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.RenewDeadline)
		defer cancel()
		_, err = r.leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	r.mu.Lock()
	r.forget(h)
	delete(r.releasing, h.shard.Index)
	r.mu.Unlock()
	switch {
	case lost: // lose said so
	case err != nil:
		// Renewed no more, the Lease expires: the new holder takes it then.
		logger.Error(err, "Could not release the shard's Lease; it expires after the lease duration")
	default:
		metrics.ShardHandovers.WithLabelValues("released").Inc()
		logger.Info("Released the shard")
	}
}

// LivenessSlack is how long past the longest healthy wait a sharded
// replica's loop may go without finishing a pass (Check), as client-go's
// watchdog allows a leader 20 s past its lease duration, before /healthz
// fails.
const LivenessSlack = 20 * time.Second

// livenessLimit is how long one of Run's loops may go without finishing a
// pass before Check fails: LivenessSlack past the longer of the lease
// duration and the longest a loop goes between two passes when the API
// server is slow but answers. That is two renew deadlines, a pass's requests
// and, for a round, the wait of a shard it finds lost for the renewal in
// flight, then the wait before the next pass, at most (1 + JitterFactor)
// retry periods. 44.4 s with the defaults; the flags' bounds allow a retry
// period of up to RenewDeadline / JitterFactor, for which the lease duration
// alone would be too short.
func (r *Replica[C]) livenessLimit() time.Duration {
	between := 2*r.cfg.RenewDeadline +
		time.Duration((1+leaderelection.JitterFactor)*float64(r.cfg.RetryPeriod))
	return max(r.cfg.LeaseDuration, between) + LivenessSlack
}

// Check fails once one of Run's loops has not finished a pass for
// livenessLimit: wedged. A slow or refusing API server fails no check, as
// each pass's requests end within a renew deadline; a loop stuck past that
// is the kubelet's to restart.
func (r *Replica[C]) Check(*http.Request) error {
	r.mu.Lock()
	renewals, round := r.renewalsFinished, r.roundFinished
	r.mu.Unlock()
	now, limit := r.now(), r.livenessLimit()
	for _, loop := range []struct {
		what     string
		finished time.Time
	}{{"renewal of the shard Leases", renewals}, {"round reading the Leases", round}} {
		if since := now.Sub(loop.finished); !loop.finished.IsZero() && since > limit {
			return fmt.Errorf("sharding stuck: no %s finished for %s, more than %s", loop.what,
				since.Round(time.Second), limit)
		}
	}
	return nil
}

// Held returns the Controllers of the shards this replica holds.
func (r *Replica[C]) Held() []C {
	r.mu.Lock()
	defer r.mu.Unlock()
	controllers := make([]C, 0, len(r.held))
	for _, h := range r.held {
		controllers = append(controllers, h.controller)
	}
	return controllers
}

// HasSynced reports whether the caches of every shard this replica holds
// have synced: true when it holds none, so that a replica waiting for
// shards is ready and a rollout goes on.
func (r *Replica[C]) HasSynced() bool {
	return !slices.ContainsFunc(r.Held(), func(c C) bool { return !hasSynced(c) })
}

// WaitUnsharded waits until no replica holds a shard Lease named after
// cfg.Name, of any count: seen released, or unchanged for the lease duration.
// The unsharded leader calls it before its first write, so that a rolling
// update from several shards to one never has the new leader and the old
// shard holders write at once: a sharded replica gives its shards up, and
// takes none, while the leader's Lease is held (Replica.round), so the wait
// lasts a round and a release. Replicas without the
// sharding Role's list cannot have been sharded: it returns at once.
func WaitUnsharded(ctx context.Context, cfg Config, leases coordinationclient.LeaseInterface) error {
	logger := klog.FromContext(ctx)
	observed := map[string]observation{}
	logged := false
	return wait.PollUntilContextCancel(ctx, cfg.RetryPeriod, true, func(ctx context.Context) (bool, error) {
		list, err := leases.List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) {
			return true, nil
		}
		if err != nil {
			logger.Error(err, "Could not read the Leases to learn whether shard holders still write")
			return false, nil
		}
		now := time.Now()
		var held []string
		for _, lease := range list.Items {
			if _, ok := parseShardLease(cfg.Name, lease.Name); !ok || holderOf(&lease) == "" {
				continue
			}
			if seen, ok := observed[lease.Name]; !ok || seen.resourceVersion != lease.ResourceVersion {
				observed[lease.Name] = observation{resourceVersion: lease.ResourceVersion, at: now}
			}
			if now.Sub(observed[lease.Name].at) < cfg.LeaseDuration {
				held = append(held, lease.Name)
			}
		}
		if len(held) > 0 && !logged {
			logger.Info("Waiting for the replicas of another sharding to release their shards", "leases", held)
			logged = true
		}
		return len(held) == 0, nil
	})
}
