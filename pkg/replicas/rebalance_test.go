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
	"slices"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

// weighing returns a Weigh of weights, counting its calls.
func weighing(weights map[string]int, calls *atomic.Int32) Weigh {
	return func(context.Context) (map[string]int, error) {
		calls.Add(1)
		return weights, nil
	}
}

// waitBoundaries waits until the boundaries Lease of count shards says
// something, and returns them.
func waitBoundaries(t *testing.T, client *fake.Clientset, count int) Boundaries {
	t.Helper()
	var b Boundaries
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(ctx context.Context) (bool, error) {
			lease, err := client.CoordinationV1().Leases(leaseNamespace).Get(ctx,
				BoundariesLeaseName(leaseSet, count), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			b, err = parseBoundaries(count, lease.Annotations[AnnotationBoundaries])
			return err == nil, err
		})
	if err != nil {
		t.Fatalf("no boundaries of %d shards published: %v", count, err)
	}
	return b
}

// generationHolders reads who holds each shard Lease of b, "" for none or missing.
func generationHolders(t *testing.T, client *fake.Clientset, b Boundaries) []string {
	t.Helper()
	got := make([]string, len(b.Starts))
	for i := range got {
		lease, err := client.CoordinationV1().Leases(leaseNamespace).Get(context.Background(),
			ShardLeaseName(leaseSet, b.Shard(i)), metav1.GetOptions{})
		if err == nil {
			got[i] = holderOf(lease)
		} else if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	return got
}

// waitGenerationReleased waits until no shard Lease of b is held.
func waitGenerationReleased(t *testing.T, client *fake.Clientset, b Boundaries) {
	t.Helper()
	none := make([]string, len(b.Starts))
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return slices.Equal(generationHolders(t, client, b), none), nil },
	); err != nil {
		t.Fatalf("the shard Leases of generation %s held by %v, want none", b.Generation, generationHolders(t, client, b))
	}
}

// Weighted, the replicas take no shard until the Foos are weighed: the
// replica assigned shard 0 (b: Assign(4, [a, b]) gives b 0 and 1) weighs
// tenant-0..99 and publishes a split of 25 each, and the replicas take its
// shards, no range of equal ranges ever held (it would have put 90 or more
// in one shard, listed cold and handed over at once).
func TestTheReplicaAssignedShardZeroPublishesASplitAtTheFoosQuantilesBeforeAnyShardIsTaken(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	var calls atomic.Int32
	weights := tenants("tenant-", 100)
	a, b := newTestReplica(client, "a", 4, &offset), newTestReplica(client, "b", 4, &offset)
	a.weigh, b.weigh = weighing(weights, &calls), weighing(weights, &calls)
	a.round(ctx)
	b.round(ctx)
	a.round(ctx)
	b.round(ctx) // b weighs
	split := waitBoundaries(t, client, 4)
	if got := namespacesPerShard(split, weights); !slices.Equal(got, []int{25, 25, 25, 25}) {
		t.Errorf("the published split puts %v of tenant-0..99 in each shard, want [25 25 25 25]", got)
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("weighed %d times, want once: by b alone, assigned shard 0", got)
	}
	if got := len(a.heldShards()) + len(b.heldShards()); got != 0 {
		t.Errorf("%d shards held before the split was published, want none", got)
	}

	a.round(ctx)
	b.round(ctx)
	if got := generationHolders(t, client, split); !slices.Equal(got, []string{"b", "b", "a", "a"}) {
		t.Errorf("the split's shard Leases held by %v, want [b b a a]", got)
	}
	if got := holders(t, client, 4); !slices.Equal(got, []string{"", "", "", ""}) {
		t.Errorf("equal ranges held by %v, want none ever taken", got)
	}
	for _, r := range []*testReplica{a, b} {
		for _, i := range r.heldShards() {
			c := r.controllerOf(i)
			if want := split.Shard(i); *c.scope.Shard != want {
				t.Errorf("%s runs shard %d as %+v, want %+v", r.cfg.Identity, i, *c.scope.Shard, want)
			}
		}
	}
	if got, want := b.controllerOf(1).scope.Shard.Selector().String(), "shardRange(object.metadata.namespace, '"+
		fmt.Sprintf("0x%016x', '0x%016x')", split.Starts[1], split.Starts[2]); got != want {
		t.Errorf("shard 1 of the split selects %q, want %q", got, want)
	}

	// b weighs again only after RebalancePeriod, and the split, balanced,
	// stands.
	offset.Store(int64(RebalancePeriod))
	a.round(ctx)
	b.round(ctx)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return calls.Load() == 2, nil }); err != nil {
		t.Fatalf("weighed %d times after RebalancePeriod, want 2", calls.Load())
	}
	if again := waitBoundaries(t, client, 4); again.Generation != split.Generation {
		t.Errorf("a balanced split was replaced: generation %s, then %s", split.Generation, again.Generation)
	}
}

// Published boundaries that no longer split the Foos well (a tenant grew)
// are split anew once RebalancePeriod has passed: every replica gives up
// the old generation's shards and takes the new one's once none of the old
// is held.
func TestRangesThatNoLongerSplitTheFoosWellAreSplitAnewAndTheShardsHandedOver(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	var calls atomic.Int32
	weights := tenants("tenant-", 100)
	var current atomic.Pointer[map[string]int]
	current.Store(&weights)
	weigh := func(context.Context) (map[string]int, error) {
		calls.Add(1)
		return *current.Load(), nil
	}
	a, b := newTestReplica(client, "a", 4, &offset), newTestReplica(client, "b", 4, &offset)
	a.weigh, b.weigh = weigh, weigh
	for range 2 {
		a.round(ctx)
		b.round(ctx)
	}
	first := waitBoundaries(t, client, 4)
	a.round(ctx)
	b.round(ctx)

	// tenant-7 grows to 200 Foos: its shard holds 224 of 299, 3 times its part.
	grown := tenants("tenant-", 100)
	grown["tenant-7"] = 200
	current.Store(&grown)
	offset.Store(int64(RebalancePeriod))
	a.round(ctx)
	b.round(ctx) // b weighs
	var second Boundaries
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			second = waitBoundaries(t, client, 4)
			return second.Generation != first.Generation, nil
		}); err != nil {
		t.Fatalf("the ranges were not split anew for tenant-7's 200 Foos")
	}
	if got, was := second.Imbalance(grown), first.Imbalance(grown); got >= was {
		t.Errorf("the new split holds the Foos at %v times a part, the old at %v", got, was)
	}
	a.round(ctx) // each gives up the first generation's shards
	b.round(ctx)
	waitGenerationReleased(t, client, first)
	a.round(ctx)
	b.round(ctx)
	if got := generationHolders(t, client, second); !slices.Equal(got, []string{"b", "b", "a", "a"}) {
		t.Errorf("the new split's shard Leases held by %v, want [b b a a]", got)
	}
}

// A replica that splits equally (told so, or of an earlier release) holds
// its count to equal ranges: the weighted replicas hand the split's shards
// over to equal ranges as soon as they see its member Lease, and publish
// nothing while it is live.
func TestAReplicaThatSplitsEquallyHoldsItsCountToEqualRanges(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	var calls atomic.Int32
	weights := tenants("tenant-", 100)
	a := newTestReplica(client, "a", 4, &offset)
	a.weigh = weighing(weights, &calls)
	a.round(ctx)
	a.round(ctx) // weighs
	split := waitBoundaries(t, client, 4)
	a.round(ctx)
	if got := generationHolders(t, client, split); !slices.Equal(got, []string{"a", "a", "a", "a"}) {
		t.Fatalf("the split's shard Leases held by %v, want a everywhere", got)
	}

	c := newTestReplica(client, "c", 4, &offset) // weigh nil: equal ranges
	c.round(ctx)
	c.round(ctx)
	if got := c.heldShards(); len(got) != 0 {
		t.Fatalf("c took %v while a held the split's shards", got)
	}
	a.round(ctx) // sees c: equal ranges, every split shard given up
	waitGenerationReleased(t, client, split)
	a.round(ctx)
	c.round(ctx)
	got := holders(t, client, 4)
	if byA, byC := len(a.heldShards()), len(c.heldShards()); slices.Contains(got, "") || byA != 2 || byC != 2 {
		t.Errorf("equal ranges held by %v, a running %d and c %d; want every one held, two each", got, byA, byC)
	}
	offset.Store(int64(RebalancePeriod))
	a.round(ctx)
	c.round(ctx)
	if got := calls.Load(); got != 1 {
		t.Errorf("weighed %d times, want once: before c joined", got)
	}
}

// A weighing that fails with nothing published publishes equal ranges, so
// that the shards are held meanwhile.
func TestAFailedFirstWeighingPublishesEqualRanges(t *testing.T) {
	ctx := context.Background()
	client := leaseServer()
	var offset atomic.Int64
	a := newTestReplica(client, "a", 2, &offset)
	a.weigh = func(context.Context) (map[string]int, error) { return nil, errors.New("foos: forbidden") }
	a.round(ctx)
	a.round(ctx)
	split := waitBoundaries(t, client, 2)
	if !slices.Equal(split.Starts, []uint64{0, 0x8000000000000000}) {
		t.Errorf("published %x after a failed weighing, want equal ranges [0 8000000000000000]", split.Starts)
	}
	a.round(ctx)
	if got := generationHolders(t, client, split); !slices.Equal(got, []string{"a", "a"}) {
		t.Errorf("the shard Leases held by %v, want a everywhere", got)
	}
}

// Published only when the ranges hold the Foos past the threshold, and a
// new split does better by a tenth.
func TestRangesSplitAnewOnlyPastTheThresholdAndForAMarkedGain(t *testing.T) {
	tenant := tenants("tenant-", 100)
	if _, ok := rebalanced(EqualBoundaries(16), tenant); !ok {
		t.Error("equal ranges hold tenant-0..99 at 14.4 times their part, and were not split anew")
	}
	split := SplitByWeight(16, tenant)
	if _, ok := rebalanced(split, tenant); ok {
		t.Error("a split at 1.12 times the part, under the threshold, was split anew")
	}
	// One namespace of 100 Foos and 3 of one, over 4 shards: 100 is 3.88
	// times a part whatever the split, and no split does better.
	heavy := map[string]int{"big": 100, "a": 1, "b": 1, "c": 1}
	if _, ok := rebalanced(SplitByWeight(4, heavy), heavy); ok {
		t.Error("a namespace heavier than a part, which no split helps, made the ranges split anew")
	}
}

// The annotation holds the starts after 0; a replica refuses any other
// writing of them, since each names the generation by what it reads.
func TestBoundariesAreReadOnlyAsTheReplicasWriteThem(t *testing.T) {
	b := published([]uint64{0, 0x4000000000000000, 0x8000000000000000, 0xc000000000000000})
	const annotation = "0x4000000000000000,0x8000000000000000,0xc000000000000000"
	if got := b.annotation(); got != annotation {
		t.Fatalf("annotation %q, want %q", got, annotation)
	}
	read, err := parseBoundaries(4, annotation)
	if err != nil || !slices.Equal(read.Starts, b.Starts) || read.Generation != b.Generation {
		t.Errorf("read back %+v, %v; want %+v", read, err, b)
	}
	for _, bad := range []string{
		"0x4000000000000000,0x8000000000000000",                    // 3 shards' starts
		"0x8000000000000000,0x4000000000000000,0xc000000000000000", // falling
		"0x4000000000000000,0x8000000000000000,0xC000000000000000", // upper case
		"0x4000000000000000,0x8000000000000000,0xc00000000000000",  // 15 digits
		"0x0000000000000000,0x8000000000000000,0xc000000000000000", // shard 0 empty
		"4000000000000000,0x8000000000000000,0xc000000000000000",   // no 0x
		"",
	} {
		if _, err := parseBoundaries(4, bad); err == nil {
			t.Errorf("parseBoundaries(4, %q) read it", bad)
		}
	}
}

func TestShardLeaseNamesCarryTheGeneration(t *testing.T) {
	b := published([]uint64{0, 0x8000000000000000})
	name := ShardLeaseName(leaseSet, b.Shard(1))
	if want := "sample-controller-shard-1-of-2-" + b.Generation; name != want {
		t.Fatalf("shard 1's Lease is %q, want %q", name, want)
	}
	if got, ok := parseShardLease(leaseSet, name); !ok || got.Index != 1 || got.Count != 2 ||
		got.Generation != b.Generation {
		t.Errorf("parseShardLease(%q) = %+v, %v", name, got, ok)
	}
	for _, other := range []string{"sample-controller-shard-1-of-2-XYZ", "sample-controller-shard-1-of-2-0123456",
		"sample-controller-boundaries-of-2"} {
		if got, ok := parseShardLease(leaseSet, other); ok {
			t.Errorf("parseShardLease(%q) = %+v, a shard", other, got)
		}
	}
}
