//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/pkg/replicas"
)

// Enough of each message of the own-leases policy
// (artifacts/deploy/leases-policy.yaml) to tell which rule refused.
var (
	ownLeasesNameRefusal = "writes the Lease " + deployName + " and, sharded, the Leases " +
		deployName + "-member-<8 hex digits>, " + deployName + "-shard-<index>-of-<count>[-<8 hex digits of a " +
		"generation>] and " + deployName + "-boundaries-of-<count>"
	ownLeasesDeleteRefusal = "deletes its member Leases " + deployName + "-member-<8 hex digits>, and shard Leases " +
		deployName + "-shard-<index>-of-<count>[-<generation>] held by none, alone"
	ownLeasesLabelsRefusal = "creates its Leases with the label " + replicas.LabelLeaseSet
	ownLeasesKeptRefusal   = "updates its Leases keeping their labels, annotations, finalizers and owners"
	ownLeasesStartsRefusal = "writes its boundaries Leases " + deployName + "-boundaries-of-<count> with the " +
		"annotation " + replicas.AnnotationBoundaries
	ownLeasesDurationRefusal = fmt.Sprintf("claim at most %d seconds", int(options.MaxLeaseDuration/time.Second))
	ownLeasesHolderRefusal   = "held by a replica, <host name of at most 64 characters>_<UUID>, or by none"
	ownLeasesElectionRefusal = "writes no strategy or preferredHolder"
)

// expectOwnLeasesAlone checks the own-leases policy, in force, with saKube,
// a client of the deployed ServiceAccount, whose Roles let it create any
// Lease of the names the own-names policy admits in its namespace, and
// update and delete every Lease there: a Lease of another shape of name,
// claiming 2147483647 s, held by 10 KiB, with a label or annotation of its
// own, a coordinated leader election field, or a leader's Lease deleted,
// refused; and of the boundaries split by weight, starts of another shape
// or number, a generation of another shape, a label or annotation where
// the replicas write none, or the boundaries Lease deleted, refused too; the
// Leases as pkg/replicas writes them admitted (dry runs). First real
// sharded replicas, with the token of kubeconfig, one splitting equally and
// one by weight, each join, take both their shards (the latter publishing
// its boundaries first) and leave, their member Lease deleted and their
// shards released, without one refusal. Without the policy every refusal
// below is admitted, as RBAC and the own-names policy allow it.
func expectOwnLeasesAlone(t *testing.T, saKube kubernetes.Interface, kubeconfig string) {
	ctx := context.Background()
	waitPolicyChecked(t, samplecontroller.OwnLeasesPolicyName)
	waitOwnLeasesPolicyInForce(t, saKube)

	// First the replicas, before the Leases below: a leader's Lease held
	// would keep them from taking shards.
	expectShardedReplicaWritesItsLeases(t, kubeconfig, replicas.BoundariesEqual)
	expectShardedReplicaWritesItsLeases(t, kubeconfig, replicas.BoundariesWeighted)

	identity, err := replicas.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	// lease is a Lease of deployNamespace as pkg/replicas writes it: the
	// leader's unlabelled, the others labelled with their set.
	lease := func(name string) *coordinationv1.Lease {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: deployNamespace, Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(identity), LeaseDurationSeconds: ptr.To[int32](15),
				AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](0)},
		}
		if name != deployName {
			l.Labels = map[string]string{replicas.LabelLeaseSet: deployName}
		}
		return l
	}
	with := func(l *coordinationv1.Lease, change func(*coordinationv1.Lease)) *coordinationv1.Lease {
		change(l)
		return l
	}
	leases := saKube.CoordinationV1().Leases(deployNamespace)
	create := func(l *coordinationv1.Lease) error {
		_, err := leases.Create(ctx, l, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	update := func(l *coordinationv1.Lease) error {
		_, err := leases.Update(ctx, l, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	remove := func(name string) error {
		return leases.Delete(ctx, name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	}
	// stored creates, as an administrator, a Lease for the account to
	// update or delete.
	stored := func(l *coordinationv1.Lease) *coordinationv1.Lease {
		t.Helper()
		created, err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Create(ctx, l, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	// member is stored, for updates and deletes; fresh is not, so that a
	// create the policy did not refuse would be admitted.
	member, fresh := deployName+"-member-0123abcd", deployName+"-member-89abcdef"
	leader := stored(lease(deployName))
	storedMember := stored(lease(member))
	// Shard Leases of another count, one released, as a replica prunes
	// them, one held.
	heldShard := stored(lease(deployName + "-shard-1-of-3"))
	releasedShard := stored(with(lease(deployName+"-shard-2-of-3"), func(l *coordinationv1.Lease) {
		l.Spec.HolderIdentity = nil
	}))
	other := stored(with(lease("kube-scheduler"), func(l *coordinationv1.Lease) { l.Labels = nil }))
	// Of the boundaries split by weight: the Lease of 2 shards' as the
	// replica assigned shard 0 publishes it, the Lease of 3 shards' with an
	// administrator's annotation beside its starts, and a shard Lease of
	// published boundaries released.
	boundaries2, boundaries3 := deployName+"-boundaries-of-2", deployName+"-boundaries-of-3"
	starts := func(l *coordinationv1.Lease, annotation string) *coordinationv1.Lease {
		return with(l, func(l *coordinationv1.Lease) {
			l.Annotations = map[string]string{replicas.AnnotationBoundaries: annotation}
		})
	}
	storedBoundaries := stored(starts(lease(boundaries2), "0x8000000000000000"))
	annotatedBoundaries := stored(with(starts(lease(boundaries3), "0x5555555555555555,0xaaaaaaaaaaaaaaaa"),
		func(l *coordinationv1.Lease) { l.Annotations["example.com/note"] = "kept" }))
	releasedGeneration := stored(with(lease(deployName+"-shard-1-of-2-0123abcd"), func(l *coordinationv1.Lease) {
		l.Spec.HolderIdentity = nil
	}))
	// taken is the boundaries Lease as another replica writes it anew,
	// with the starts annotation: taken over, renewed, one transition more.
	taken := func(l *coordinationv1.Lease, annotation string) *coordinationv1.Lease {
		return with(l.DeepCopy(), func(l *coordinationv1.Lease) {
			at := metav1.NewMicroTime(time.Now())
			l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = ptr.To(identity), &at, &at
			l.Spec.LeaseTransitions = ptr.To(*l.Spec.LeaseTransitions + 1)
			l.Annotations[replicas.AnnotationBoundaries] = annotation
		})
	}
	// The most starts, of 256 shards: 255, rising by 2^56.
	parts := make([]string, 0, 255)
	for i := 1; i <= 255; i++ {
		parts = append(parts, fmt.Sprintf("0x%02x00000000000000", i))
	}
	startsOf256 := strings.Join(parts, ",")
	weightedMember := func(l *coordinationv1.Lease) {
		l.Labels[replicas.LabelShards] = "2"
		l.Labels[replicas.LabelBoundaries] = replicas.BoundariesWeighted
	}

	refused := []struct {
		what    string
		err     error
		message string
	}{
		// Names the own-names policy's prefixes admit, of no shape the
		// replicas write.
		{"create Lease " + deployName + "-member-planted", create(lease(deployName + "-member-planted")), ownLeasesNameRefusal},
		{"create Lease " + deployName + "-shard-3-of-2", create(lease(deployName + "-shard-3-of-2")), ownLeasesNameRefusal},
		{"create Lease " + deployName + "-shard-0-of-999", create(lease(deployName + "-shard-0-of-999")), ownLeasesNameRefusal},
		{"update Lease " + other.Name, update(with(other.DeepCopy(), func(l *coordinationv1.Lease) {
			l.Spec.HolderIdentity = ptr.To(identity)
		})), ownLeasesNameRefusal},
		{"delete Lease " + deployName, remove(deployName), ownLeasesDeleteRefusal},
		{"delete Lease " + other.Name, remove(other.Name), ownLeasesDeleteRefusal},
		{"delete Lease " + heldShard.Name + ", held", remove(heldShard.Name), ownLeasesDeleteRefusal},
		// Item 4 of issue 73: the leader's Lease claiming 68 years, with
		// another holder.
		{"update Lease " + deployName + " to 2147483647 s", update(with(leader.DeepCopy(), func(l *coordinationv1.Lease) {
			l.Spec.LeaseDurationSeconds = ptr.To[int32](2147483647)
			l.Spec.HolderIdentity = ptr.To("attacker_00000000-0000-0000-0000-000000000000")
		})), ownLeasesDurationRefusal},
		{"create Lease " + fresh + " of 601 s", create(with(lease(fresh), func(l *coordinationv1.Lease) {
			l.Spec.LeaseDurationSeconds = ptr.To[int32](601)
		})), ownLeasesDurationRefusal},
		{"create Lease " + fresh + " held by 10 KiB", create(with(lease(fresh), func(l *coordinationv1.Lease) {
			l.Spec.HolderIdentity = ptr.To(strings.Repeat("x", 10<<10))
		})), ownLeasesHolderRefusal},
		{"update Lease " + deployName + " held by kube-controller-manager", update(with(leader.DeepCopy(), func(l *coordinationv1.Lease) {
			l.Spec.HolderIdentity = ptr.To("kube-controller-manager")
		})), ownLeasesHolderRefusal},
		{"create Lease " + fresh + " with a foreign label", create(with(lease(fresh), func(l *coordinationv1.Lease) {
			l.Labels["team.example.com/owner"] = "planted"
		})), ownLeasesLabelsRefusal},
		{"create Lease " + deployName + " with the set's label", create(with(lease(deployName), func(l *coordinationv1.Lease) {
			l.Labels = map[string]string{replicas.LabelLeaseSet: deployName}
		})), ownLeasesLabelsRefusal},
		{"create Lease " + fresh + " of 999 shards", create(with(lease(fresh), func(l *coordinationv1.Lease) {
			l.Labels[replicas.LabelShards] = "999"
		})), ownLeasesLabelsRefusal},
		{"create Lease " + deployName + "-shard-0-of-2 labelled with its count",
			create(with(lease(deployName+"-shard-0-of-2"), func(l *coordinationv1.Lease) {
				l.Labels[replicas.LabelShards] = "2"
			})), ownLeasesLabelsRefusal},
		{"create Lease " + fresh + " with an annotation", create(with(lease(fresh), func(l *coordinationv1.Lease) {
			l.Annotations = map[string]string{"planted": strings.Repeat("x", 10<<10)}
		})), ownLeasesLabelsRefusal},
		{"create Lease " + fresh + " with a finalizer", create(with(lease(fresh), func(l *coordinationv1.Lease) {
			l.Finalizers = []string{"example.com/keep"}
		})), ownLeasesLabelsRefusal},
		{"update Lease " + member + " with a foreign label", update(with(storedMember.DeepCopy(), func(l *coordinationv1.Lease) {
			l.Labels["team.example.com/owner"] = "planted"
		})), ownLeasesKeptRefusal},
		{"update Lease " + member + " without its set's label", update(with(storedMember.DeepCopy(), func(l *coordinationv1.Lease) {
			l.Labels = nil
		})), ownLeasesKeptRefusal},
		// Of the boundaries split by weight. Names of no shape the
		// replicas write: a count above -shards', a generation of 9 or 7
		// hex digits, or of another alphabet (upper case is no object
		// name).
		{"create Lease " + deployName + "-boundaries-of-999",
			create(starts(lease(deployName+"-boundaries-of-999"), "0x8000000000000000")), ownLeasesNameRefusal},
		{"create Lease " + deployName + "-shard-0-of-2-0123abcd9",
			create(lease(deployName + "-shard-0-of-2-0123abcd9")), ownLeasesNameRefusal},
		{"create Lease " + deployName + "-shard-0-of-2-0123abcg", create(lease(deployName + "-shard-0-of-2-0123abcg")),
			ownLeasesNameRefusal},
		{"create Lease " + deployName + "-shard-0-of-2-0123abc", create(lease(deployName + "-shard-0-of-2-0123abc")),
			ownLeasesNameRefusal},
		// Starts of another shape or number than Boundaries.annotation's.
		{"create Lease " + boundaries2 + " of upper-case starts",
			create(starts(lease(boundaries2), "0x8000000000000ABC")), ownLeasesStartsRefusal},
		{"create Lease " + boundaries2 + " of a start of 15 hex digits",
			create(starts(lease(boundaries2), "0x800000000000000")), ownLeasesStartsRefusal},
		{"create Lease " + boundaries2 + " of 2 starts", create(starts(lease(boundaries2),
			"0x4000000000000000,0x8000000000000000")), ownLeasesStartsRefusal},
		{"create Lease " + boundaries2 + " without starts", create(lease(boundaries2)), ownLeasesStartsRefusal},
		{"update Lease " + boundaries2 + " to starts of 17 hex digits",
			update(taken(storedBoundaries, "0x08000000000000000")), ownLeasesStartsRefusal},
		// Metadata where the replicas write none.
		{"create Lease " + boundaries2 + " with a foreign second annotation",
			create(with(starts(lease(boundaries2), "0x8000000000000000"), func(l *coordinationv1.Lease) {
				l.Annotations["planted"] = "x"
			})), ownLeasesLabelsRefusal},
		{"create Lease " + boundaries2 + " labelled with its count",
			create(with(starts(lease(boundaries2), "0x8000000000000000"), func(l *coordinationv1.Lease) {
				l.Labels[replicas.LabelShards] = "2"
			})), ownLeasesLabelsRefusal},
		{"create Lease " + fresh + " labelled " + replicas.LabelBoundaries + ": " + replicas.BoundariesEqual,
			create(with(lease(fresh), func(l *coordinationv1.Lease) {
				weightedMember(l)
				l.Labels[replicas.LabelBoundaries] = replicas.BoundariesEqual
			})), ownLeasesLabelsRefusal},
		{"create Lease " + fresh + " labelled " + replicas.LabelBoundaries + " without its count",
			create(with(lease(fresh), func(l *coordinationv1.Lease) {
				l.Labels[replicas.LabelBoundaries] = replicas.BoundariesWeighted
			})), ownLeasesLabelsRefusal},
		{"create Lease " + deployName + "-shard-0-of-2-0123abcd labelled " + replicas.LabelBoundaries,
			create(with(lease(deployName+"-shard-0-of-2-0123abcd"), func(l *coordinationv1.Lease) {
				l.Labels[replicas.LabelBoundaries] = replicas.BoundariesWeighted
			})), ownLeasesLabelsRefusal},
		{"create Lease " + deployName + "-shard-0-of-2-0123abcd with starts",
			create(starts(lease(deployName+"-shard-0-of-2-0123abcd"), "0x8000000000000000")), ownLeasesLabelsRefusal},
		{"create Lease " + fresh + " with starts", create(with(starts(lease(fresh), "0x8000000000000000"),
			weightedMember)), ownLeasesLabelsRefusal},
		{"update Lease " + member + " with starts", update(starts(storedMember.DeepCopy(), "0x8000000000000000")),
			ownLeasesKeptRefusal},
		{"update Lease " + boundaries2 + " with a foreign annotation", update(with(taken(storedBoundaries,
			"0x4000000000000000"), func(l *coordinationv1.Lease) { l.Annotations["planted"] = "x" })),
			ownLeasesKeptRefusal},
		{"update Lease " + boundaries3 + " without an administrator's annotation",
			update(with(taken(annotatedBoundaries, "0x4000000000000000,0x8000000000000000"),
				func(l *coordinationv1.Lease) { delete(l.Annotations, "example.com/note") })), ownLeasesKeptRefusal},
		{"update Lease " + boundaries2 + " with the boundaries label", update(with(taken(storedBoundaries,
			"0x4000000000000000"), func(l *coordinationv1.Lease) {
			l.Labels[replicas.LabelBoundaries] = replicas.BoundariesWeighted
		})), ownLeasesKeptRefusal},
		{"delete Lease " + boundaries2, remove(boundaries2), ownLeasesDeleteRefusal},
	}
	for _, r := range refused {
		if problem := refusalBy(samplecontroller.OwnLeasesPolicyName, r.err, r.message); problem != nil {
			t.Errorf("%s in %s as %s: %v", r.what, deployNamespace, deployServiceAccount, problem)
		}
	}
	// The coordinated leader election fields, where the API server keeps
	// them: one whose CoordinatedLeaderElection gate is off (the default
	// to 1.37 at least) drops them from a write before admission, as an
	// administrator's dry run shows, and leaves the rule nothing to refuse.
	elected := with(leader.DeepCopy(), func(l *coordinationv1.Lease) {
		l.Spec.Strategy = ptr.To(coordinationv1.OldestEmulationVersion)
		l.Spec.PreferredHolder = ptr.To(identity)
	})
	if kept, err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Update(ctx, elected.DeepCopy(),
		metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Error(err)
	} else if kept.Spec.Strategy == nil {
		t.Logf("the API server drops a Lease's strategy and preferredHolder (CoordinatedLeaderElection off): not tried")
	} else if problem := refusalBy(samplecontroller.OwnLeasesPolicyName, update(elected), ownLeasesElectionRefusal); problem != nil {
		t.Errorf("update Lease %s with a strategy and preferredHolder as %s: %v", deployName, deployServiceAccount, problem)
	}

	// Admitted, as the replicas write them: created (AlreadyExists,
	// which storage answers after admission, where stored above),
	// renewed, taken over, released, and a member Lease deleted.
	renewed := metav1.NewMicroTime(time.Now())
	for _, a := range []struct {
		what string
		err  error
	}{
		{"create Lease " + deployName, create(lease(deployName))},
		{"create Lease " + fresh + " as an earlier release's replica", create(lease(fresh))},
		{"create Lease " + fresh + " of 256 shards", create(with(lease(fresh), func(l *coordinationv1.Lease) {
			l.Labels[replicas.LabelShards] = "256"
		}))},
		{"create Lease " + deployName + "-shard-0-of-2", create(lease(deployName + "-shard-0-of-2"))},
		{"create Lease " + deployName + "-shard-255-of-256", create(lease(deployName + "-shard-255-of-256"))},
		{"renew Lease " + deployName + " for 600 s", update(with(leader.DeepCopy(), func(l *coordinationv1.Lease) {
			l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &renewed, ptr.To[int32](600)
		}))},
		{"release Lease " + deployName + " as client-go does", update(with(leader.DeepCopy(), func(l *coordinationv1.Lease) {
			l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To(""), ptr.To[int32](1)
		}))},
		{"release Lease " + member + " as pkg/replicas does", update(with(storedMember.DeepCopy(), func(l *coordinationv1.Lease) {
			l.Spec.HolderIdentity, l.Spec.AcquireTime, l.Spec.RenewTime = nil, nil, nil
		}))},
		{"delete Lease " + member, remove(member)},
		{"delete Lease " + releasedShard.Name + ", released", remove(releasedShard.Name)},
		// Of the boundaries split by weight: the boundaries Lease published
		// and published anew, of the fewest shards and of the most; a
		// shard Lease of published boundaries taken, and deleted once
		// released; a member Lease of a replica that splits by weight.
		{"create Lease " + boundaries2 + " with its starts", create(starts(lease(boundaries2), "0x8000000000000000"))},
		{"create Lease " + deployName + "-boundaries-of-256 with its 255 starts",
			create(starts(lease(deployName+"-boundaries-of-256"), startsOf256))},
		{"update Lease " + boundaries2 + " to other starts", update(taken(storedBoundaries, "0x4000000000000000"))},
		{"update Lease " + boundaries3 + " to other starts, an administrator's annotation kept",
			update(taken(annotatedBoundaries, "0x4000000000000000,0x8000000000000000"))},
		{"create Lease " + deployName + "-shard-0-of-2-0123abcd", create(lease(deployName + "-shard-0-of-2-0123abcd"))},
		{"create Lease " + deployName + "-shard-255-of-256-89abcdef",
			create(lease(deployName + "-shard-255-of-256-89abcdef"))},
		{"delete Lease " + releasedGeneration.Name + ", released", remove(releasedGeneration.Name)},
		{"create Lease " + fresh + " labelled " + replicas.LabelBoundaries + ": " + replicas.BoundariesWeighted,
			create(with(lease(fresh), weightedMember))},
	} {
		if a.err != nil && !apierrors.IsAlreadyExists(a.err) {
			t.Errorf("%s in %s as %s: %v, want it admitted", a.what, deployNamespace, deployServiceAccount, a.err)
		}
	}
	for _, name := range []string{leader.Name, storedMember.Name, other.Name, heldShard.Name, releasedShard.Name,
		storedBoundaries.Name, annotatedBoundaries.Name, releasedGeneration.Name} {
		if err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}
}

// expectShardedReplicaWritesItsLeases runs a replica of 2 shards with the
// deployed ServiceAccount's token of kubeconfig, its Leases in the
// deployed namespace, under the own-leases policy and the Lease quota,
// splitting the shards' ranges as boundaries (-shard-boundaries) says: it
// creates its member Lease and both shards', renews them, and on SIGTERM
// deletes its member Lease and releases both shards, each write admitted
// (no refusal in its log). Split by weight, its member Lease is labelled
// so, it publishes the boundaries of its shards first (its namespace holds
// no Foo: equal ranges, one start, 2^63), and its shard Leases are named
// after their generation; the boundaries Lease stays when it leaves.
func expectShardedReplicaWritesItsLeases(t *testing.T, kubeconfig, boundaries string) {
	ctx := context.Background()
	const shards = 2
	weighted := boundaries == replicas.BoundariesWeighted
	ns := newNamespace(t, "own-leases")
	c := startController(t, "sharded-"+boundaries, "-kubeconfig="+kubeconfig, "-namespace="+ns, "-shards=2",
		"-shard-boundaries="+boundaries, "-leader-elect-namespace="+deployNamespace,
		"-webhook-namespace="+deployNamespace)
	identity := shardingIdentity(t, c)
	leases := cluster.Kube.CoordinationV1().Leases(deployNamespace)
	// A shard Lease of this count: of equal ranges, or of published
	// boundaries, a generation of 8 hex digits after the count.
	shardRE := regexp.MustCompile(fmt.Sprintf("^%s-shard-[0-9]+-of-%d$", regexp.QuoteMeta(deployName), shards))
	if weighted {
		shardRE = regexp.MustCompile(fmt.Sprintf("^%s-shard-[0-9]+-of-%d-([0-9a-f]{8})$",
			regexp.QuoteMeta(deployName), shards))
	}
	boundariesLease := deployName + "-boundaries-of-2"
	var member string
	var held []string
	eventually(t, convergeTimeout, "both shards held by "+identity+", and its member Lease", func(ctx context.Context) (bool, error) {
		list, err := leases.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		member, held = "", nil
		generations := map[string]bool{}
		var published *coordinationv1.Lease
		for i := range list.Items {
			l := &list.Items[i]
			switch {
			case strings.HasPrefix(l.Name, deployName+"-member-") && leaseHolderOf(l) == identity:
				member = l.Name
				if got := l.Labels[replicas.LabelBoundaries]; weighted != (got == replicas.BoundariesWeighted) {
					return false, fmt.Errorf("member Lease %s labelled %s: %q", l.Name, replicas.LabelBoundaries, got)
				}
			case shardRE.MatchString(l.Name) && leaseHolderOf(l) == identity:
				held = append(held, l.Name)
				if weighted {
					generations[shardRE.FindStringSubmatch(l.Name)[1]] = true
				}
			case l.Name == boundariesLease:
				published = l
			}
		}
		if member == "" || len(held) != shards {
			return false, fmt.Errorf("member Lease %q, shards held %q", member, held)
		}
		if !weighted {
			return true, nil
		}
		if len(generations) != 1 {
			return false, fmt.Errorf("shards held %q, want both of one generation", held)
		}
		if published == nil || published.Annotations[replicas.AnnotationBoundaries] != "0x8000000000000000" ||
			len(published.Annotations) != 1 {
			return false, fmt.Errorf("boundaries Lease %s: %v, want its starts %s: 0x8000000000000000", boundariesLease,
				published, replicas.AnnotationBoundaries)
		}
		return true, nil
	})
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if exited := <-waitExit(c, terminationGracePeriod); exited.err != nil || exited.code != 0 {
		t.Fatalf("after SIGTERM: exit %d, %v", exited.code, exited.err)
	}
	if _, err := leases.Get(ctx, member, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("member Lease %s after the replica left: %v, want it deleted", member, err)
	}
	for _, name := range held {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if h := leaseHolderOf(l); h != "" {
			t.Errorf("Lease %s held by %q after the replica left, want it released", name, h)
		}
		if err := leases.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}
	if weighted {
		// Left for the replicas of the count that come next: deleted
		// here, by an administrator.
		if err := leases.Delete(ctx, boundariesLease, metav1.DeleteOptions{}); err != nil {
			t.Errorf("boundaries Lease %s after the replica left: %v, want it kept", boundariesLease, err)
		}
	}
	if lines := grepLines(c.Log(), regexp.MustCompile(`(?i)forbidden|denied`)); len(lines) > 0 {
		t.Errorf("the replica's writes of its Leases were refused:\n%s", strings.Join(lines, "\n"))
	}
}

// waitOwnLeasesPolicyInForce waits until the API server enforces the
// own-leases policy on saKube, a client of the controller's ServiceAccount,
// probing with a dry run of a Lease create the own-names policy admits and
// this one refuses (a member Lease's prefix, another shape), which stores
// nothing until then.
func waitOwnLeasesPolicyInForce(t *testing.T, saKube kubernetes.Interface) {
	t.Helper()
	eventually(t, convergeTimeout, "policy "+samplecontroller.OwnLeasesPolicyName+" in force", func(ctx context.Context) (bool, error) {
		_, err := saKube.CoordinationV1().Leases(deployNamespace).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: deployNamespace, Name: deployName + "-member-policy-probe"},
		}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if problem := refusalBy(samplecontroller.OwnLeasesPolicyName, err, ownLeasesNameRefusal); problem != nil {
			return false, problem
		}
		return true, nil
	})
}
