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
	"fmt"
	"maps"
	"slices"
	"testing"
)

// namespacesPerShard counts the namespaces of weights in each shard of b.
func namespacesPerShard(b Boundaries, weights map[string]int) []int {
	counts := make([]int, len(b.Starts))
	for ns := range weights {
		counts[b.Of(ns)]++
	}
	return counts
}

// tenants are the namespaces prefix0 .. prefix<n-1>, each of weight one.
func tenants(prefix string, n int) map[string]int {
	weights := map[string]int{}
	for i := range n {
		weights[fmt.Sprintf("%s%d", prefix, i)] = 1
	}
	return weights
}

// Equal ranges put most of tenant-0 .. tenant-99 in one of 16 shards, as
// docs/operations.md says (90 of them); split at the quantiles, every shard
// holds 6 or 7: 100 over 16 is 6.25.
func TestBoundariesFromTheDataSpreadNamesThatDifferAtTheirEnd(t *testing.T) {
	weights := tenants("tenant-", 100)
	equal := namespacesPerShard(EqualBoundaries(16), weights)
	if got := slices.Max(equal); got != 90 {
		t.Errorf("equal ranges: the fullest shard holds %d of tenant-0..99, want 90 (%v)", got, equal)
	}
	split := namespacesPerShard(SplitByWeight(16, weights), weights)
	for i, n := range split {
		if n != 6 && n != 7 {
			t.Errorf("split by weight: shard %d holds %d namespaces, want 6 or 7 (%v)", i, n, split)
		}
	}
}

// Weighted by Foos: one namespace of 30 Foos and 30 of one Foo each, over 4
// shards of 15 Foos each at best: the heavy namespace alone in a shard (it
// cannot be split), the 30 others three shards of 10 each.
func TestBoundariesFromTheDataWeighNamespacesByTheirFoos(t *testing.T) {
	weights := tenants("team-", 30)
	weights["big"] = 30
	b := SplitByWeight(4, weights)
	foos := make([]int, 4)
	for ns, w := range weights {
		foos[b.Of(ns)] += w
	}
	bigShard := b.Of("big")
	if foos[bigShard] != 30 {
		t.Errorf("the shard of the namespace of 30 Foos holds %d Foos, want 30 alone (%v)", foos[bigShard], foos)
	}
	for i, n := range foos {
		if i != bigShard && (n < 9 || n > 11) {
			t.Errorf("shard %d holds %d Foos, want about 10 (%v)", i, n, foos)
		}
	}
}

// Every shard is a range the API server takes: starts rising strictly from
// 0, whatever the namespaces, fewer than the shards included.
func TestBoundariesFromTheDataAreRangesTheAPIServerTakes(t *testing.T) {
	for _, weights := range []map[string]int{nil, {"only": 5}, tenants("a-", 3), tenants("customer-", 1000)} {
		b := SplitByWeight(16, weights)
		if len(b.Starts) != 16 || b.Starts[0] != 0 {
			t.Fatalf("%d namespaces: starts %x, want 16 from 0", len(weights), b.Starts)
		}
		for i := 1; i < len(b.Starts); i++ {
			if b.Starts[i] <= b.Starts[i-1] {
				t.Errorf("%d namespaces: start %d, %x, is not above the one before, %x", len(weights), i,
					b.Starts[i], b.Starts[i-1])
			}
		}
		for _, ns := range slices.Sorted(maps.Keys(weights)) {
			if i := b.Of(ns); i < 0 || i >= 16 {
				t.Errorf("%s in shard %d of 16", ns, i)
			}
		}
	}
}

// tenant-0..99 over 16 equal ranges: the fullest holds 90 of 100, 14.4
// times its part (6.25); split by weight, 7, 1.12 times.
func TestImbalanceIsTheFullestShardOverItsPart(t *testing.T) {
	weights := tenants("tenant-", 100)
	if got := EqualBoundaries(16).Imbalance(weights); got != 14.4 {
		t.Errorf("equal ranges: imbalance %v, want 14.4", got)
	}
	if got := SplitByWeight(16, weights).Imbalance(weights); got != 1.12 {
		t.Errorf("split by weight: imbalance %v, want 1.12", got)
	}
}
