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
	"reflect"
	"slices"
	"strconv"
	"strings"
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
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/metrics"
)

const leaseNamespace, leaseSet = "sample-controller", "sample-controller"

// leaseServer is a fake clientset whose Leases keep the API server's rules the
// Replica relies on: each write gets a new resourceVersion, and an update
// carrying another than the stored one, or a delete whose precondition
// names another, is refused 409.
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
	client.PrependReactor("delete", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		del := action.(clienttesting.DeleteAction)
		stored, err := client.Tracker().Get(gvr, del.GetNamespace(), del.GetName())
		if err != nil {
			return true, nil, err
		}
		if want := del.GetDeleteOptions().Preconditions; want != nil && want.ResourceVersion != nil &&
			*want.ResourceVersion != stored.(*coordinationv1.Lease).ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), del.GetName(), errors.New("changed since read"))
		}
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
// shard, and then stops it and waits for Run to return. Its retry period is
// 50 ms: it takes every shard at its second round.
func (r *testReplica) runUntilItHoldsEveryShard(t *testing.T) {
	t.Helper()
	r.cfg.RetryPeriod = 50 * time.Millisecond
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
			ShardLeaseName(leaseSet, Shard{Index: i, Count: count}), metav1.GetOptions{})
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
// ranks, worked out apart from the code (FNV-1a 64 of "a/0", "b/0", ...,
// mixed by splitmix64's finalizer).
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
	lease, err := client.CoordinationV1().Leases(leaseNamespace).Get(ctx, ShardLeaseName(leaseSet, Shard{Index: 2, Count: 4}),
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
	for _, other := range []string{leaseSet, ShardLeaseName(leaseSet, Shard{Index: 0, Count: 2})} {
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

// A replica that restarted in its pod (a crash: the same host, a new
// identity) is given shards once seen for the lease duration: crash-looping,
// it pulls none to itself at each start. A new pod is given its share at
// once, as a rollout's new replicas are.
func TestAReplicaRestartedInItsPodIsGivenShardsOnceSeenForALeaseDuration(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	start := time.Now()
	replica := func(identity string) *testReplica {
		r := newTestReplica(client, identity, 4, &offset)
		r.clocked(start, &offset)
		return r
	}
	// at moves the clock to seconds, and each replica renews its shards and
	// runs a round, in order.
	at := func(seconds int, rs ...*testReplica) {
		offset.Store(int64(time.Duration(seconds) * time.Second))
		for _, r := range rs {
			r.renewHeld(ctx)
			r.round(ctx)
		}
	}
	held := func(r *testReplica) int { return len(r.heldShards()) }
	a, crashed := replica("pod-a_1"), replica("pod-b_1")
	at(0, a, crashed, a, crashed)
	if held(a) != 2 || held(crashed) != 2 {
		t.Fatalf("pod-a_1 holds %d shards and pod-b_1 %d, want 2 each", held(a), held(crashed))
	}
	// pod-b_1 crashes: its Leases go unrenewed, and pod-a_1, which saw them
	// last at 1 s, takes its shards.
	at(1, a)
	at(16, a)
	if held(a) != 4 {
		t.Fatalf("pod-b_1 gone for the lease duration, pod-a_1 holds %d shards, want 4", held(a))
	}
	// Its container restarts: pod-b_2, of the same host, first seen at 17 s.
	restarted := replica("pod-b_2")
	for _, seconds := range []int{17, 24, 31} {
		at(seconds, restarted, a)
		if held(a) != 4 || held(restarted) != 0 {
			t.Fatalf("pod-b_2 seen for %d s: pod-a_1 holds %d shards and pod-b_2 %d, want 4 and none",
				seconds-17, held(a), held(restarted))
		}
	}
	at(32, a)
	waitReleased(t, client, 4, slices.DeleteFunc([]int{0, 1, 2, 3}, func(i int) bool {
		return slices.Contains(a.heldShards(), i)
	})...)
	at(32, restarted)
	if held(a) != 2 || held(restarted) != 2 {
		t.Errorf("pod-b_2 seen for the lease duration: pod-a_1 holds %d shards and pod-b_2 %d, want 2 each",
			held(a), held(restarted))
	}
	// A new pod is given its share at once: the second round after it
	// joined.
	joined := replica("pod-c_1")
	at(33, joined, a, restarted)
	waitReleased(t, client, 4, slices.DeleteFunc([]int{0, 1, 2, 3}, func(i int) bool {
		return slices.Contains(a.heldShards(), i) || slices.Contains(restarted.heldShards(), i)
	})...)
	at(34, joined)
	if held(joined) == 0 {
		t.Errorf("a new pod, pod-c_1, holds no shard a second after it joined; pod-a_1 holds %d, pod-b_2 %d",
			held(a), held(restarted))
	}
}

// A replica asks who filters at each shard it takes, so that
// samplecontroller_shard_filtering follows the API servers' feature gate
// turned on after it started: the metric names the new mode alone.
func TestAReplicaAsksWhoFiltersAtEachShardItTakes(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	r := newTestReplica(client, "a", 2, &offset)
	r.setMode(ctx, ModeClient) // as New found it at start
	var asked []string
	r.detect = func(_ context.Context, shard Shard) (Mode, error) {
		asked = append(asked, shard.String())
		return ModeServer, nil
	}
	r.round(ctx)
	r.round(ctx)
	if want := []string{"0-of-2", "1-of-2"}; !slices.Equal(asked, want) {
		t.Errorf("asked who filters the shards %v, want %v", asked, want)
	}
	want := `# HELP samplecontroller_shard_filtering [ALPHA] 1 for who filters this replica's shards: server (the API ` +
		`server applies the shardSelector, ShardedListAndWatch) or client (it sends every object, and the replica ` +
		`drops the other shards').
# TYPE samplecontroller_shard_filtering gauge
samplecontroller_shard_filtering{mode="server"} 1
`
	if err := testutil.CollectAndCompare(metrics.ShardFiltering, strings.NewReader(want),
		"samplecontroller_shard_filtering"); err != nil {
		t.Error(err)
	}
}

// slowList answers each List after delay, or fails once its context ends
// first: an API server slow to list.
type slowList struct {
	coordinationclient.LeaseInterface
	delay time.Duration
}

func (s *slowList) List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(s.delay):
	}
	return s.LeaseInterface.List(ctx, opts)
}

// On an API server slow to list, each List taking most of the renew
// deadline, a replica still takes and starts its shards: the reading after
// its takes has a renew deadline of its own, not what the round's List left.
func TestASlowListStillConfirmsTheShardsTaken(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	r := newTestReplica(client, "a", 2, &offset)
	r.cfg.RenewDeadline = 300 * time.Millisecond
	r.leases = &slowList{LeaseInterface: client.CoordinationV1().Leases(leaseNamespace), delay: 200 * time.Millisecond}
	r.round(ctx)
	r.round(ctx)
	if got := r.heldShards(); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("with each List taking 200 ms of a 300 ms renew deadline, a runs the shards %v, want [0 1]", got)
	}
}

// A rollout that changes -shards: a replica of 4 shards shares them with
// the members of 4 alone. A replica of 2 started beside it is no member of
// its sharding, so it is given none of the 4 (which it would never take),
// and takes none of its own while the 4's are held. Once the replica of 4
// leaves, releasing every shard, the replica of 2 takes both of its own.
func TestReplicasOfAnotherCountKeepEveryShardUntilTheyLeave(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	old := newTestReplica(client, "old", 4, &offset)
	old.round(ctx)
	old.round(ctx)
	if got := fmt.Sprint(holders(t, client, 4)); got != "[old old old old]" {
		t.Fatalf("alone, old holds %v, want every shard of 4", got)
	}
	rolled := newTestReplica(client, "new", 2, &offset)
	rolled.round(ctx) // its member Lease, of 2
	member, err := client.CoordinationV1().Leases(leaseNamespace).Get(ctx, memberLeaseName(leaseSet, "new"),
		metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := member.Labels[LabelShards]; got != "2" {
		t.Errorf("the member Lease of a replica of 2 shards is labelled %s=%q, want \"2\"", LabelShards, got)
	}
	for range 2 {
		old.round(ctx)
		rolled.round(ctx)
	}
	if got := fmt.Sprint(holders(t, client, 4)); got != "[old old old old]" {
		t.Errorf("with a replica of 2 beside it, the shards of 4 are held by %v, want old's all", got)
	}
	if got := fmt.Sprint(holders(t, client, 2)); got != "[ ]" {
		t.Errorf("while the shards of 4 are held, the shards of 2 are held by %v, want none", got)
	}
	old.runUntilItHoldsEveryShard(t) // and leaves, releasing them
	rolled.round(ctx)
	if got := fmt.Sprint(holders(t, client, 2)); got != "[new new]" {
		t.Errorf("once old left, the shards of 2 are held by %v, want new's both", got)
	}
	if got := rolled.heldShards(); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("new runs the shards %v, want [0 1]", got)
	}
}

// The unsharded leader's Lease held, a sharded replica gives up every shard
// it holds (the leader waits for that, WaitUnsharded), its controllers
// stopped and fences closed first, and takes none back while it is held.
func TestAShardedReplicaGivesWayToTheUnshardedLeader(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	r := newTestReplica(client, "sharded", 2, &offset)
	r.round(ctx)
	r.round(ctx)
	if got := fmt.Sprint(holders(t, client, 2)); got != "[sharded sharded]" {
		t.Fatalf("alone, the shards are held by %v, want sharded's both", got)
	}
	leader := newLease(leaseNamespace, leaseSet, leaseSet, "leader", 15*time.Second, time.Now())
	delete(leader.Labels, LabelLeaseSet) // as client-go's Lease lock writes it
	if _, err := client.CoordinationV1().Leases(leaseNamespace).Create(ctx, leader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.round(ctx)
	waitReleased(t, client, 2, 0, 1)
	for _, i := range []int{0, 1} {
		c := r.controllerOf(i)
		if !stopped(c) || c.scope.Fence.Check() == nil {
			t.Errorf("shard %d released with its controller stopped %v, its fence open %v", i, stopped(c),
				c.scope.Fence.Check() == nil)
		}
	}
	r.round(ctx)
	if got := fmt.Sprint(holders(t, client, 2)); got != "[ ]" {
		t.Errorf("while the leader's Lease is held, the shards are held by %v, want none", got)
	}
}

// Two shardings that take at once: a replica of 2 shards reads the Leases,
// finds none of another sharding's, and takes its own; in that instant a
// replica of 4 takes one of its. Reading the Leases again before its first
// write, the replica of 2 sees it, and gives back what it took, unused: no
// Controller built, both Leases released.
func TestShardsTakenAsAnotherShardingTookItsAreGivenBackUnused(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	r := newTestReplica(client, "new", 2, &offset)
	r.round(ctx) // its member Lease
	var racing sync.Once
	client.PrependReactor("create", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if !strings.HasSuffix(action.(clienttesting.CreateAction).GetObject().(*coordinationv1.Lease).Name, "-of-2") {
			return false, nil, nil
		}
		racing.Do(func() {
			other := newLease(leaseNamespace, ShardLeaseName(leaseSet, Shard{Index: 3, Count: 4}), leaseSet, "other",
				15*time.Second, time.Now())
			other.ResourceVersion = "racing"
			if err := client.Tracker().Add(other); err != nil {
				t.Error(err)
			}
		})
		return false, nil, nil
	})
	r.round(ctx)
	if got := fmt.Sprint(holders(t, client, 2)); got != "[ ]" {
		t.Errorf("the shards taken as another sharding took its are held by %v, want given back", got)
	}
	r.mu.Lock()
	built := len(r.built)
	r.mu.Unlock()
	if built != 0 || len(r.heldShards()) != 0 {
		t.Errorf("built %d controllers and holds %v, want none", built, r.heldShards())
	}
}

// What a replica sends is what artifacts/deploy/sharding-role.yaml grants,
// with the creates of the leader election Role (test/names): it joins and
// takes its shards, renews one whose Lease changed since it wrote it (a get
// first), and leaves.
func TestAReplicaSendsGetListCreateUpdateAndDeleteOnItsLeasesAlone(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	r := newTestReplica(client, "a", 2, &offset)
	r.round(ctx)
	r.round(ctx)
	sent := client.Actions()
	client.ClearActions()
	touch(t, client, ShardLeaseName(leaseSet, Shard{Index: 0, Count: 2}), "a")
	client.ClearActions()
	r.renewHeld(ctx)
	r.runUntilItHoldsEveryShard(t)
	verbs := map[string]bool{}
	for _, a := range append(sent, client.Actions()...) {
		if a.GetResource().Resource != "leases" || a.GetNamespace() != leaseNamespace {
			t.Errorf("sent %s %s in %q, want Leases of %q alone", a.GetVerb(), a.GetResource(), a.GetNamespace(),
				leaseNamespace)
		}
		verbs[a.GetVerb()] = true
	}
	if got, want := slices.Sorted(maps.Keys(verbs)), []string{"create", "delete", "get", "list", "update"}; !slices.Equal(got, want) {
		t.Errorf("verbs sent %v, want %v", got, want)
	}
}

// touch writes the Lease name anew, held by holder ("" for none): its
// resourceVersion changes.
func touch(t *testing.T, client *fake.Clientset, name, holder string) {
	t.Helper()
	leases := client.CoordinationV1().Leases(leaseNamespace)
	lease, err := leases.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = nil
	if holder != "" {
		lease.Spec.HolderIdentity = ptr.To(holder)
	}
	if _, err := leases.Update(context.Background(), lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
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
	held := newLease(leaseNamespace, ShardLeaseName(leaseSet, Shard{Index: 3, Count: 16}), leaseSet, "sharded", 15*time.Second,
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
	a.renewHeld(ctx)

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

// clocked sets the replica's clock to start and offset alone, for values
// written out.
func (r *testReplica) clocked(start time.Time, offset *atomic.Int64) {
	r.now = func() time.Time { return start.Add(time.Duration(offset.Load())) }
}

// sentActions are the client's actions, sorted: "update <Lease> by <holder>
// at <renewTime after start>" for an update, "<verb> <resource>" else.
func sentActions(client *fake.Clientset, start time.Time) []string {
	var sent []string
	for _, action := range client.Actions() {
		if update, ok := action.(clienttesting.UpdateAction); ok {
			lease := update.GetObject().(*coordinationv1.Lease)
			sent = append(sent, fmt.Sprintf("update %s by %s at %s", lease.Name, holderOf(lease),
				lease.Spec.RenewTime.Sub(start)))
			continue
		}
		sent = append(sent, action.GetVerb()+" "+action.GetResource().Resource)
	}
	slices.Sort(sent)
	return sent
}

// A replica renews the Leases of its shards from what it last wrote, apart
// from its List: one whose List the API server refuses, or never answers,
// sends the same four renewals every retry period (3 s here), each as of
// its own clock, and holds its shards past the lease duration (45 s). A
// round that hangs fails liveness once it is more than 44.4 s old (two
// renew deadlines of 10 s, 2.2 retry periods of 2 s, and LivenessSlack);
// one that fails at once does not.
func TestAReplicaKeepsItsShardsWhileItsListIsRefusedOrHangs(t *testing.T) {
	for _, hangs := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "hangs"}[hangs], func(t *testing.T) {
			ctx := context.Background()
			client := leaseServer()
			var offset atomic.Int64
			start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
			a := newTestReplica(client, "a", 4, &offset)
			a.clocked(start, &offset)
			a.round(ctx) // a's member Lease
			a.round(ctx) // alone, a takes every shard
			if got := a.heldShards(); !slices.Equal(got, []int{0, 1, 2, 3}) {
				t.Fatalf("a holds %v, want [0 1 2 3]", got)
			}
			// What /healthz asks of the replica: the watchdog, told of no elector, always passes.
			liveness := (&Work[*fakeController]{replica: a.Replica}).Liveness(leaderelection.NewLeaderHealthzAdaptor(0))

			if hangs {
				hanging := &hangingList{LeaseInterface: a.leases, listing: make(chan struct{}, 1),
					unblock: make(chan struct{})}
				a.leases = hanging
				var hung sync.WaitGroup
				defer hung.Wait()
				defer close(hanging.unblock)
				hung.Go(func() { a.round(ctx) })
				<-hanging.listing
			} else {
				client.PrependReactor("list", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewServiceUnavailable("the API server is overloaded")
				})
			}
			for step := 1; step <= 15; step++ {
				at := time.Duration(step) * 3 * time.Second
				offset.Store(int64(at))
				client.ClearActions()
				if !hangs {
					a.round(ctx)
				}
				a.renewHeld(ctx)
				var want []string
				if !hangs {
					want = append(want, "list leases")
				}
				for i := range 4 {
					want = append(want, fmt.Sprintf("update %s by a at %s", ShardLeaseName(leaseSet, Shard{Index: i, Count: 4}), at))
				}
				if got := sentActions(client, start); !slices.Equal(got, want) {
					t.Fatalf("%s after the List first failed, sent %q, want %q", at, got, want)
				}
				err := liveness.Check(nil)
				if stuck := hangs && at > 44400*time.Millisecond; stuck != (err != nil) {
					t.Errorf("%s after the last round finished, liveness: %v, want failing: %v", at, err, stuck)
				}
			}
			if got := a.heldShards(); !slices.Equal(got, []int{0, 1, 2, 3}) {
				t.Errorf("a holds %v, want [0 1 2 3]", got)
			}
			for i := range 4 {
				c := a.controllerOf(i)
				c.scope.Fence.mu.Lock()
				renewed := c.scope.Fence.renewed.Sub(start)
				c.scope.Fence.mu.Unlock()
				if stopped(c) || renewed != 45*time.Second {
					t.Errorf("shard %d: controller stopped %v, fence open from %s; want running, from 45s", i,
						stopped(c), renewed)
				}
			}
			if got := holders(t, client, 4); !slices.Equal(got, []string{"a", "a", "a", "a"}) {
				t.Errorf("shard Leases held by %v, want a everywhere", got)
			}
		})
	}
}

// hangingList is a Lease client whose List never answers until unblock is
// closed, or, with deadlines, until its context ends: a stuck round, or
// one whose List is answered by none of the API server's replies. (A
// reactor of the fake clientset blocks every request while it waits.)
type hangingList struct {
	coordinationclient.LeaseInterface
	deadlines bool
	listing   chan struct{} // sent to as a List starts, when there is room
	unblock   chan struct{}
}

func (h *hangingList) List(ctx context.Context, _ metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	select {
	case h.listing <- struct{}{}:
	default:
	}
	done := ctx.Done()
	if !h.deadlines {
		done = nil
	}
	select {
	case <-h.unblock:
		return nil, apierrors.NewServiceUnavailable("the API server is overloaded")
	case <-done:
		return nil, ctx.Err()
	}
}

// waitStopped waits until c's Run has returned.
func waitStopped(t *testing.T, c *fakeController) {
	t.Helper()
	select {
	case <-c.stopped:
	case <-time.After(10 * time.Second):
		t.Fatalf("shard %s's controller still runs", c.scope.Shard)
	}
}

// A renewal refused as outdated (409) reads the Lease again: still this
// replica's (written since, as a renewal of its own answered too late to
// count is), it is renewed as read; another replica's, the shard is lost at
// once; gone (404), too. Each Lease's requests, in the order sent.
func TestARenewalRefusedAsOutdatedReadsTheLease(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	a := newTestReplica(client, "a", 4, &offset)
	a.round(ctx)
	a.round(ctx)
	name := func(i int) string { return ShardLeaseName(leaseSet, Shard{Index: i, Count: 4}) }
	touch(t, client, name(0), "a")
	touch(t, client, name(1), "b")
	if err := client.CoordinationV1().Leases(leaseNamespace).Delete(ctx, name(2), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	a.renewHeld(ctx)

	sent := map[string][]string{}
	for _, action := range client.Actions() {
		var lease string
		switch action := action.(type) {
		case clienttesting.UpdateAction:
			lease = action.GetObject().(*coordinationv1.Lease).Name
		case clienttesting.GetAction:
			lease = action.GetName()
		}
		sent[lease] = append(sent[lease], action.GetVerb())
	}
	want := map[string][]string{
		name(0): {"update", "get", "update"},
		name(1): {"update", "get"},
		name(2): {"update"},
		name(3): {"update"},
	}
	if !reflect.DeepEqual(sent, want) {
		t.Errorf("sent %v, want %v", sent, want)
	}
	if got := a.heldShards(); !slices.Equal(got, []int{0, 3}) {
		t.Errorf("a holds %v, want [0 3]", got)
	}
	for _, i := range []int{1, 2} {
		c := a.controllerOf(i)
		waitStopped(t, c)
		if c.scope.Fence.Check() == nil {
			t.Errorf("a lost shard %d with its fence open", i)
		}
	}
	if got := holders(t, client, 4); !slices.Equal(got, []string{"a", "b", "", "a"}) {
		t.Errorf("shard Leases held by %v, want [a b  a]", got)
	}
}

// Run renews the shards apart from its round: with every List hanging until
// its deadline from the moment it holds them, a replica of lease duration
// 2 s, renew deadline 1 s and retry period 20 ms renews each shard's Lease
// again and again, and holds its shards past the lease duration; liveness
// passes, each round ending at its deadline. (A renew deadline of a second:
// a loaded machine's scheduling delays stay well within it.)
func TestRunKeepsTheShardsWhileTheListHangs(t *testing.T) {
	client := leaseServer()
	var offset atomic.Int64
	a := newTestReplica(client, "a", 2, &offset)
	a.cfg.LeaseDuration, a.cfg.RenewDeadline, a.cfg.RetryPeriod = 2*time.Second, time.Second, 20*time.Millisecond
	var hang atomic.Bool
	a.leases = &switchedList{LeaseInterface: a.leases, hang: &hang,
		hanging: &hangingList{LeaseInterface: a.leases, deadlines: true, listing: make(chan struct{}, 1)}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		a.Run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return len(a.heldShards()) == 2, nil })
	if err != nil {
		t.Fatalf("a holds %v, want [0 1]", a.heldShards())
	}
	hang.Store(true)
	renewals := func() map[string]int {
		n := map[string]int{}
		for _, action := range client.Actions() {
			if update, ok := action.(clienttesting.UpdateAction); ok {
				n[update.GetObject().(*coordinationv1.Lease).Name]++
			}
		}
		return n
	}
	before := renewals()
	time.Sleep(2500 * time.Millisecond)
	after := renewals()
	for i := range 2 {
		lease := ShardLeaseName(leaseSet, Shard{Index: i, Count: 2})
		if got := after[lease] - before[lease]; got < 5 {
			t.Errorf("%s renewed %d times in 2.5 s of hanging Lists, want one every retry period (20 ms)", lease, got)
		}
	}
	if got := a.heldShards(); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("2.5 s into hanging Lists, a holds %v, want [0 1]", got)
	}
	for i := range 2 {
		if err := a.controllerOf(i).scope.Fence.Check(); err != nil {
			t.Errorf("shard %d's fence: %v, want open", i, err)
		}
	}
	if err := a.Check(nil); err != nil {
		t.Errorf("liveness 2.5 s into hanging Lists: %v, want passing", err)
	}
}

// switchedList lists as hanging does once hang is set, else as the
// LeaseInterface.
type switchedList struct {
	coordinationclient.LeaseInterface
	hang    *atomic.Bool
	hanging *hangingList
}

func (s *switchedList) List(ctx context.Context, opts metav1.ListOptions) (*coordinationv1.LeaseList, error) {
	if s.hang.Load() {
		return s.hanging.List(ctx, opts)
	}
	return s.LeaseInterface.List(ctx, opts)
}

// Leases nobody renews, seen unchanged for twice the lease duration (30 s),
// are removed as seen: a replica's member Lease gone is deleted, and so is a
// shard Lease of another count released; one held by no live member is
// released first, and deleted once seen released as long. A shard Lease of
// another count held by a live member stays, and so does one renewed
// between the List and the delete (409); and the Leases gone are forgotten.
func TestLeasesNobodyRenewsArePruned(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	leases := client.CoordinationV1().Leases(leaseNamespace)
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	create := func(name, holder string) *coordinationv1.Lease {
		lease := newLease(leaseNamespace, name, leaseSet, holder, 15*time.Second, start)
		if isMemberLease(leaseSet, name) {
			lease.Labels[LabelShards] = "4" // a's count: b is a member of a's sharding
		}
		if holder == "" {
			release(lease)
		}
		created, err := leases.Create(ctx, lease, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	gone := create(memberLeaseName(leaseSet, "gone"), "gone")
	live := create(memberLeaseName(leaseSet, "b"), "b")
	released := create(ShardLeaseName(leaseSet, Shard{Index: 1, Count: 8}), "")
	ofGone := create(ShardLeaseName(leaseSet, Shard{Index: 2, Count: 8}), "gone")
	ofLive := create(ShardLeaseName(leaseSet, Shard{Index: 3, Count: 8}), "b")
	renewedMeanwhile := create(ShardLeaseName(leaseSet, Shard{Index: 4, Count: 8}), "")
	client.PrependReactor("delete", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.(clienttesting.DeleteAction).GetName() == renewedMeanwhile.Name {
			renewed := renewedMeanwhile.DeepCopy()
			renewed.ResourceVersion = "renewed"
			if err := client.Tracker().Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), renewed,
				leaseNamespace); err != nil {
				t.Error(err)
			}
		}
		return false, nil, nil
	})
	var offset atomic.Int64
	a := newTestReplica(client, "a", 4, &offset)
	a.clocked(start, &offset)
	// pruned is what a round at, b's member Lease renewed first, deletes and releases of the
	// Leases of 8 shards, each with the resourceVersion it was seen at.
	pruned := func(at time.Duration) []string {
		offset.Store(int64(at))
		live.Spec.RenewTime = ptr.To(metav1.NewMicroTime(start.Add(at)))
		var err error
		if live, err = leases.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		client.ClearActions()
		a.round(ctx)
		var got []string
		for _, action := range client.Actions() {
			switch action := action.(type) {
			case clienttesting.DeleteAction:
				got = append(got, "delete "+action.GetName()+"@"+*action.GetDeleteOptions().Preconditions.ResourceVersion)
			case clienttesting.UpdateAction:
				if lease := action.GetObject().(*coordinationv1.Lease); strings.HasSuffix(lease.Name, "-of-8") {
					got = append(got, fmt.Sprintf("update %s@%s by %q", lease.Name, lease.ResourceVersion, holderOf(lease)))
				}
			}
		}
		slices.Sort(got)
		return got
	}
	a.round(ctx) // sees every Lease at start
	want := []string{"delete " + gone.Name + "@1", "delete " + released.Name + "@3",
		"delete " + renewedMeanwhile.Name + "@6", "update " + ofGone.Name + `@4 by ""`}
	if got := pruned(30 * time.Second); !slices.Equal(got, want) {
		t.Errorf("30 s on, sent %q, want %q", got, want)
	}
	ofGone, err := leases.Get(ctx, ofGone.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pruned(59 * time.Second); len(got) != 0 {
		t.Errorf("29 s after it released %s, sent %q, want nothing", ofGone.Name, got)
	}
	// Deleted by another replica meanwhile, a Lease is forgotten.
	if err := leases.Delete(ctx, ofLive.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = []string{"delete " + ofGone.Name + "@" + ofGone.ResourceVersion}
	if got := pruned(60 * time.Second); !slices.Equal(got, want) {
		t.Errorf("30 s after it released %s, sent %q, want %q", ofGone.Name, got, want)
	}

	list, err := leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	left := make([]string, 0, len(list.Items))
	for _, lease := range list.Items {
		left = append(left, lease.Name)
	}
	slices.Sort(left)
	wantLeft := []string{memberLeaseName(leaseSet, "a"), live.Name, ShardLeaseName(leaseSet, Shard{Index: 2, Count: 4}),
		ShardLeaseName(leaseSet, Shard{Index: 3, Count: 4}), renewedMeanwhile.Name}
	slices.Sort(wantLeft)
	if !slices.Equal(left, wantLeft) {
		t.Errorf("Leases left %q, want %q", left, wantLeft)
	}
	if observed := slices.Sorted(maps.Keys(a.observed)); !slices.Equal(observed, wantLeft) {
		t.Errorf("observed %q, want the Leases left, %q", observed, wantLeft)
	}
}

// Unsharded, /healthz asks client-go's watchdog, which the elector tells of
// each renewal (lead).
func TestUnshardedLivenessIsTheElectorsWatchdog(t *testing.T) {
	watchdog := leaderelection.NewLeaderHealthzAdaptor(LivenessSlack)
	if got := (&Work[*fakeController]{}).Liveness(watchdog); got != watchdog {
		t.Errorf("Liveness = %v, want the watchdog given", got)
	}
}

// Liveness allows a loop the longest wait the flags' bounds make healthy:
// with a lease duration of 60 s, a renew deadline of 50 s and a retry
// period of 40 s (50 s > 1.2 x 40 s), two renew deadlines and 2.2 retry
// periods are 188 s, and the check fails 20 s past that, not 20 s past the
// lease duration (80 s), which a healthy round's jittered wait alone (up to
// 88 s) may outlast.
func TestLivenessAllowsTheLongestHealthyWaitOfTheFlags(t *testing.T) {
	var offset atomic.Int64
	r := newTestReplica(leaseServer(), "a", 2, &offset)
	r.cfg.LeaseDuration, r.cfg.RenewDeadline, r.cfg.RetryPeriod = 60*time.Second, 50*time.Second, 40*time.Second
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r.clocked(start, &offset)
	r.renewalsFinished, r.roundFinished = start, start
	for _, tc := range []struct {
		since   time.Duration
		failing bool
	}{{88 * time.Second, false}, {208 * time.Second, false}, {208*time.Second + time.Millisecond, true}} {
		offset.Store(int64(tc.since))
		if err := r.Check(nil); (err != nil) != tc.failing {
			t.Errorf("%s after both loops' last pass: %v, want failing: %v", tc.since, err, tc.failing)
		}
	}
}

// A Lease whose pruning the API server refuses (403: an admission policy or
// RBAC that does not admit it) is not tried again while it is unchanged:
// one refused delete of a released shard Lease of another count, none at the
// next rounds, and one more once the Lease changed and went 30 s unchanged
// again.
func TestAPruneRefusedIsNotRetriedUntilTheLeaseChanges(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	leases := client.CoordinationV1().Leases(leaseNamespace)
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	stale := newLease(leaseNamespace, ShardLeaseName(leaseSet, Shard{Index: 1, Count: 8}), leaseSet, "gone", 15*time.Second, start)
	release(stale)
	if _, err := leases.Create(ctx, stale, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client.PrependReactor("delete", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if name := action.(clienttesting.DeleteAction).GetName(); name == stale.Name {
			return true, nil, apierrors.NewForbidden(coordinationv1.Resource("leases"), name,
				errors.New("the sample-controller deletes its member Leases alone"))
		}
		return false, nil, nil
	})
	var offset atomic.Int64
	a := newTestReplica(client, "a", 4, &offset)
	a.clocked(start, &offset)
	deletes := func(at time.Duration) int {
		offset.Store(int64(at))
		client.ClearActions()
		a.round(ctx)
		n := 0
		for _, action := range client.Actions() {
			if del, ok := action.(clienttesting.DeleteAction); ok && del.GetName() == stale.Name {
				n++
			}
		}
		return n
	}
	a.round(ctx) // sees the Lease at start
	for _, step := range []struct {
		at   time.Duration
		want int
	}{{30 * time.Second, 1}, {32 * time.Second, 0}, {90 * time.Second, 0}} {
		if got := deletes(step.at); got != step.want {
			t.Errorf("%s on, %d deletes of %s, want %d", step.at, got, stale.Name, step.want)
		}
	}
	touch(t, client, stale.Name, "")
	for _, step := range []struct {
		at   time.Duration
		want int
	}{{92 * time.Second, 0}, {121 * time.Second, 0}, {122 * time.Second, 1}} {
		if got := deletes(step.at); got != step.want {
			t.Errorf("%s on, after the Lease changed at 92 s, %d deletes of %s, want %d", step.at, got, stale.Name,
				step.want)
		}
	}
}
