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
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The Leases of a sharded controller, all in the leader election namespace and
// named after -leader-elect-id (Config.Lease.Name), "sample-controller":
//   - sample-controller-member-<hash of the identity>: one per replica, which
//     renews it while it runs, labelled with its -shards (LabelShards). The
//     live members of a replica's sharding are those of its own count whose
//     Lease this replica saw renewed within the lease duration.
//   - sample-controller-shard-<index>-of-<count>: one per shard. Its holder
//     reconciles the shard's Foos, and writes for them only while it renews
//     it (the shard's fence, fence.go). The count is in the name, so that
//     replicas told different counts (a change of -shards rolling out) never
//     read one another's Leases as theirs. A shard of published boundaries
//     has their generation after the count, -of-<count>-<8 hex digits>, for
//     the same reason.
//   - sample-controller-boundaries-of-<count>: where the ranges of count
//     shards split, when the replicas split them by weight (boundaries.go):
//     written by the replica assigned shard 0, its holder and renew time who
//     wrote it and when, the starts in the annotation AnnotationBoundaries.
//   - sample-controller: the unsharded leader's (leader.go).
//
// Replicas of two shardings (a rollout that changes -shards, or turns
// sharding on or off) never write for the same Foos at once: each side
// takes nothing while the other's Leases are held, and checks again after
// it takes, before its first write (Replica.confirm, WaitUnsharded), so of
// two sides that take at once the later always sees the earlier. The older
// side keeps every shard until its replicas leave, and then the newer takes
// them all; the unsharded leader is the exception, which the sharded
// replicas give way to whenever its Lease is held (Replica.round).
const (
	// LabelLeaseSet marks the member and shard Leases with the name they
	// are named after.
	LabelLeaseSet = "samplecontroller.k8s.io/lease-set"
	// LabelShards is a member Lease's -shards: a replica shares out its
	// shards among the members of its own count alone, as a replica of
	// another count never takes them.
	LabelShards = "samplecontroller.k8s.io/shards"
	// LabelBoundaries marks the member Lease of a replica that splits the
	// ranges by weight (-shard-boundaries=weighted) with the value
	// BoundariesWeighted. The replicas follow published boundaries only
	// while every live member of their count is so marked: a replica that
	// splits equally (told so, or of a release before boundaries) reads no
	// generation, and sharing shards with it needs the same ranges.
	LabelBoundaries = "samplecontroller.k8s.io/boundaries"
	// BoundariesWeighted is LabelBoundaries' one value.
	BoundariesWeighted = "weighted"
	// AnnotationBoundaries holds the starts of the boundaries Lease
	// (Boundaries.annotation).
	AnnotationBoundaries = "samplecontroller.k8s.io/boundaries"
	memberInfix          = "-member-"
	shardInfix           = "-shard-"
	boundariesInfix      = "-boundaries-of-"
)

// BoundariesLeaseName is the Lease of the boundaries of count shards.
func BoundariesLeaseName(name string, count int) string {
	return name + boundariesInfix + strconv.Itoa(count)
}

// LeasePrefixes are the prefixes of the names of the member, shard and
// boundaries Leases named after name: what the own-names admission policy
// admits.
func LeasePrefixes(name string) []string {
	return []string{name + shardInfix, name + memberInfix, name + boundariesInfix}
}

// memberLeaseName is the member Lease of the replica identity: a hash, since
// an identity (host name and UUID, NewIdentity) is no valid object name.
func memberLeaseName(name, identity string) string {
	h := fnv.New32a()
	h.Write([]byte(identity))
	return fmt.Sprintf("%s%s%08x", name, memberInfix, h.Sum32())
}

// ShardLeaseName is the Lease of the shard.
func ShardLeaseName(name string, shard Shard) string { return name + shardInfix + shard.String() }

// parseShardLease returns the shard whose Lease is leaseName, if it is one of
// the shard Leases named after name.
func parseShardLease(name, leaseName string) (Shard, bool) {
	rest, ok := strings.CutPrefix(leaseName, name+shardInfix)
	if !ok {
		return Shard{}, false
	}
	index, count, ok := strings.Cut(rest, "-of-")
	if !ok {
		return Shard{}, false
	}
	count, generation, _ := strings.Cut(count, "-")
	i, err1 := strconv.Atoi(index)
	n, err2 := strconv.Atoi(count)
	if err1 != nil || err2 != nil || i < 0 || i >= n || (generation != "" && !isGeneration(generation)) {
		return Shard{}, false
	}
	return Shard{Index: i, Count: n, Generation: generation}, true
}

// isGeneration reports whether s names a generation of boundaries: 8
// lower-case hex digits (published).
func isGeneration(s string) bool {
	return len(s) == 8 && strings.Trim(s, "0123456789abcdef") == ""
}

// holderOf is the Lease's holder, "" when released.
func holderOf(lease *coordinationv1.Lease) string {
	if lease == nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// newLease is a Lease named name held by identity from now, labelled as set's.
func newLease(namespace, name, set, identity string, duration time.Duration, now time.Time) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, Labels: map[string]string{LabelLeaseSet: set},
	}}
	hold(lease, identity, duration, now)
	return lease
}

// newMemberLease is the member Lease of identity, a replica of count shards
// that splits them by weight, or equally.
func newMemberLease(namespace, set, identity string, count int, weighted bool, duration time.Duration,
	now time.Time) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: memberLeaseName(set, identity),
		Labels: map[string]string{LabelLeaseSet: set, LabelShards: strconv.Itoa(count)},
	}}
	if weighted {
		lease.Labels[LabelBoundaries] = BoundariesWeighted
	}
	hold(lease, identity, duration, now)
	return lease
}

// hold makes identity the holder of lease from now: acquired now, and one
// transition more, unless it held it already.
func hold(lease *coordinationv1.Lease, identity string, duration time.Duration, now time.Time) {
	at := metav1.NewMicroTime(now)
	if holderOf(lease) != identity {
		if lease.ResourceVersion != "" { // an existing Lease changes hands

			lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
		}
		lease.Spec.HolderIdentity = ptr.To(identity)
		lease.Spec.AcquireTime = &at
	}
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(duration / time.Second))
	lease.Spec.RenewTime = &at
}

// release makes lease held by no one.
func release(lease *coordinationv1.Lease) {
	lease.Spec.HolderIdentity = nil
	lease.Spec.AcquireTime = nil
	lease.Spec.RenewTime = nil
}
