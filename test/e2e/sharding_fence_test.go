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
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/replicas"
	"github.com/kube-samples/sample-controller/test/framework"
)

const (
	// fenceShards is the number of shards of the paused holder's test: the
	// Foos are in one namespace, so one of them holds them all.
	fenceShards = 4
	// fenceWriteDelay is how much later the holder's requests reach the API
	// server while the user scales its Foos: its syncs take long enough
	// that the pause finds its workers in the middle of them.
	fenceWriteDelay = 100 * time.Millisecond
)

// The zombie leader's sequence (zombie_leader_test.go), sharded: two
// replicas under the deployed ServiceAccounts, with the Role and admission
// policies artifacts/deploy ships; the holder of the Foos' shard is paused
// (SIGSTOP) past the lease duration right after the user scaled every Foo,
// the other takes its shards, the user scales them again, and the holder
// is resumed with the first change in hand. Its fence is closed (its
// writes refused, as it logs):
// the audit log must show no write for a Foo or its Deployment by a replica
// that did not hold the Lease of the Foo's shard at that moment, at any
// time of the run, and the shards spread again over both replicas.
func TestPausedShardHolderWritesNothingAfterItsShardsAreTaken(t *testing.T) {
	w := setUpChaosWorld(t, zombieFoos, rand.New(rand.NewPCG(17, 18)), time.Hour)
	shard := shardOf(w.ns, fenceShards)
	sharded := map[string]*shardedReplica{}
	links := map[*shardedReplica]*framework.SlowLink{}
	for i, name := range []string{"replica-a", "replica-b"} {
		// Each through a link of its own, to slow the holder's alone (the
		// last -kubeconfig is the one read).
		link := startSlowLink(t)
		c := startController(t, name, append(w.replicaArgs(i), fmt.Sprintf("-shards=%d", fenceShards),
			"-kubeconfig="+slowedKubeconfig(t, w.kubeconfigs[i], link.Addr()))...)
		sharded[name] = &shardedReplica{Controller: c, identity: shardingIdentity(t, c)}
		links[sharded[name]] = link
	}
	waitShardsSpread(t, deployNamespace, deployName, fenceShards, sharded)
	var holder, other *shardedReplica
	for _, r := range sharded {
		if held := shardsHeldBy(t, deployNamespace, deployName, fenceShards, r.identity); slices.Contains(held, shard) {
			holder = r
		} else {
			other = r
		}
	}
	expectShardsKeptWhileListsAreRefused(t, sharded)
	run := w.faultRun(zombieFoos, &replica{Controller: holder.Controller, identity: holder.identity})
	run.waitConverged(t, time.Now())
	t.Logf("%s holds shard %d of %d, that of namespace %s and its %d converged Foos; %s holds the others",
		holder.Name, shard, fenceShards, w.ns, zombieFoos, other.Name)

	// Paused with work in hand: every Foo scaled to 2 at once, 30 syncs for
	// its workers, each write of theirs fenceWriteDelay late, and the pause
	// at the first it applied. Scaled one by one, the workers kept up, and a
	// holder with no fence wrote nothing after its resume: no work was left
	// from before the pause. Paused as soon as the patches returned, a holder
	// slow to see them had begun none; at its first apply with no delay, it
	// had seen one patch, the others still on their way.
	links[holder].SetDelay(fenceWriteDelay)
	first, paused := scaleFoosPausingAtFirstApply(t, w.ns, zombieFoos, 2, holder.Controller)
	eventually(t, 3*convergeTimeout, other.Name+" to take every shard", func(ctx context.Context) (bool, error) {
		holders, err := shardHolders(ctx, deployNamespace, deployName, fenceShards)
		if err != nil {
			return false, err
		}
		for i, h := range holders {
			if h != other.identity {
				return false, fmt.Errorf("shard %d held by %q", i, h)
			}
		}
		return true, nil
	})
	taken := time.Now()
	t.Logf("%s took every shard %v after %s was paused, at its first apply of its %d Foos scaled to 2",
		other.Name, taken.Sub(paused).Round(100*time.Millisecond), holder.Name, len(first))

	// The user changes them again; the new holder applies that.
	scaled := scaleFoos(t, w.ns, zombieFoos, zombieReplicas)
	run.leader = &replica{Controller: other.Controller, identity: other.identity}
	run.waitConverged(t, paused)
	// Paused half a lease duration more after the take-over, as the zombie leader is.
	time.Sleep(time.Until(taken.Add(chaosLeaseDuration / 2)))
	links[holder].SetDelay(0)
	if err := holder.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	t.Logf("%s resumed after a pause of %v; %s had applied %d Foos scaled to %d: %v", holder.Name,
		resumed.Sub(paused).Round(10*time.Millisecond), other.Name, len(scaled), zombieReplicas, scaled)

	// It gives its shards up, rejoins, and takes its share again.
	waitShardsSpread(t, deployNamespace, deployName, fenceShards, sharded)
	if lost := grepLines(holder.Log(), regexpShardLost); len(lost) == 0 {
		t.Errorf("%s did not log the loss of its shards; last log lines:\n%s", holder.Name,
			framework.Trim(holder.Log(), 3000))
	} else {
		t.Logf("%s logged: %s", holder.Name, strings.Join(lost, " | "))
	}
	// The work it had in hand met the closed fence: refused as it was
	// about to be sent, or, already on its way through the slow link, given
	// up when the fence closed (its deadline, which the pause outlasted).
	// Without the fence, those writes reached the API server, and the audit
	// check below failed.
	if fenced := strings.Count(holder.Log(), replicas.ErrFenced.Error()); fenced == 0 {
		t.Errorf("%s logged no write refused by its fence or given up in flight: it had no work in hand at the "+
			"pause, and the test proves nothing; last log lines:\n%s", holder.Name, framework.Trim(holder.Log(), 3000))
	} else {
		t.Logf("%s logged %d writes refused by its fence or given up in flight when it closed", holder.Name, fenced)
	}
	run.waitConverged(t, resumed)
	w.checkShardedAuditLog(t, fenceShards, nil)
}

// scaleFoosPausingAtFirstApply scales the first n Foos of ns to scale replicas, a
// patch per Foo at once, and pauses holder (SIGSTOP) once every patch
// returned and a watch showed the first of their Deployments scaled: its
// workers are then mid-way through the others, writes that meet the closed
// fence at its resume. It returns the Foos' names and when holder was
// paused.
func scaleFoosPausingAtFirstApply(t *testing.T, ns string, n int, scale int32,
	holder *framework.Controller) ([]string, time.Time) {
	t.Helper()
	// The controller's own work bounds the wait: its first apply.
	ctx, cancel := context.WithTimeout(context.Background(), convergeTimeout)
	defer cancel()
	deployments := cluster.Kube.AppsV1().Deployments(ns)
	list, err := deployments.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := deployments.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Stop()
	type patched struct {
		names []string
		err   error
	}
	done := make(chan patched, 1)
	go func() {
		names, err := patchFooReplicas(ns, n, scale)
		done <- patched{names, err}
	}()
	var result *patched
	for applied := false; !applied || result == nil; {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			result = &r
		case event, ok := <-watcher.ResultChan():
			if !ok {
				t.Fatalf("no Deployment of %s scaled to %d within %v", ns, scale, convergeTimeout)
			}
			d, isDeployment := event.Object.(*appsv1.Deployment)
			applied = applied || event.Type == watch.Modified && isDeployment && metav1.GetControllerOf(d) != nil &&
				d.Spec.Replicas != nil && *d.Spec.Replicas == scale
		}
	}
	if err := holder.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return result.names, time.Now()
}

var regexpShardLost = regexp.MustCompile(`"Lost the shard, stopped reconciling it"`)

// expectShardsKeptWhileListsAreRefused takes list away from the sharding
// Role for two lease durations: every List of the Leases refused, each
// replica renews its shards from the Leases as it last wrote them, and
// keeps them all, its /healthz passing. Renewing only after a List, as it
// once did, each dropped its shards at the renew deadline.
func expectShardsKeptWhileListsAreRefused(t *testing.T, sharded map[string]*shardedReplica) {
	t.Helper()
	ctx := context.Background()
	roles := cluster.Kube.RbacV1().Roles(deployNamespace)
	name := samplecontroller.ControllerName + "-sharding"
	role, err := roles.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := shardHolders(ctx, deployNamespace, deployName, fenceShards)
	if err != nil {
		t.Fatal(err)
	}
	refused := role.DeepCopy()
	for i := range refused.Rules {
		refused.Rules[i].Verbs = slices.DeleteFunc(refused.Rules[i].Verbs, func(v string) bool { return v == "list" })
	}
	if _, err := roles.Update(ctx, refused, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		current, err := roles.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			current.Rules = role.Rules
			_, err = roles.Update(ctx, current, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("restoring the sharding Role: %v", err)
		}
	}
	defer restore()
	for _, r := range sharded {
		logged := strings.Count(r.Log(), `"Could not read the Leases`)
		eventually(t, convergeTimeout, r.Name+" to have a List refused", func(context.Context) (bool, error) {
			return strings.Count(r.Log(), `"Could not read the Leases`) > logged &&
				strings.Contains(r.Log(), "forbidden"), nil
		})
	}
	refusedAt := time.Now()
	time.Sleep(2 * chaosLeaseDuration)

	leases, err := cluster.Kube.CoordinationV1().Leases(deployNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	renewed := map[string]time.Time{}
	for _, lease := range leases.Items {
		if lease.Spec.RenewTime != nil {
			renewed[lease.Name] = lease.Spec.RenewTime.Time
		}
	}
	after, err := shardHolders(ctx, deployNamespace, deployName, fenceShards)
	if err != nil {
		t.Fatal(err)
	}
	for i := range fenceShards {
		lease := shardLeaseName(deployName, i, fenceShards)
		if after[i] != before[i] || !renewed[lease].After(refusedAt.Add(chaosLeaseDuration)) {
			t.Errorf("%s, %v into refused Lists: held by %q (before %q), renewed %v after the refusals began; "+
				"want the same holder, renewed past a lease duration", lease, 2*chaosLeaseDuration, after[i], before[i],
				renewed[lease].Sub(refusedAt).Round(100*time.Millisecond))
		}
	}
	for _, r := range sharded {
		held := len(shardsHeldBy(t, deployNamespace, deployName, fenceShards, r.identity))
		samples, err := framework.ScrapeURL(ctx, r.MetricsURL())
		if err != nil {
			t.Fatal(err)
		}
		if got := framework.Sum(samples, metrics.Subsystem+"_shards_held", all); int(got) != held {
			t.Errorf("%s, Lists refused: says it holds %v shards, its Leases %d", r.Name, got, held)
		}
		if code, body, err := r.Probe(ctx, "/healthz"); err != nil || code != http.StatusOK {
			t.Errorf("%s, Lists refused: /healthz %d %q, %v; want 200", r.Name, code, body, err)
		}
	}
	restore()
	t.Logf("every List of the Leases refused for %v: every shard kept by its holder, each Lease renewed throughout",
		time.Since(refusedAt).Round(100*time.Millisecond))
}

// checkShardedAuditLog is checkAuditLog for count shards: every accepted
// write for a Foo or its Deployment came from the replica that held the
// Lease of the Foo's shard then, none carried a replica count its Foo had
// not held lately (but in the windows refused, as checkAuditLog), and none
// touched the foreign Deployment.
func (w *chaosWorld) checkShardedAuditLog(t *testing.T, count int, refused []framework.Window) {
	t.Helper()
	expectWritesOnlyByShardHolders(t, w.auditLog, deployNamespace, deployName, count)
	events, _, err := framework.ReadAuditLog(w.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	expectNone(t, fmt.Sprintf("accepted Deployment writes of a replica count their Foo had not held for %v", staleTolerance),
		framework.StaleReplicaWrites(events, staleTolerance, refused))
	expectNone(t, "accepted controller writes to the foreign Deployment "+foreignDeployment,
		framework.WritesTo(events, "deployments", w.ns, foreignDeployment))
}
