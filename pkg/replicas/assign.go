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
	"cmp"
	"hash/fnv"
	"slices"
	"strconv"
)

// Assign returns the member that should hold each of count shards, by
// index, given the live members: every replica computes it from the same
// member Leases and comes to the same answer, with no coordinator.
//
// Each member gets its fair share, count/len(members) shards, and the first
// count%len(members) of them in name order one more: within one shard of
// each other. Within that, each shard goes to the member that ranks highest
// for it (rendezvous hashing: a hash of the member and the shard), taken
// pair by pair from the best ranked down. A member joining or leaving so
// moves few shards besides its own share: a shard moves only when its
// member is gone or full, and a handover pauses the shard's reconciling for
// its new holder's list (docs/operations.md).
func Assign(count int, members []string) []string {
	holders := make([]string, count)
	if len(members) == 0 {
		return holders
	}
	sorted := slices.Clone(members)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	capacity := make(map[string]int, len(sorted))
	for i, member := range sorted {
		capacity[member] = count / len(sorted)
		if i < count%len(sorted) {
			capacity[member]++
		}
	}
	type pair struct {
		shard  int
		member string
		rank   uint64
	}
	pairs := make([]pair, 0, count*len(sorted))
	for shard := range count {
		for _, member := range sorted {
			pairs = append(pairs, pair{shard, member, rank(member, shard)})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		return cmp.Or(cmp.Compare(b.rank, a.rank), cmp.Compare(a.shard, b.shard), cmp.Compare(a.member, b.member))
	})
	for _, p := range pairs {
		if holders[p.shard] == "" && capacity[p.member] > 0 {
			holders[p.shard] = p.member
			capacity[p.member]--
		}
	}
	return holders
}

// rank is how much member is preferred for shard: FNV-1a 64 of
// "member/shard", mixed by splitmix64's finalizer. Assign sorts by rank, so
// the high bits decide; FNV-1a multiplies each byte in by a prime whose set
// bits are low (2^40 + 0x1b3), and the shard's digits, the last bytes, reach
// the high bits only through carries. Unmixed, one member's ranks over the
// shards were alike there, so a member ranked high for many shards at once,
// and a join or leave moved far more than its share. The finalizer makes every
// bit of the hash reach every bit of the rank, with no seed, so that the ranks
// behave as independent draws and every replica still computes the same ones.
func rank(member string, shard int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member + "/" + strconv.Itoa(shard)))
	z := h.Sum64()
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
