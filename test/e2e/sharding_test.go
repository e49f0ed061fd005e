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
	"hash/fnv"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/test/framework"
)

const (
	// testShards is the number of shards the sharded replicas are given.
	testShards = 16
	// shardingClusterDir holds the sharding test's control plane, of its
	// own: room on the fake node for a pod per Foo, and an audit log.
	shardingClusterDir = "sharding-cluster"
	// shardLeaseNamespace holds the replicas' Leases, whose writes the
	// audit policy records.
	shardLeaseNamespace = "shard-leases"
)

// shardedReplica is a replica run with -shards, and its identity.
type shardedReplica struct {
	*framework.Controller
	identity string
}

var shardingIdentityRE = regexp.MustCompile(`"Sharding the Foos among the replicas".* identity="([^"]+)"`)

// shardingIdentity is the identity a sharded replica logs at start, its
// member and shard Leases' holderIdentity.
func shardingIdentity(t *testing.T, c *framework.Controller) string {
	t.Helper()
	return identityFromLog(t, c, shardingIdentityRE)
}

// shardOf is the shard of count a namespace's objects are in: FNV-1a 64 of
// the name, as KEP-5866 specifies the API server's hash, scaled to count
// equal ranges. Worked out here with the standard library alone, apart
// from the controller's code (pkg/replicas), which it checks.
func shardOf(namespace string, count int) int {
	h := fnv.New64a()
	h.Write([]byte(namespace))
	scaled := new(big.Int).Mul(new(big.Int).SetUint64(h.Sum64()), big.NewInt(int64(count)))
	return int(scaled.Rsh(scaled, 64).Int64())
}

// shardSelector is the shardSelector of the index-th of count ranges,
// [floor(index * 2^64 / count), floor((index+1) * 2^64 / count)).
func shardSelector(index, count int) string {
	bound := func(i int) string {
		b := new(big.Int).Lsh(big.NewInt(int64(i)), 64)
		b.Div(b, big.NewInt(int64(count)))
		hex := b.Text(16)
		if len(hex) < 16 {
			hex = strings.Repeat("0", 16-len(hex)) + hex
		}
		return "0x" + hex // 17 digits for the end of the space, 2^64
	}
	return fmt.Sprintf("shardRange(object.metadata.namespace, '%s', '%s')", bound(index), bound(index+1))
}

// serverFilters reports whether the control plane's API server applies
// shardSelectors: from 1.36 the framework turns ShardedListAndWatch on.
func serverFilters() bool {
	v := strings.Split(strings.TrimPrefix(cluster.KubernetesVersion, "v"), ".")
	minor, _ := strconv.Atoi(v[1])
	return minor >= 36
}

// Every replica reconciles the Foos of the shards it holds, and caches
// theirs alone: 3 replicas, 16 shards, 1,000 Foos in 50 namespaces where the
// API server filters the lists (1.36 on), 100 in 10 where each replica
// filters what it is sent. A replica killed, its shards are taken once
// their Leases went unrenewed for the lease duration, and the Foos changed
// meanwhile are reconciled; scaled to 4 and then 2, the shards spread
// again, and every Foo stays Ready. The audit log is the judge: no write
// for a Foo or its Deployment by a replica that did not hold the Lease of
// the Foo's shard at that moment.
func TestEveryReplicaReconcilesTheFoosOfItsShards(t *testing.T) {
	server := serverFilters()
	namespaces, perNamespace, mode := 50, 20, "server"
	if !server {
		namespaces, perNamespace, mode = 10, 10, "client"
	}
	want := namespaces * perNamespace
	policy := filepath.Join(t.TempDir(), "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(framework.AuditPolicy(shardLeaseNamespace)), 0o644); err != nil {
		t.Fatal(err)
	}
	own := useOwnCluster(t, shardingClusterDir, framework.WithAuditPolicy(policy),
		framework.WithNodePods(want+200), framework.WithTimeout(180*time.Second))
	ensureStandardCRD(t)
	leaseNS, id := shardLeaseNamespace, "e2e-shards"
	if _, err := cluster.Kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nss := make([]string, 0, namespaces)
	for range namespaces {
		nss = append(nss, newNamespace(t, "sharded"))
	}
	err := framework.Parallel(want, creators, func(i int) error {
		ns, name := nss[i/perNamespace], fmt.Sprintf("foo-%02d", i%perNamespace)
		_, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Create(context.Background(),
			newFoo(ns, name, name, nil), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	replicas := map[string]*shardedReplica{}
	start := func(name string) {
		c := startController(t, name, "-shards="+strconv.Itoa(testShards), "-leader-elect-namespace="+leaseNS,
			"-leader-elect-id="+id, "-leader-elect-retry-period=1s")
		replicas[name] = &shardedReplica{Controller: c, identity: shardingIdentity(t, c)}
	}
	for _, name := range []string{"replica-a", "replica-b", "replica-c"} {
		start(name)
	}
	started := time.Now()
	waitShardsSpread(t, leaseNS, id, testShards, replicas)
	waitShardedFoosReady(t, nss, want)
	t.Logf("3 replicas, %d shards, %d Foos in %d namespaces: every Foo Ready %v after the replicas started",
		testShards, want, namespaces, time.Since(started).Round(time.Second))
	expectCachesHoldTheirShards(t, leaseNS, id, replicas, mode)
	if server {
		expectServerFiltersAsTheTestHashes(t)
	}

	// kill -9 one replica; change Foos of its shards before the others take them.
	killed := replicas["replica-a"]
	delete(replicas, "replica-a")
	heldByKilled := shardsHeldBy(t, leaseNS, id, testShards, killed.identity)
	killed.Kill()
	killedAt := time.Now()
	var changed []*samplev1beta1.Foo
	for _, ns := range nss {
		if slices.Contains(heldByKilled, shardOf(ns, testShards)) && len(changed) < 10 {
			changed = append(changed, updateFoo(t, ns, "foo-00", func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(2) }))
		}
	}
	if len(changed) == 0 {
		t.Fatalf("none of the %d namespaces is in the shards %v of the killed replica", len(nss), heldByKilled)
	}
	waitShardsSpread(t, leaseNS, id, testShards, replicas)
	t.Logf("kill -9 of a replica holding shards %v: every shard held by the 2 others %v after the kill",
		heldByKilled, time.Since(killedAt).Round(time.Second))
	for _, foo := range changed {
		waitFooReady(t, foo.Namespace, foo.Name)
	}
	t.Logf("the %d Foos of its shards changed right after the kill: Ready %v after it", len(changed),
		time.Since(killedAt).Round(time.Second))
	waitShardedFoosReady(t, nss, want)

	// Scale to 4, then to 2 (SIGTERM: the replicas leaving release their shards).
	start("replica-d")
	start("replica-e")
	waitShardsSpread(t, leaseNS, id, testShards, replicas)
	waitShardedFoosReady(t, nss, want)
	expectCachesHoldTheirShards(t, leaseNS, id, replicas, mode)
	for _, name := range []string{"replica-d", "replica-e"} {
		r := replicas[name]
		delete(replicas, name)
		if err := r.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if exited := <-waitExit(r.Controller, terminationGracePeriod); exited.err != nil || exited.code != 0 {
			t.Fatalf("%s after SIGTERM: exit %d, %v", name, exited.code, exited.err)
		}
	}
	waitShardsSpread(t, leaseNS, id, testShards, replicas)
	waitShardedFoosReady(t, nss, want)
	expectCachesHoldTheirShards(t, leaseNS, id, replicas, mode)
	expectWritesOnlyByShardHolders(t, own.AuditLogPath(), leaseNS, id, testShards)
}

// expectWritesOnlyByShardHolders fails the test for every accepted write
// for a Foo or its Deployment, in the audit log, by a replica that did not
// hold the Lease of the Foo's shard when the API server received it.
func expectWritesOnlyByShardHolders(t *testing.T, auditLog, leaseNS, id string, count int) {
	t.Helper()
	events, cut, err := framework.ReadAuditLog(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	leaderships := make([][]framework.Leadership, count)
	changes := 0
	for i := range leaderships {
		if leaderships[i], err = framework.Leaderships(events, leaseNS, shardLeaseName(id, i, count)); err != nil {
			t.Fatal(err)
		}
		if len(leaderships[i]) == 0 {
			t.Fatalf("no holder of shard %d's Lease in the audit log %s: the check would see nothing", i, auditLog)
		}
		changes += len(leaderships[i])
	}
	t.Logf("audit log: %d requests audited (%d cut lines); the %d shard Leases changed hands %d times", len(events),
		cut, count, changes)
	expectNone(t, "accepted writes from a replica that did not hold the Lease of the Foo's shard",
		framework.WritesOutsideShards(events, leaderships, func(ns string) int { return shardOf(ns, count) }))
}

// shardLeaseName is the Lease of the index-th of count shards.
func shardLeaseName(id string, index, count int) string {
	return fmt.Sprintf("%s-shard-%d-of-%d", id, index, count)
}

// generationLeaseName is the Lease of the index-th of count shards of the
// published boundaries of generation, or of equal ranges for "".
func generationLeaseName(id string, index, count int, generation string) string {
	if generation == "" {
		return shardLeaseName(id, index, count)
	}
	return fmt.Sprintf("%s-shard-%d-of-%d-%s", id, index, count, generation)
}

// shardHolders reads the holder of each of count shard Leases, "" for none.
func shardHolders(ctx context.Context, leaseNS, id string, count int) ([]string, error) {
	return generationHolders(ctx, leaseNS, id, count, "")
}

// generationHolders reads the holder of each of count shard Leases of
// generation ("" for equal ranges), "" for none.
func generationHolders(ctx context.Context, leaseNS, id string, count int, generation string) ([]string, error) {
	holders := make([]string, count)
	list, err := cluster.Kube.CoordinationV1().Leases(leaseNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		for index := range holders {
			if list.Items[i].Name == generationLeaseName(id, index, count, generation) {
				holders[index] = leaseHolderOf(&list.Items[i])
			}
		}
	}
	return holders, nil
}

// shardsHeldBy are the shards of count whose Lease identity holds.
func shardsHeldBy(t *testing.T, leaseNS, id string, count int, identity string) []int {
	t.Helper()
	holders, err := shardHolders(context.Background(), leaseNS, id, count)
	if err != nil {
		t.Fatal(err)
	}
	var held []int
	for i, h := range holders {
		if h == identity {
			held = append(held, i)
		}
	}
	return held
}

// waitShardsSpread waits until every one of count shard Leases is held by
// one of replicas, each holding its fair share within one, and each
// replica's samplecontroller_shards_held says what the Leases say.
func waitShardsSpread(t *testing.T, leaseNS, id string, count int, replicas map[string]*shardedReplica) {
	t.Helper()
	waitGenerationSpread(t, leaseNS, id, count, "", replicas)
}

// waitGenerationSpread is waitShardsSpread for the shards of the published
// boundaries of generation.
func waitGenerationSpread(t *testing.T, leaseNS, id string, count int, generation string,
	replicas map[string]*shardedReplica) {
	t.Helper()
	byIdentity := map[string]string{}
	for name, r := range replicas {
		byIdentity[r.identity] = name
	}
	low, high := count/len(replicas), (count+len(replicas)-1)/len(replicas)
	eventually(t, 3*convergeTimeout, fmt.Sprintf("every shard held, %d to %d by each of %v", low, high,
		slices.Sorted(maps.Keys(replicas))), func(ctx context.Context) (bool, error) {
		holders, err := generationHolders(ctx, leaseNS, id, count, generation)
		if err != nil {
			return false, err
		}
		counts := map[string]int{}
		for i, h := range holders {
			if byIdentity[h] == "" {
				return false, fmt.Errorf("shard %d held by %q, not a live replica", i, h)
			}
			counts[byIdentity[h]]++
		}
		for name, r := range replicas {
			if counts[name] < low || counts[name] > high {
				return false, fmt.Errorf("shards held: %v", counts)
			}
			samples, err := framework.ScrapeURL(ctx, r.MetricsURL())
			if err != nil {
				return false, err
			}
			if got := framework.Sum(samples, metrics.Subsystem+"_shards_held", all); int(got) != counts[name] {
				return false, fmt.Errorf("%s says it holds %v shards, its Leases %d", name, got, counts[name])
			}
		}
		return true, nil
	})
}

func all(map[string]string) bool { return true }

// waitShardedFoosReady waits, for as long as the Foos make progress, until
// the want Foos of nss are Ready, each with its one Deployment and no orphan.
func waitShardedFoosReady(t *testing.T, nss []string, want int) {
	t.Helper()
	var last convergence
	_, err := framework.PollProgress(context.Background(), time.Second, faultStall,
		func(ctx context.Context) (bool, string, error) {
			listed, err := cluster.Sample.SamplecontrollerV1beta1().Foos("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, "", err
			}
			deployments, err := cluster.Kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, "", err
			}
			listed.Items = slices.DeleteFunc(listed.Items, func(f samplev1beta1.Foo) bool { return !slices.Contains(nss, f.Namespace) })
			deployments.Items = slices.DeleteFunc(deployments.Items, func(d appsv1.Deployment) bool {
				return !slices.Contains(nss, d.Namespace)
			})
			last = compare(listed.Items, deployments.Items)
			return last.converged(want), last.progress(), nil
		})
	if err != nil {
		t.Fatalf("waiting for %d Foos Ready, each with its one Deployment: %v; last seen: %v", want, err, last)
	}
}

// expectCachesHoldTheirShards checks, from each replica's own metrics, that
// its caches hold the Foos and Deployments of the shards it holds and no
// other (samplecontroller_foos and samplecontroller_owned_cached count
// them), and that it says who filters (samplecontroller_shard_filtering).
func expectCachesHoldTheirShards(t *testing.T, leaseNS, id string, replicas map[string]*shardedReplica, mode string) {
	t.Helper()
	for name, r := range replicas {
		var mismatch error // the last, kept: the wait's own deadline may end the last try
		err := framework.Poll(context.Background(), 100*time.Millisecond, convergeTimeout,
			func(ctx context.Context) (bool, error) {
				held := shardsHeldBy(t, leaseNS, id, testShards, r.identity)
				// Not named foos: a copy (hack/new-controller) renames it
				// after its group's package, which this function uses.
				listed, err := cluster.Sample.SamplecontrollerV1beta1().Foos("").List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				inShards := 0
				for _, foo := range listed.Items {
					if slices.Contains(held, shardOf(foo.Namespace, testShards)) {
						inShards++
					}
				}
				deployments, err := cluster.Kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{
					LabelSelector: samplecontroller.LabelManagedBy + "=" + samplecontroller.ControllerName})
				if err != nil {
					return false, err
				}
				deploymentsInShards := 0
				for _, d := range deployments.Items {
					if slices.Contains(held, shardOf(d.Namespace, testShards)) {
						deploymentsInShards++
					}
				}
				samples, err := framework.ScrapeURL(ctx, r.MetricsURL())
				if err != nil {
					return false, err
				}
				cached := framework.Sum(samples, metrics.Subsystem+"_foos", all)
				cachedDeployments := framework.Sum(samples, metrics.Subsystem+"_owned_cached",
					func(l map[string]string) bool { return l["resource"] == "deployments" })
				filtering := framework.Sum(samples, metrics.Subsystem+"_shard_filtering",
					func(l map[string]string) bool { return l["mode"] == mode })
				if int(cached) != inShards || int(cachedDeployments) != deploymentsInShards || filtering != 1 {
					mismatch = fmt.Errorf("it caches %v Foos and %v Deployments, the API server holds %d and %d "+
						"in its shards %v; shard_filtering{mode=%q} is %v", cached, cachedDeployments, inShards,
						deploymentsInShards, held, mode, filtering)
					return false, nil
				}
				return true, nil
			})
		if err != nil {
			t.Fatalf("waiting for %s's cache to hold its shards' Foos alone: %v; last seen: %v", name, err, mismatch)
		}
	}
}

// expectServerFiltersAsTheTestHashes lists the Foos and Deployments of each
// shard with its shardSelector, and checks that the API server sends those
// of the namespaces this test hashes into it, every one of them once over
// the shards, and says it filtered the Deployments (ShardInfo). It does
// not say so of Foos: a custom resource's list is unstructured in the API
// server, which has no ShardInfo (1.37), so pkg/replicas asks a list of
// Deployments which mode it is in.
func expectServerFiltersAsTheTestHashes(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	all, err := cluster.Sample.SamplecontrollerV1beta1().Foos("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for index := range testShards {
		selector := shardSelector(index, testShards)
		listed, err := cluster.Sample.SamplecontrollerV1beta1().Foos("").List(ctx, metav1.ListOptions{ShardSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		for _, foo := range listed.Items {
			if got := shardOf(foo.Namespace, testShards); got != index {
				t.Errorf("the API server sent Foo %s/%s for shard %d; the test hashes its namespace into %d",
					foo.Namespace, foo.Name, index, got)
			}
		}
		seen += len(listed.Items)
		deployments, err := cluster.Kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{ShardSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		if deployments.ShardInfo == nil || deployments.ShardInfo.Selector != selector {
			t.Errorf("the Deployments of shard %d: shardInfo %+v, want the selector %q echoed", index,
				deployments.ShardInfo, selector)
		}
	}
	if seen != len(all.Items) {
		t.Errorf("the shards' lists held %d Foos, the API server %d", seen, len(all.Items))
	}
}
