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
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

const leaseNamespace, leaseSet = "sample-controller", "sample-controller"

// leaseServer is a fake clientset whose Leases keep the API server's rule the
// Replica relies on: each write gets a new resourceVersion, and an update
// carrying another than the stored one is refused 409.
func leaseServer() *fake.Clientset {
	client := fake.NewClientset()
	var mu sync.Mutex
	version := 0
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	client.PrependReactor("create", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		version++
		action.(clienttesting.CreateAction).GetObject().(*coordinationv1.Lease).ResourceVersion = strconv.Itoa(version)
		return false, nil, nil
	})
	client.PrependReactor("update", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		lease := action.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		stored, err := client.Tracker().Get(gvr, lease.Namespace, lease.Name)
		if err != nil {
			return true, nil, err
		}
		if stored.(*coordinationv1.Lease).ResourceVersion != lease.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), lease.Name, errors.New("changed since read"))
		}
		version++
		lease.ResourceVersion = strconv.Itoa(version)
		return false, nil, nil
	})
	return client
}

// fakeController is a shard's Controller that runs until stopped.
type fakeController struct {
	scope   Scope
	workers int
	stopped chan struct{}
}

func (c *fakeController) RunInformers(ctx context.Context) { <-ctx.Done() }

func (c *fakeController) Run(ctx context.Context, workers int) error {
	c.workers = workers
	<-ctx.Done()
	close(c.stopped)
	return nil
}

func (c *fakeController) CachesSynced() []cache.InformerSynced {
	return []cache.InformerSynced{func() bool { return true }}
}

// testReplica is a Replica on a clock the test moves, with the Controllers
// it built.
type testReplica struct {
	*Replica[*fakeController]
	mu    sync.Mutex
	built []*fakeController
}

func newTestReplica(client *fake.Clientset, identity string, count int, offset *atomic.Int64) *testReplica {
	cfg := Config{Enabled: true, Namespace: leaseNamespace, Name: leaseSet, Identity: identity,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	t := &testReplica{}
	t.Replica = NewReplica(count, 2, cfg, client.CoordinationV1().Leases(leaseNamespace),
		func(_ context.Context, scope Scope) (*fakeController, error) {
			c := &fakeController{scope: scope, stopped: make(chan struct{})}
			t.mu.Lock()
			t.built = append(t.built, c)
			t.mu.Unlock()
			return c, nil
		})
	t.now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	return t
}

// runUntilItHoldsEveryShard runs the replica, alone, until it holds every
// shard, and then stops it and waits for Run to return.
func (r *testReplica) runUntilItHoldsEveryShard(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		r.Run(ctx)
		close(done)
	}()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return len(r.heldShards()) == r.count, nil })
	cancel()
	<-done
	if err != nil {
		t.Fatalf("%s held %v, want all %d shards", r.cfg.Identity, r.heldShards(), r.count)
	}
}

// heldShards are the indexes of the shards the replica holds, in order.
func (r *testReplica) heldShards() []int {
	r.Replica.mu.Lock()
	defer r.Replica.mu.Unlock()
	return slices.Sorted(maps.Keys(r.held))
}

// controllerOf is the last Controller the replica built for shard index.
func (r *testReplica) controllerOf(index int) *fakeController {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range slices.Backward(r.built) {
		if c.scope.Shard.Index == index {
			return c
		}
	}
	return nil
}

// holders reads who holds each shard Lease of count, "" for none or missing.
func holders(t *testing.T, client *fake.Clientset, count int) []string {
	t.Helper()
	got := make([]string, count)
	for i := range got {
		lease, err := client.CoordinationV1().Leases(leaseNamespace).Get(context.Background(),
			ShardLeaseName(leaseSet, Shard{i, count}), metav1.GetOptions{})
		if err == nil {
			got[i] = holderOf(lease)
		} else if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	return got
}

// waitReleased waits until none of shards is held by anyone.
func waitReleased(t *testing.T, client *fake.Clientset, count int, shards ...int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			h := holders(t, client, count)
			return !slices.ContainsFunc(shards, func(i int) bool { return h[i] != "" }), nil
		})
	if err != nil {
		t.Fatalf("shards %v not released: %v", shards, holders(t, client, count))
	}
}

func stopped(c *fakeController) bool {
	select {
	case <-c.stopped:
		return true
	default:
		return false
	}
}

// Assign(4, [a, b]) gives b the shards 0 and 1, and a 2 and 3: assign.go's
// ranks, worked out apart from the code (FNV-1a 64 of "a/0", "b/0", ...).
func TestAJoiningReplicaGetsTheShardsAssignedToItOnceTheHolderReleasedThem(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	a := newTestReplica(client, "a", 4, &offset)
	a.round(ctx) // a's member Lease
	a.round(ctx)
	if got := holders(t, client, 4); !slices.Equal(got, []string{"a", "a", "a", "a"}) {
		t.Fatalf("alone, a holds %v, want every shard", got)
	}

	b := newTestReplica(client, "b", 4, &offset)
	b.round(ctx) // b's member Lease; the shards assigned to it are still a's
	if got := b.heldShards(); len(got) != 0 {
		t.Fatalf("b took %v while a held them", got)
	}
	a.round(ctx) // a sees b, and releases what is b's now
	waitReleased(t, client, 4, 0, 1)
	for _, i := range []int{0, 1} {
		c := a.controllerOf(i)
		if !stopped(c) {
			t.Errorf("a released shard %d with its controller running", i)
		}
		if c.scope.Fence.Check() == nil {
			t.Errorf("a released shard %d with its fence open", i)
		}
	}
	b.round(ctx)
	if got := holders(t, client, 4); !slices.Equal(got, []string{"b", "b", "a", "a"}) {
		t.Errorf("shard Leases held by %v, want [b b a a]", got)
	}
	if got := a.heldShards(); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("a runs the shards %v, want [2 3]", got)
	}
	if got := b.heldShards(); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("b runs the shards %v, want [0 1]", got)
	}
	for _, i := range []int{0, 1} {
		if c := b.controllerOf(i); c == nil || c.scope.Fence.Check() != nil {
			t.Errorf("b holds shard %d without a controller whose fence is open", i)
		}
	}
}

// Replicas started together each take their own share at their second
// round, and no replica ever runs a shard that is not its own: one that
// took every shard at its first round would list every Foo, then hand most
// over. Assign(4, [a, b]) as above.
func TestReplicasStartedTogetherTakeOnlyTheirOwnShards(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	a, b := newTestReplica(client, "a", 4, &offset), newTestReplica(client, "b", 4, &offset)
	a.round(ctx)
	if got := holders(t, client, 4); !slices.Equal(got, []string{"", "", "", ""}) {
		t.Fatalf("a took shards %v at its first round, before b could join", got)
	}
	b.round(ctx)
	a.round(ctx)
	b.round(ctx)
	if got := holders(t, client, 4); !slices.Equal(got, []string{"b", "b", "a", "a"}) {
		t.Errorf("shard Leases held by %v, want [b b a a]", got)
	}
	for _, r := range []*testReplica{a, b} {
		r.mu.Lock()
		built := make([]int, 0, len(r.built))
		for _, c := range r.built {
			built = append(built, c.scope.Shard.Index)
		}
		r.mu.Unlock()
		if want := r.heldShards(); !slices.Equal(built, want) {
			t.Errorf("%s built controllers for the shards %v, want its own %v alone", r.cfg.Identity, built, want)
		}
	}
}

func TestADeadReplicasShardsAreTakenOnceTheirLeasesWentUnrenewedForTheLeaseDuration(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	a, b := newTestReplica(client, "a", 4, &offset), newTestReplica(client, "b", 4, &offset)
	a.round(ctx)
	b.round(ctx)
	a.round(ctx)
	waitReleased(t, client, 4, 0, 1)
	b.round(ctx)

	// a stops renewing. Just short of the lease duration, b waits.
	offset.Store(int64(14 * time.Second))
	b.round(ctx)
	if got := b.heldShards(); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("b runs %v before a's Leases expired, want [0 1]", got)
	}
	offset.Store(int64(16 * time.Second))
	b.round(ctx)
	if got := holders(t, client, 4); !slices.Equal(got, []string{"b", "b", "b", "b"}) {
		t.Errorf("after the lease duration, shard Leases held by %v, want b everywhere", got)
	}
	lease, err := client.CoordinationV1().Leases(leaseNamespace).Get(ctx, ShardLeaseName(leaseSet, Shard{2, 4}),
		metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(lease.Spec.LeaseTransitions, 0); got != 1 {
		t.Errorf("shard 2's Lease changed hands %d times, want 1", got)
	}

	// Twice the lease duration unrenewed, a's member Lease is deleted.
	offset.Store(int64(31 * time.Second))
	b.round(ctx)
	_, err = client.CoordinationV1().Leases(leaseNamespace).Get(ctx, memberLeaseName(leaseSet, "a"), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the member Lease of a, gone for twice the lease duration: %v, want NotFound", err)
	}
	if _, err := client.CoordinationV1().Leases(leaseNamespace).Get(ctx, memberLeaseName(leaseSet, "b"),
		metav1.GetOptions{}); err != nil {
		t.Errorf("b's own member Lease: %v", err)
	}

	// a wakes up: it finds its shards taken, and stops them at once.
	a.round(ctx)
	if got := a.heldShards(); len(got) != 0 {
		t.Errorf("a, its Leases taken, still runs %v", got)
	}
	for _, i := range []int{2, 3} {
		if c := a.controllerOf(i); c.scope.Fence.Check() == nil {
			t.Errorf("a lost shard %d with its fence open", i)
		}
	}
	if got := holders(t, client, 4); !slices.Equal(got, []string{"b", "b", "b", "b"}) {
		t.Errorf("a changed the Leases it lost: %v", got)
	}
}

func TestAShardedReplicaTakesNoShardWhileAnotherShardingsLeaseIsHeld(t *testing.T) {
	for _, other := range []string{leaseSet, ShardLeaseName(leaseSet, Shard{0, 2})} {
		t.Run(other, func(t *testing.T) {
			ctx := context.Background()
			client := leaseServer()
			var offset atomic.Int64
			held := newLease(leaseNamespace, other, leaseSet, "old-replica", 15*time.Second, time.Now())
			if _, err := client.CoordinationV1().Leases(leaseNamespace).Create(ctx, held, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			r := newTestReplica(client, "new", 4, &offset)
			r.round(ctx) // its member Lease
			r.round(ctx)
			if got := holders(t, client, 4); !slices.Equal(got, []string{"", "", "", ""}) {
				t.Errorf("while %s is held, shard Leases held by %v, want none", other, got)
			}
			offset.Store(int64(16 * time.Second)) // its holder stopped renewing it
			r.round(ctx)
			if got := fmt.Sprint(holders(t, client, 4)); got != "[new new new new]" {
				t.Errorf("once %s expired, shard Leases held by %v, want new everywhere", other, got)
			}
		})
	}
}

// What a replica sends is what artifacts/deploy/sharding-role.yaml grants,
// with the creates of the leader election Role (test/names).
func TestAReplicaSendsListCreateUpdateAndDeleteOnItsLeasesAlone(t *testing.T) {
	client := leaseServer()
	var offset atomic.Int64
	r := newTestReplica(client, "a", 2, &offset)
	r.runUntilItHoldsEveryShard(t)
	verbs := map[string]bool{}
	for _, a := range client.Actions() {
		if a.GetResource().Resource != "leases" || a.GetNamespace() != leaseNamespace {
			t.Errorf("sent %s %s in %q, want Leases of %q alone", a.GetVerb(), a.GetResource(), a.GetNamespace(),
				leaseNamespace)
		}
		verbs[a.GetVerb()] = true
	}
	if got, want := slices.Sorted(maps.Keys(verbs)), []string{"create", "delete", "list", "update"}; !slices.Equal(got, want) {
		t.Errorf("verbs sent %v, want %v", got, want)
	}
}

func TestLeavingReleasesEveryShardAndTheMemberLease(t *testing.T) {
	client := leaseServer()
	var offset atomic.Int64
	r := newTestReplica(client, "a", 4, &offset)
	r.runUntilItHoldsEveryShard(t)
	if got := holders(t, client, 4); !slices.Equal(got, []string{"", "", "", ""}) {
		t.Errorf("after leaving, shard Leases held by %v, want none", got)
	}
	for i := range 4 {
		if !stopped(r.controllerOf(i)) {
			t.Errorf("left with shard %d's controller running", i)
		}
	}
	_, err := client.CoordinationV1().Leases(leaseNamespace).Get(context.Background(),
		memberLeaseName(leaseSet, "a"), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the member Lease after leaving: %v, want NotFound", err)
	}
}

// A leaving replica deletes its member Lease before it releases any shard:
// the others count it out at their next round, while its workers finish the
// Foos in hand, and not only after its slowest shard was released. The
// member Lease is a's: FNV-1a 32 of "a" is e40c292c.
func TestALeavingReplicaDeletesItsMemberLeaseBeforeReleasingAnyShard(t *testing.T) {
	client := leaseServer()
	var offset atomic.Int64
	r := newTestReplica(client, "a", 4, &offset)
	r.runUntilItHoldsEveryShard(t)
	var leaving []string // the deletes, and the updates that clear a holder, in the order sent
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "delete":
			leaving = append(leaving, "delete "+a.(clienttesting.DeleteAction).GetName())
		case "update":
			if lease := a.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease); holderOf(lease) == "" {
				leaving = append(leaving, "release "+lease.Name)
			}
		}
	}
	if len(leaving) != 5 {
		t.Fatalf("sent %q, want the member Lease's delete and 4 releases", leaving)
	}
	if want := "delete sample-controller-member-e40c292c"; leaving[0] != want {
		t.Errorf("sent %q first, want %q before every release: %q", leaving[0], want, leaving)
	}
	// The shards are released at once, in no set order.
	releases := slices.Sorted(slices.Values(leaving[1:]))
	if want := []string{"release sample-controller-shard-0-of-4", "release sample-controller-shard-1-of-4",
		"release sample-controller-shard-2-of-4", "release sample-controller-shard-3-of-4"}; !slices.Equal(releases, want) {
		t.Errorf("then sent %q, want %q", releases, want)
	}
}

func TestTheUnshardedLeaderWaitsForTheShardHoldersToRelease(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	leases := client.CoordinationV1().Leases(leaseNamespace)
	held := newLease(leaseNamespace, ShardLeaseName(leaseSet, Shard{3, 16}), leaseSet, "sharded", 15*time.Second,
		time.Now())
	held, err := leases.Create(ctx, held, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: leaseSet, LeaseDuration: 15 * time.Second, RetryPeriod: 10 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- WaitUnsharded(ctx, cfg, leases) }()
	select {
	case err := <-done:
		t.Fatalf("returned %v while shard 3-of-16 was held", err)
	case <-time.After(200 * time.Millisecond):
	}
	release(held)
	if _, err := leases.Update(ctx, held, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("returned %v once released, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after the shard was released")
	}
}

func TestTheUnshardedLeaderWithoutTheShardingRoleDoesNotWait(t *testing.T) {
	client := leaseServer()
	client.PrependReactor("list", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), "", errors.New("no Role"))
	})
	cfg := Config{Name: leaseSet, LeaseDuration: 15 * time.Second, RetryPeriod: time.Hour}
	if err := WaitUnsharded(context.Background(), cfg, client.CoordinationV1().Leases(leaseNamespace)); err != nil {
		t.Errorf("WaitUnsharded = %v, want nil at once", err)
	}
}

// gatedLeases holds each shard Lease's update until want of them are in
// flight at once, or a second has passed, and records the most that were,
// and each update's deadline, by shard.
type gatedLeases struct {
	coordinationclient.LeaseInterface
	want int

	mu        sync.Mutex
	inFlight  int
	most      int
	deadlines map[int]time.Time
	all       chan struct{}
}

func (g *gatedLeases) Update(ctx context.Context, lease *coordinationv1.Lease,
	opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if shard, ok := parseShardLease(leaseSet, lease.Name); ok {
		g.mu.Lock()
		g.deadlines[shard.Index], _ = ctx.Deadline()
		g.inFlight++
		g.most = max(g.most, g.inFlight)
		if g.inFlight == g.want {
			close(g.all)
		}
		g.mu.Unlock()
		select {
		case <-g.all:
		case <-time.After(time.Second):
		}
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}
	return g.LeaseInterface.Update(ctx, lease, opts)
}

// A replica renews its shards' Leases at once, each with what is left of its
// renew deadline (10 s, renewed 3 s before): one the API server is slow to
// answer neither takes from the others' time nor fails at a shorter bound.
// Each renewal's deadline is its last renewal's time and 10 s, on the
// replica's clock 3 s ahead of the real one: 7 s after it in real time, and
// after it by no more than the moment between reading the clock and
// setting the deadline (its time to reach the API server, which a loaded
// machine stretches, is not counted).
func TestAReplicaRenewsItsShardsAtOnceEachWithinWhatIsLeftOfItsRenewDeadline(t *testing.T) {
	ctx := context.Background()
	var offset atomic.Int64
	a := newTestReplica(leaseServer(), "a", 4, &offset)
	a.round(ctx) // a's member Lease
	a.round(ctx) // alone, a takes every shard
	if got := a.heldShards(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("a holds %v, want [0 1 2 3]", got)
	}
	renewed := map[int]time.Time{}
	for _, h := range a.held {
		renewed[h.shard.Index] = h.renewed
	}
	offset.Add(int64(3 * time.Second))
	gated := &gatedLeases{LeaseInterface: a.leases, want: 4, deadlines: map[int]time.Time{}, all: make(chan struct{})}
	a.leases = gated
	a.round(ctx)

	if gated.most != 4 {
		t.Errorf("at most %d renewals in flight at once, want 4", gated.most)
	}
	if len(gated.deadlines) != 4 {
		t.Fatalf("renewals of shards %v, want 4", slices.Sorted(maps.Keys(gated.deadlines)))
	}
	for shard, deadline := range gated.deadlines {
		if after := deadline.Sub(renewed[shard]); after < 7*time.Second || after > 7500*time.Millisecond {
			t.Errorf("shard %d's renewal ends %v after its last one, want 7 s and a moment", shard, after)
		}
	}
	for _, h := range a.held {
		if got := a.now().Sub(h.renewed); got > time.Second {
			t.Errorf("shard %s renewed %v ago, want this round", h.shard, got)
		}
	}
}
