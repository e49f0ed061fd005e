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
		deployName + "-member-<8 hex digits> and " + deployName + "-shard-<index>-of-<count>"
	ownLeasesDeleteRefusal = "deletes its member Leases " + deployName + "-member-<8 hex digits>, and shard Leases " +
		deployName + "-shard-<index>-of-<count> held by none, alone"
	ownLeasesLabelsRefusal   = "creates its Leases with the label " + replicas.LabelLeaseSet
	ownLeasesKeptRefusal     = "updates its Leases keeping their labels, annotations, finalizers and owners"
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
// refused; the Leases as pkg/replicas writes them admitted (dry runs).
// Then a real sharded replica, with the token of kubeconfig, joins, takes
// both its shards and leaves, its member Lease deleted and its shards
// released, without one refusal. Without the policy every refusal below is
// admitted, as RBAC and the own-names policy allow it.
func expectOwnLeasesAlone(t *testing.T, saKube kubernetes.Interface, kubeconfig string) {
	ctx := context.Background()
	waitPolicyChecked(t, samplecontroller.OwnLeasesPolicyName)
	waitOwnLeasesPolicyInForce(t, saKube)

	// First the replica, before the Leases below: a leader's Lease held
	// would keep it from taking shards.
	expectShardedReplicaWritesItsLeases(t, kubeconfig)

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
	} {
		if a.err != nil && !apierrors.IsAlreadyExists(a.err) {
			t.Errorf("%s in %s as %s: %v, want it admitted", a.what, deployNamespace, deployServiceAccount, a.err)
		}
	}
	for _, name := range []string{leader.Name, storedMember.Name, other.Name, heldShard.Name, releasedShard.Name} {
		if err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}
}

// expectShardedReplicaWritesItsLeases runs a replica of 2 shards with the
// deployed ServiceAccount's token of kubeconfig, its Leases in the
// deployed namespace, under the own-leases policy and the Lease quota:
// it creates its member Lease and both shards', renews them, and on
// SIGTERM deletes its member Lease and releases both shards, each write
// admitted (no refusal in its log).
func expectShardedReplicaWritesItsLeases(t *testing.T, kubeconfig string) {
	ctx := context.Background()
	const shards = 2
	ns := newNamespace(t, "own-leases")
	c := startController(t, "sharded", "-kubeconfig="+kubeconfig, "-namespace="+ns, "-shards=2",
		"-leader-elect-namespace="+deployNamespace, "-webhook-namespace="+deployNamespace)
	identity := shardingIdentity(t, c)
	leases := cluster.Kube.CoordinationV1().Leases(deployNamespace)
	var member string
	eventually(t, convergeTimeout, "both shards held by "+identity+", and its member Lease", func(ctx context.Context) (bool, error) {
		list, err := leases.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		held := 0
		member = ""
		for i := range list.Items {
			l := &list.Items[i]
			switch {
			case strings.HasPrefix(l.Name, deployName+"-member-") && leaseHolderOf(l) == identity:
				member = l.Name
			case strings.HasPrefix(l.Name, deployName+"-shard-") && strings.HasSuffix(l.Name, fmt.Sprintf("-of-%d", shards)) &&
				leaseHolderOf(l) == identity:
				held++
			}
		}
		if member == "" || held != shards {
			return false, fmt.Errorf("member Lease %q, %d shards held", member, held)
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
	for index := range shards {
		name := shardLeaseName(deployName, index, shards)
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
