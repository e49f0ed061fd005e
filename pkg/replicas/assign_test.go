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
	"slices"
	"testing"
)

// shares counts the shards of each member in holders.
func shares(holders []string) map[string]int {
	counts := map[string]int{}
	for _, h := range holders {
		counts[h]++
	}
	return counts
}

func TestEveryMemberGetsItsFairShareWithinOneShard(t *testing.T) {
	for _, tc := range []struct {
		count   int
		members []string
		want    map[string]int
	}{
		{16, []string{"a", "b", "c"}, map[string]int{"a": 6, "b": 5, "c": 5}},
		{16, []string{"a", "b", "c", "d"}, map[string]int{"a": 4, "b": 4, "c": 4, "d": 4}},
		{16, []string{"b", "a"}, map[string]int{"a": 8, "b": 8}},
		{2, []string{"a", "b", "c"}, map[string]int{"a": 1, "b": 1}},
		{1, []string{"a"}, map[string]int{"a": 1}},
		{4, nil, map[string]int{"": 4}},
	} {
		t.Run(fmt.Sprintf("%d over %v", tc.count, tc.members), func(t *testing.T) {
			holders := Assign(tc.count, tc.members)
			if len(holders) != tc.count {
				t.Fatalf("%d holders for %d shards", len(holders), tc.count)
			}
			got := shares(holders)
			for member, n := range tc.want {
				if got[member] != n {
					t.Errorf("%q holds %d shards, want %d (%v)", member, got[member], n, holders)
				}
			}
		})
	}
}

func TestEveryReplicaComputesTheSameAssignmentWhateverOrderItReadsTheMembersIn(t *testing.T) {
	a := Assign(16, []string{"x", "y", "z"})
	b := Assign(16, []string{"z", "x", "y", "x"})
	if !slices.Equal(a, b) {
		t.Errorf("the same members in another order give %v and %v", a, b)
	}
}

// A member joining takes its share, and the shards others give up besides
// are few: at most one per member whose share shrank by one.
func TestAJoiningMemberMovesFewShardsBesidesItsShare(t *testing.T) {
	before := Assign(16, []string{"x", "y", "z"})
	after := Assign(16, []string{"x", "y", "z", "w"})
	moved := 0
	for i := range before {
		if before[i] != after[i] && after[i] != "w" {
			moved++
		}
	}
	if got := shares(after)["w"]; got != 4 {
		t.Errorf("the new member holds %d shards, want 4", got)
	}
	if moved > 3 {
		t.Errorf("%d shards moved between the members that stayed, want at most 3: %v -> %v", moved, before, after)
	}
}

// replicaIdentities are eleven identities as NewIdentity makes them for one
// ReplicaSet's pods (host name, underscore, UUID), made up once and written
// out. In name order of their pods' suffixes: 4hxc6, 5qg5h, cbb5f, cg9ks,
// cs9tg, jpfs8, kll4r, m4bm2, rssqz, shnlv, zvfnf.
var replicaIdentities = []string{
	"example-7d9f8b6c4-zvfnf_e01b0ac6-2e8e-4bae-8f22-91bbcccc33d9",
	"example-7d9f8b6c4-jpfs8_47209e37-ec94-442d-8627-da9974eb673e",
	"example-7d9f8b6c4-shnlv_83a52e03-b07a-4e47-80c5-6ad99fe6b7c6",
	"example-7d9f8b6c4-cg9ks_6b86fe1e-98e4-4df8-b406-a5b227c81a04",
	"example-7d9f8b6c4-kll4r_33d1fd7a-fb82-431f-8d14-015e00031572",
	"example-7d9f8b6c4-4hxc6_55630e93-eb31-433e-b744-c09d37958411",
	"example-7d9f8b6c4-cbb5f_7e88400d-911c-42ad-b162-cf2f65566217",
	"example-7d9f8b6c4-5qg5h_e7e0539a-c7b0-4498-acac-fc639940db8a",
	"example-7d9f8b6c4-rssqz_ea65f5ef-2f96-4b5d-ba6a-e3651a0f0896",
	"example-7d9f8b6c4-cs9tg_ffeaf4e5-3064-417b-a7d9-840578e1fb34",
	"example-7d9f8b6c4-m4bm2_82bf0e85-4e91-4428-8d3f-c2ceb20726ac",
}

// moved counts the shards whose holder differs between before and after.
func moved(before, after []string) int {
	n := 0
	for i := range before {
		if before[i] != after[i] {
			n++
		}
	}
	return n
}

// m4bm2 joins the other ten at 256 shards. Of ten, 256 = 10*25 + 6: the first
// six in name order hold 26, the other four 25; of eleven, 256 = 11*23 + 3:
// the first three hold 24, the rest 23. m4bm2, eighth, takes 23; 4hxc6, 5qg5h
// and cbb5f give up 2, cg9ks, cs9tg and jpfs8 3, kll4r, rssqz, shnlv and
// zvfnf 2: all ten shrink. The fewest moves are m4bm2's 23. Besides, a member
// that shrank passes on shards it ranks low when m4bm2 took fewer of its
// shards than it gives up, and takes others' when m4bm2 took more; the bound
// allows one such shard a member that shrank: at most 23 + 10 = 33. The
// greedy fill guarantees no bound (a shard passed on can fill its new holder,
// which passes on another), but with ranks that behave as independent draws a
// join stays near it, where unmixed FNV-1a ranks moved far more.
func TestAReplicaJoiningTenAt256ShardsMovesItsShareAndAtMostOneShardPerMemberThatShrank(t *testing.T) {
	newcomer := replicaIdentities[10]
	before := Assign(256, replicaIdentities[:10])
	after := Assign(256, replicaIdentities)
	if got := shares(after)[newcomer]; got != 23 {
		t.Errorf("the joining replica holds %d shards, want 23", got)
	}
	n := moved(before, after)
	t.Logf("a join moved %d of 256 shards", n)
	if n > 33 {
		t.Errorf("a join moved %d shards, want at most 23 + 10 = 33", n)
	}
}

// 4hxc6, first in name order, leaves the eleven at 256 shards: it held 24
// (256 = 11*23 + 3). Of the ten left, 256 = 10*25 + 6: 5qg5h and cbb5f grow
// from 24 to 26, cg9ks, cs9tg, jpfs8 and kll4r from 23 to 26, m4bm2, rssqz,
// shnlv and zvfnf from 23 to 25. A leave is a join the other way (4hxc6
// joining the ten), in which all ten shrink: at most 24 + 10 = 34 move, on the
// reasoning of the join above and with its caveat.
func TestAReplicaLeavingElevenAt256ShardsMovesItsShareAndAtMostOneShardPerMemberThatGrew(t *testing.T) {
	leaver := replicaIdentities[5]
	var rest []string
	for _, id := range replicaIdentities {
		if id != leaver {
			rest = append(rest, id)
		}
	}
	before := Assign(256, replicaIdentities)
	after := Assign(256, rest)
	if got := shares(before)[leaver]; got != 24 {
		t.Errorf("the leaving replica held %d shards, want 24", got)
	}
	n := moved(before, after)
	t.Logf("a leave moved %d of 256 shards", n)
	if n > 34 {
		t.Errorf("a leave moved %d shards, want at most 24 + 10 = 34", n)
	}
}
