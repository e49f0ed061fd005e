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
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Boundaries split the hash space into shards: shard i is [Starts[i],
// Starts[i+1]), the last one up to 2^64. Starts[0] is 0 and they rise
// strictly, so that every shard is a range the API server accepts.
//
// Equal ranges (EqualBoundaries) split the space, not the namespaces: the
// API server's hash, FNV-1a, moves only its low bits for names that differ
// at their end, so tenant-0 to tenant-99 fall mostly in one of 16 equal
// ranges. Boundaries from the data (SplitByWeight) put the splits between
// the namespaces that are there, at the quantiles of their weight, the
// Foos each holds. The replicas agree on those through a Lease that the
// replica assigned shard 0 writes (Replica.rebalance), and the Generation
// names them: a hash of what the Lease says, so that every replica that
// read the same boundaries names their shards, and their shard Leases,
// alike.
type Boundaries struct {
	Starts []uint64
	// Generation is "" for equal ranges.
	Generation string
}

// ImbalanceThreshold is how far the fullest shard may hold more than its
// part of the Foos (Imbalance) before the replica assigned shard 0 splits
// the ranges anew: 1.25, a quarter more. A new split is published only if it
// brings the imbalance down by a tenth at least (rebalanced), since each
// costs every replica a handover of all its shards: a list of their Foos
// and Deployments, and the Foos unreconciled for a round meanwhile.
const ImbalanceThreshold = 1.25

// RebalancePeriod is how often the replica assigned shard 0 weighs the
// Foos, a paged list of their metadata, to learn whether the ranges still
// split them well; and how long published boundaries stand at least.
const RebalancePeriod = 5 * time.Minute

// EqualBoundaries are count equal ranges of the hash space: shard i starts
// at floor(i * 2^64 / count).
func EqualBoundaries(count int) Boundaries {
	starts := make([]uint64, count)
	for i := range count {
		starts[i] = equalStart(i, count)
	}
	return Boundaries{Starts: starts}
}

// Shard is the index-th shard of b.
func (b Boundaries) Shard(index int) Shard {
	shard := Shard{Index: index, Count: len(b.Starts), Generation: b.Generation}
	if b.Generation != "" {
		shard.start = fmt.Sprintf("0x%016x", b.Starts[index])
		shard.end = endOfSpace
		if index+1 < len(b.Starts) {
			shard.end = fmt.Sprintf("0x%016x", b.Starts[index+1])
		}
	}
	return shard
}

// namespaceHash is the API server's hash of a namespace (KEP-5866): FNV-1a 64.
func namespaceHash(namespace string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(namespace))
	return h.Sum64()
}

// point is a namespace's hash and weight.
type point struct {
	hash   uint64
	weight int
}

// SplitByWeight returns count ranges that split weights, the Foos of each
// namespace, at their quantiles: sorted by hash, the namespaces are cut
// where each shard's weight comes nearest to its part of what is left, and
// each start falls halfway between the hashes of the two namespaces it
// separates, so that a namespace added later near a cut goes to whichever
// side its hash is nearer. A namespace is never split: one namespace holds
// one shard's Foos at least, whatever its weight. Fewer namespaces than
// shards leave shards empty, each a range of its own with no namespace in
// it. Namespaces of no weight count as one, so that the namespaces with no
// Foo yet spread too. No namespace at all, the ranges are equal. Either way
// the boundaries are published ones, with a generation.
func SplitByWeight(count int, weights map[string]int) Boundaries {
	points := make([]point, 0, len(weights))
	total := 0
	for ns, w := range weights {
		w = max(w, 1)
		points = append(points, point{namespaceHash(ns), w})
		total += w
	}
	slices.SortFunc(points, func(a, b point) int { return cmp.Compare(a.hash, b.hash) })
	if len(points) == 0 {
		return published(EqualBoundaries(count).Starts)
	}
	starts := make([]uint64, count)
	// cut is how many namespaces come before the current shard; before is
	// their weight. Each shard aims at an equal part of the weight left,
	// not of the whole: a namespace heavier than a part fills its shard,
	// and the shards after it share the rest.
	cut, before := 0, 0
	for i := range count - 1 {
		left, shards := total-before, count-i
		// The shard's weight is compared as weight*shards against left:
		// exact in integers.
		weight := 0
		for cut < len(points) && (weight+points[cut].weight)*shards <= left {
			weight += points[cut].weight
			cut++
		}
		// One more namespace brings the weight nearer its part, or the
		// shard has none yet: take it.
		if cut < len(points) {
			over := (weight+points[cut].weight)*shards - left
			if under := left - weight*shards; over < under || weight == 0 {
				weight += points[cut].weight
				cut++
			}
		}
		before += weight
		starts[i+1] = startBetween(points, cut, starts[i])
	}
	return published(starts)
}

// published are the boundaries of starts, named by their generation.
func published(starts []uint64) Boundaries {
	b := Boundaries{Starts: starts}
	h := fnv.New32a()
	h.Write([]byte(b.annotation()))
	b.Generation = fmt.Sprintf("%08x", h.Sum32())
	return b
}

// annotation is how the boundaries Lease writes b: the starts after the
// first, 0x and 16 hex digits each, joined by commas.
func (b Boundaries) annotation() string {
	parts := make([]string, 0, len(b.Starts)-1)
	for _, start := range b.Starts[1:] {
		parts = append(parts, fmt.Sprintf("0x%016x", start))
	}
	return strings.Join(parts, ",")
}

// parseBoundaries reads the annotation of the boundaries Lease of count
// shards: count-1 starts, rising strictly.
func parseBoundaries(count int, annotation string) (Boundaries, error) {
	parts := strings.Split(annotation, ",")
	if len(parts) != count-1 {
		return Boundaries{}, fmt.Errorf("%d starts for %d shards, want %d", len(parts), count, count-1)
	}
	starts := make([]uint64, 1, count)
	for _, part := range parts {
		hex, ok := strings.CutPrefix(part, "0x")
		start, err := strconv.ParseUint(hex, 16, 64)
		if !ok || len(hex) != 16 || err != nil {
			return Boundaries{}, fmt.Errorf("start %q is not 0x and 16 hex digits", part)
		}
		if start <= starts[len(starts)-1] {
			return Boundaries{}, fmt.Errorf("start %q does not rise above the one before", part)
		}
		starts = append(starts, start)
	}
	b := published(starts)
	if b.annotation() != annotation { // upper-case digits: named otherwise by each replica
		return Boundaries{}, fmt.Errorf("starts not written as 0x and 16 lower-case hex digits")
	}
	return b, nil
}

// startBetween is the start of a range whose first namespace is the cut-th
// of points (by hash), above previous: halfway between the hashes of the
// namespaces on either side, or just above previous where the cut leaves
// the range before it empty.
func startBetween(points []point, cut int, previous uint64) uint64 {
	var start uint64
	switch {
	case cut == 0:
		start = points[0].hash / 2
	case cut == len(points):
		last := points[len(points)-1].hash
		start = last + (^uint64(0)-last)/2 + 1
	default:
		low, high := points[cut-1].hash, points[cut].hash
		start = low + (high-low+1)/2
	}
	if start <= previous {
		start = previous + 1
	}
	return start
}

// Of is the index of the shard the namespace is in.
func (b Boundaries) Of(namespace string) int {
	h := namespaceHash(namespace)
	i, found := slices.BinarySearch(b.Starts, h)
	if found {
		return i
	}
	return i - 1
}

// Imbalance is how much more than its part the fullest shard of b holds of
// weights: its weight over the mean, 1 for a perfect split.
func (b Boundaries) Imbalance(weights map[string]int) float64 {
	per := make([]int, len(b.Starts))
	total := 0
	for ns, w := range weights {
		w = max(w, 1)
		per[b.Of(ns)] += w
		total += w
	}
	if total == 0 {
		return 1
	}
	return float64(slices.Max(per)) * float64(len(per)) / float64(total)
}

// rebalanced returns the boundaries of count shards split at the weights'
// quantiles, if current holds them past ImbalanceThreshold and the split
// brings that down by a tenth at least. A namespace heavier than a shard's
// part is a shard's alone whatever the split: the imbalance it makes stays,
// and no new split is published for it.
func rebalanced(current Boundaries, weights map[string]int) (Boundaries, bool) {
	now := current.Imbalance(weights)
	if now <= ImbalanceThreshold {
		return Boundaries{}, false
	}
	split := SplitByWeight(len(current.Starts), weights)
	return split, split.Imbalance(weights) <= 0.9*now && split.Generation != current.Generation
}
