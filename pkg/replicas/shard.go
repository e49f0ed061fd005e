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

// Sharding splits the Foos among the replicas: every replica
// reconciles the Foos of the shards it holds, and lists and watches only
// those, filtered by the API server where it can (KEP-5866, server-side
// sharded list and watch), else by the replica itself.
//
// A shard is a range of the 64-bit FNV-1a hash of an object's namespace,
// the hash the API server computes for a shardSelector. The namespace, not
// the UID: a Foo and every object it owns share a namespace, so they are
// always in the same shard, and the replica that reconciles a Foo caches its
// Deployment too. The UID would spread a Foo and its Deployment over two
// shards. The price: the Foos of one namespace are one replica's work, so a
// cluster whose Foos are mostly in one namespace gets little from sharding
// (docs/operations.md).
//
// Who holds which shard: a Lease per shard (leases.go), assigned among the
// live replicas, each of which renews a Lease of its own (assign.go).
//
// Where the ranges split: equally by default, or, with -shard-boundaries=
// weighted, at the quantiles of the namespaces that hold Foos, weighted by
// their Foos, which the replicas agree on through a Lease (boundaries.go).

package replicas

import (
	"context"
	"fmt"
	"math/bits"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Field is the field a shard's range is of: the object's namespace.
const Field = "object.metadata.namespace"

// Shard is the Index-th of Count ranges of the hash space: of equal ranges,
// or of the boundaries of a Generation (Boundaries.Shard).
type Shard struct {
	Index, Count int
	// Generation names the boundaries the shard is a range of; "" for
	// equal ranges.
	Generation string
	// start and end are the range of a Generation's shard, as the API
	// server writes them; "" for equal ranges (bound).
	start, end string
}

// String names the shard as its Lease does: "3-of-16", or "3-of-16-<the
// generation>" for a range of published boundaries.
func (s Shard) String() string {
	if s.Generation == "" {
		return fmt.Sprintf("%d-of-%d", s.Index, s.Count)
	}
	return fmt.Sprintf("%d-of-%d-%s", s.Index, s.Count, s.Generation)
}

// endOfSpace is the end of the last range, 2^64, which takes 17 hex digits.
const endOfSpace = "0x10000000000000000"

// bound is the start of the i-th of count ranges, floor(i * 2^64 / count),
// as the API server writes it: 0x and 16 lowercase hex digits.
func bound(i, count int) string {
	if i >= count {
		return endOfSpace
	}
	return fmt.Sprintf("0x%016x", equalStart(i, count))
}

// equalStart is the start of the i-th of count equal ranges, (i << 64) / count.
func equalStart(i, count int) uint64 {
	start, _ := bits.Div64(uint64(i), 0, uint64(count))
	return start
}

// Requirement is the shard's range of Field, [start, end).
func (s Shard) Requirement() sharding.ShardRangeRequirement {
	if s.Generation != "" {
		return sharding.ShardRangeRequirement{Key: Field, Start: s.start, End: s.end}
	}
	return sharding.ShardRangeRequirement{Key: Field, Start: bound(s.Index, s.Count), End: bound(s.Index+1, s.Count)}
}

// Selector is the shardSelector of the shard's objects, as ListOptions takes
// it: shardRange(object.metadata.namespace, '0x...', '0x...').
func (s Shard) Selector() sharding.Selector { return sharding.NewSelector(s.Requirement()) }

// Of returns the shard, of count equal ranges, that the objects of
// namespace are in.
func Of(namespace string, count int) Shard {
	hash := "0x" + sharding.HashField(namespace)
	for i := range count {
		if !sharding.HexLess(hash, bound(i+1, count)) {
			continue
		}
		return Shard{Index: i, Count: count}
	}
	return Shard{Index: count - 1, Count: count} // not reached: the last range ends at 2^64
}

// Narrow makes lw list and watch the shard's objects alone. It asks the API
// server (ListOptions.ShardSelector), and drops whatever else the server
// sends: a server without the ShardedListAndWatch feature gate, or older
// than 1.36, ignores the selector and sends everything. So the cache holds
// the shard's objects alone either way; the filtering mode (mode.go) only
// changes what crosses the network.
func (s Shard) Narrow(lw *cache.ListWatch) *cache.ListWatch {
	selector := s.Selector()
	list, watchFunc := lw.ListWithContextFunc, lw.WatchFuncWithContext
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.ShardSelector = selector.String()
			obj, err := list(ctx, opts)
			if err != nil {
				return nil, err
			}
			return obj, keepMatching(obj, selector)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.ShardSelector = selector.String()
			w, err := watchFunc(ctx, opts)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(event watch.Event) (watch.Event, bool) {
				switch event.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					matches, err := selector.Matches(event.Object)
					return event, err != nil || matches // an object it cannot read is the informer's to report
				default: // bookmarks and errors
					return event, true
				}
			}), nil
		},
	}
}

// keepMatching removes from list the items selector does not match.
func keepMatching(list runtime.Object, selector sharding.Selector) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		matches, err := selector.Matches(item)
		if err != nil {
			return err
		}
		if matches {
			kept = append(kept, item)
		}
	}
	return meta.SetList(list, kept)
}
