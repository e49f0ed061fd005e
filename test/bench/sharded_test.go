//go:build bench

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

package bench

// The sharded bench ("make bench-sharded"): what sharding buys. N Foos
// spread over namespaces, reconciled from a cold start by one replica (the
// default, -shards=1) and then by three sharing -shards=12 (or
// BENCH_SHARDED_SHARDS), the API server filtering their lists and
// watches. docs/performance.md holds the results and the target: a sharded
// replica's memory that grows with the Foos is at most 40 % of the single
// replica's, and the three converge no slower.
//
// BENCH_SHARDED_NAMES=tenant and BENCH_SHARDED_BOUNDARIES=weighted measure
// the same over namespaces that equal ranges split badly, and the ranges
// that split them well (docs/operations.md, Sharding).

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/replicas"
	"github.com/kube-samples/sample-controller/test/framework"
)

var (
	// shardedFoos is BENCH_SHARDED_FOOS, the Foos of each run.
	shardedFoos = envInt("BENCH_SHARDED_FOOS", 10000)
	// shardedNamespaces is BENCH_SHARDED_NAMESPACES, the namespaces they
	// are spread over: the shards split namespaces, so a run needs many
	// for the replicas' shares to be even, and the bench to measure what
	// sharding costs rather than how the hash split a few namespaces.
	shardedNamespaces = envInt("BENCH_SHARDED_NAMESPACES", 1000)
	// shardedShards is BENCH_SHARDED_SHARDS, the three replicas' -shards:
	// by default a count three divide evenly (docs/operations.md, Sharding).
	shardedShards = envInt("BENCH_SHARDED_SHARDS", 12)
	// shardedNames is BENCH_SHARDED_NAMES, how the namespaces are named:
	// numbered, the number first, which equal ranges spread; or tenant,
	// the number last, as tenants are often named, which equal ranges
	// crowd into a few shards (shardedColdStart).
	shardedNames = envChoice("BENCH_SHARDED_NAMES", "numbered", "tenant")
	// shardedBoundaries is BENCH_SHARDED_BOUNDARIES, the three replicas'
	// -shard-boundaries.
	shardedBoundaries = envChoice("BENCH_SHARDED_BOUNDARIES", replicas.BoundariesEqual, replicas.BoundariesWeighted)
)

// envChoice reads a setting that is one of choices, the first if unset.
func envChoice(name string, choices ...string) string {
	v := os.Getenv(name)
	if v == "" {
		return choices[0]
	}
	if !slices.Contains(choices, v) {
		panic(fmt.Sprintf("%s: %q is none of %s", name, v, strings.Join(choices, ", ")))
	}
	return v
}

const (
	// benchLeaseNamespace holds the replicas' Leases.
	benchLeaseNamespace = "bench-leases"
)

// shardedConfig is one way to run the controller over the Foos.
type shardedConfig struct {
	name     string
	replicas int
	shards   int
}

// replicaFigures is one replica's memory in a run, in KiB: its peak with no
// Foos at all (a run of its own before the Foos exist), its peak over the
// cold start, and its resident set at rest after it; and what that memory
// is, with no Foos and at rest.
type replicaFigures struct {
	idlePeak, peak, atRest int64
	// peakAfter is when, after the replicas started, the resident set
	// sampled every second was highest.
	peakAfter  time.Duration
	idle, rest memoryParts
	shardsHeld float64
	foosCached float64
}

// growthKiB is the memory that grows with the Foos: the peak less the peak
// of the same replica with none.
func (r replicaFigures) growthKiB() int64 { return r.peak - r.idlePeak }

// memoryParts is what a replica's resident set holds, in KiB: anonymous
// memory and file-backed pages (the binary's code and data, read in as they
// are first run); and, from the replica's own metrics (the Go runtime's
// memory classes), what the anonymous memory is: the live Go heap at its
// last collection and the heap size the next one is due at; goroutine
// stacks; free heap pages not yet returned to the operating system, and
// space unused inside the heap's spans; and the runtime's own metadata.
type memoryParts struct {
	anon, file, heapLive, heapGoal int64
	stacks, free, unused, metadata int64
}

// readMemoryParts reads ctrl's memoryParts now. A replica's resident set
// at rest is its peak or within a few MiB of it (the Go runtime returns
// what it freed slowly), so the parts at rest are nearly those of the peak.
func (b *bench) readMemoryParts(ctrl *framework.Controller) memoryParts {
	var m memoryParts
	var err error
	if m.anon, err = statusKiB(ctrl.Pid(), "RssAnon:"); err != nil {
		b.t.Fatal(err)
	}
	if m.file, err = statusKiB(ctrl.Pid(), "RssFile:"); err != nil {
		b.t.Fatal(err)
	}
	samples := b.scrapeController(ctrl)
	m.heapLive = int64(framework.Sum(samples, "go_gc_heap_live_bytes", nil)) / 1024
	m.heapGoal = int64(framework.Sum(samples, "go_gc_heap_goal_bytes", nil)) / 1024
	m.stacks = int64(framework.Sum(samples, "go_memory_classes_heap_stacks_bytes", nil)) / 1024
	m.free = int64(framework.Sum(samples, "go_memory_classes_heap_free_bytes", nil)) / 1024
	m.unused = int64(framework.Sum(samples, "go_memory_classes_heap_unused_bytes", nil)) / 1024
	for _, class := range []string{"mcache_free", "mcache_inuse", "mspan_free", "mspan_inuse", "other"} {
		m.metadata += int64(framework.Sum(samples, "go_memory_classes_metadata_"+class+"_bytes", nil)) / 1024
	}
	return m
}

func TestShardedBenchmark(t *testing.T) {
	n := shardedFoos
	b := startBench(t, "bench-sharded-cluster", n+1000)
	if _, err := b.kube.CoreV1().Namespaces().Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchLeaseNamespace}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	b.report("sharded: %d Foos in %d namespaces named %s, %s boundaries, Kubernetes %s", n, shardedNamespaces,
		shardedNames, shardedBoundaries, b.cluster.KubernetesVersion)
	configs := []shardedConfig{{"one replica", 1, 1}, {"three replicas", 3, shardedShards}}
	var single []replicaFigures
	for i, c := range configs {
		idle := b.idleFigures(c)
		last := i == len(configs)-1
		converged, ready, figures := b.shardedColdStart(c, fmt.Sprintf("sharded-%d", i), n, idle, !last)
		if i == 0 {
			single = figures
		}
		for j, r := range figures {
			b.report("%s, replica %d: %.0f shards held, %.0f Foos cached (%.0f %%); RSS peak %.1f MiB with no Foos, %.1f MiB over the cold start (+%.1f MiB: %.0f %% of one replica's), %.1f MiB at rest",
				c.name, j, r.shardsHeld, r.foosCached, 100*r.foosCached/float64(n), mib(r.idlePeak), mib(r.peak), mib(r.growthKiB()),
				100*float64(r.growthKiB())/float64(single[0].growthKiB()), mib(r.atRest))
			b.report("%s, replica %d, from no Foos to at rest: anonymous %.1f to %.1f MiB, file-backed %.1f to %.1f MiB; Go heap live %.1f to %.1f MiB (%.0f %% of one replica's growth), next collection due at %.1f to %.1f MiB",
				c.name, j, mib(r.idle.anon), mib(r.rest.anon), mib(r.idle.file), mib(r.rest.file), mib(r.idle.heapLive), mib(r.rest.heapLive),
				100*float64(r.rest.heapLive-r.idle.heapLive)/float64(single[0].rest.heapLive-single[0].idle.heapLive),
				mib(r.idle.heapGoal), mib(r.rest.heapGoal))
			b.report("%s, replica %d, from no Foos to at rest: goroutine stacks %.1f to %.1f MiB, heap free and not returned %.1f to %.1f MiB, unused in the heap's spans %.1f to %.1f MiB, the runtime's metadata %.1f to %.1f MiB",
				c.name, j, mib(r.idle.stacks), mib(r.rest.stacks), mib(r.idle.free), mib(r.rest.free), mib(r.idle.unused), mib(r.rest.unused),
				mib(r.idle.metadata), mib(r.rest.metadata))
			b.report("%s, replica %d: its resident set, read every second, was highest %.0fs after the replicas started",
				c.name, j, r.peakAfter.Seconds())
		}
		b.report("%s (-shards=%d): every Foo converged %.1fs, Ready %.1fs after the replicas started",
			c.name, c.shards, converged.Seconds(), ready.Seconds())
	}
	b.report("the sharded bench took %v", time.Since(began).Round(time.Second))
	b.printResults()
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// shardedArgs are the flags of a replica of c: every namespace, leader
// election (sharding's Leases) in benchLeaseNamespace, and, sharded, the
// boundaries asked for.
func shardedArgs(c shardedConfig) []string {
	args := []string{"-namespace=", "-shards=" + strconv.Itoa(c.shards),
		"-leader-elect=true", "-leader-elect-namespace=" + benchLeaseNamespace}
	if c.shards > 1 {
		args = append(args, "-shard-boundaries="+shardedBoundaries)
	}
	return args
}

// weighted reports whether c's replicas split the ranges by weight.
func (c shardedConfig) weighted() bool {
	return c.shards > 1 && shardedBoundaries == replicas.BoundariesWeighted
}

// startReplicas starts c's replicas at once and waits until they work:
// the shards held among them, each its share within one, and, split by
// weight, every shard of the published split held; or the one replica
// leading.
func (b *bench) startReplicas(c shardedConfig, name string) []*framework.Controller {
	ctrls := make([]*framework.Controller, c.replicas)
	for i := range ctrls {
		replica := fmt.Sprintf("%s-%d", name, i)
		ctrls[i] = b.startBinary(b.ownHost(replica), "", replica, nil, shardedArgs(c)...)
	}
	low, high := c.shards/c.replicas, (c.shards+c.replicas-1)/c.replicas
	b.poll(runLimit(shardedFoos), name+" at work", func(ctx context.Context) (bool, error) {
		for _, ctrl := range ctrls {
			samples, err := framework.ScrapeURL(ctx, ctrl.MetricsURL())
			if err != nil {
				return false, nil
			}
			if c.shards == 1 {
				if framework.Sum(samples, "leader_election_master_status", nil) == 1 {
					return true, nil
				}
				continue
			}
			held := int(framework.Sum(samples, metrics.Subsystem+"_shards_held", nil))
			if held < low || held > high {
				return false, nil
			}
		}
		if c.weighted() {
			split, err := b.publishedSplit(ctx, c.shards)
			return err == nil && split.held, nil
		}
		return c.shards > 1, nil
	})
	return ctrls
}

// ownHost writes and returns a command that runs the controller with a
// host name of its own, host, as each replica's pod has in a cluster. A
// replica reads a member Lease of another identity on its own host as
// that of a restart, and counts it only once seen for a lease duration
// (pkg/replicas, liveMembers). Sharing this machine's host name, the
// replicas started together would each count the others late, and the
// first to take shards would take them all, listing every Foo.
func (b *bench) ownHost(host string) string {
	flags := "--uts"
	if os.Geteuid() != 0 { // a host name needs a user namespace of its own
		flags = "--user --map-root-user --uts"
	}
	// Each step execs the next, so that the controller runs as the
	// process started, whose memory the bench reads by its pid.
	script := fmt.Sprintf("#!/bin/sh\nexec unshare %s sh -c 'hostname \"$0\" && exec \"$@\"' %s %s \"$@\"\n",
		flags, host, b.bin)
	path := filepath.Join(b.t.TempDir(), host)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// split is the published boundaries of a count of shards: the starts of
// the ranges, the first 0; the generation that names their shard Leases;
// and whether each of those is held, renewed within the lease duration.
type split struct {
	starts     []uint64
	generation string
	held       bool
}

// benchLeaseDuration is the replicas' -leader-elect-lease-duration, the
// default.
const benchLeaseDuration = 15 * time.Second

// publishedSplit reads the boundaries Lease of count shards and the shard
// Leases of its split. The shards held are counted from the Leases and not
// from the replicas' metrics alone, which count the shards of equal ranges
// or of a split since replaced alike.
func (b *bench) publishedSplit(ctx context.Context, count int) (split, error) {
	leases := b.kube.CoordinationV1().Leases(benchLeaseNamespace)
	name := replicas.BoundariesLeaseName(samplecontroller.ControllerName, count)
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return split{}, err
	}
	starts, err := parseStarts(count, lease.Annotations[replicas.AnnotationBoundaries])
	if err != nil {
		return split{}, fmt.Errorf("the Lease %s: %w", name, err)
	}
	list, err := leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		return split{}, err
	}
	live := map[string]bool{}
	for _, l := range list.Items {
		if l.Spec.HolderIdentity != nil && l.Spec.RenewTime != nil &&
			time.Since(l.Spec.RenewTime.Time) < benchLeaseDuration {
			live[l.Name] = true
		}
	}
	// The generation is read off the name of shard 0's Lease: the bench
	// has no other way to learn which Leases the starts are named by.
	first := replicas.ShardLeaseName(samplecontroller.ControllerName, replicas.Shard{Index: 0, Count: count}) + "-"
	s := split{starts: starts}
	for l := range live {
		if generation, ok := strings.CutPrefix(l, first); ok {
			s.generation = generation
		}
	}
	if s.generation == "" {
		return s, nil
	}
	published := replicas.Boundaries{Starts: starts, Generation: s.generation}
	s.held = true
	for i := range count {
		s.held = s.held && live[replicas.ShardLeaseName(samplecontroller.ControllerName, published.Shard(i))]
	}
	return s, nil
}

// parseStarts reads the annotation of a boundaries Lease of count shards:
// the starts after the first, 0x and 16 hex digits each, rising, joined
// by commas.
func parseStarts(count int, annotation string) ([]uint64, error) {
	parts := strings.Split(annotation, ",")
	if len(parts) != count-1 {
		return nil, fmt.Errorf("%d starts in %q, want %d", len(parts), annotation, count-1)
	}
	starts := []uint64{0}
	for _, part := range parts {
		hex, ok := strings.CutPrefix(part, "0x")
		start, err := strconv.ParseUint(hex, 16, 64)
		if !ok || err != nil || start <= starts[len(starts)-1] {
			return nil, fmt.Errorf("start %q of %q is not 0x and hex digits above the one before", part, annotation)
		}
		starts = append(starts, start)
	}
	return starts, nil
}

// idleSettled is how long a replica's peak RSS with no Foos must grow by
// less than idleSettledGrowth to be its peak with no Foos. When its caches
// have synced, a replica's Go heap has not yet grown to the size its
// collector lets it reach before it collects: it gets there over its
// first minutes of work with no Foos (renewing Leases, scraped), and its
// peak RSS with it, more in a replica holding many shards, whose idle heap
// is larger. Read at the sync instead, that growth was counted as the
// Foos', and most in the replicas that hold a share of them.
const (
	idleSettled       = time.Minute
	idleSettledGrowth = 512 // KiB
)

// idleFigures runs c's replicas with no Foos until they work, their caches
// are synced, and their peak RSS has settled (idleSettled), scraped as a
// Prometheus would, and returns each one's peak RSS and its parts: what the
// Foos add is measured from there.
func (b *bench) idleFigures(c shardedConfig) []replicaFigures {
	ctrls := b.startReplicas(c, "idle-"+strings.ReplaceAll(c.name, " ", "-"))
	figures := make([]replicaFigures, len(ctrls))
	for _, ctrl := range ctrls {
		b.waitReadyz(ctrl)
	}
	const every = 10 * time.Second
	var peaks [][]int64 // each replica's peak at each poll
	b.pollEvery(every, 10*time.Minute, "the peak RSS with no Foos to settle", func(ctx context.Context) (bool, error) {
		now := make([]int64, len(ctrls))
		for i, ctrl := range ctrls {
			var err error
			if now[i], err = peakRSSKiB(ctrl.Pid()); err != nil {
				return false, err
			}
			if _, err := framework.ScrapeURL(ctx, ctrl.MetricsURL()); err != nil {
				return false, err
			}
		}
		peaks = append(peaks, now)
		back := len(peaks) - 1 - int(idleSettled/every)
		if back < 0 {
			return false, nil
		}
		for i := range ctrls {
			if peaks[len(peaks)-1][i]-peaks[back][i] >= idleSettledGrowth {
				return false, nil
			}
		}
		return true, nil
	})
	for i, ctrl := range ctrls {
		b.report("%s, replica %d, with no Foos: peak RSS %.1f MiB when its caches had synced, %.1f MiB settled %v later",
			c.name, i, mib(peaks[0][i]), mib(peaks[len(peaks)-1][i]), time.Duration(len(peaks)-1)*every)
		figures[i].idlePeak = peaks[len(peaks)-1][i]
		figures[i].idle = b.readMemoryParts(ctrl)
	}
	for _, ctrl := range ctrls {
		b.stopController(ctrl)
	}
	return figures
}

// shardedColdStart creates n Foos over shardedNamespaces namespaces named
// after prefix (namespaceName), with no controller running, starts c's
// replicas, and returns when every Foo converged and was Ready, counted
// from their start, and each replica's figures, idle's completed, once its
// syncs stood still; then it stops them, and removes the namespaces if
// asked: minutes at 10,000 Foos, not needed after the last run.
func (b *bench) shardedColdStart(c shardedConfig, prefix string, n int, idle []replicaFigures, remove bool) (toConverge,
	toReady time.Duration, figures []replicaFigures) {
	nss := make([]string, shardedNamespaces)
	for i := range nss {
		nss[i] = namespaceName(prefix, i)
		b.createNamespace(nss[i])
	}
	if c.shards > 1 {
		b.report("%s: the Foos of each of the %d shards of equal ranges, in order: %v", c.name, c.shards,
			foosByShard(nss, n, c.shards))
	}
	t := b.newTracker(metav1.NamespaceAll)
	defer t.stop()
	err := framework.Parallel(n, floorWorkers, func(i int) error {
		ns := nss[i%len(nss)]
		_, err := b.sample.SamplecontrollerV1beta1().Foos(ns).Create(b.ctx, newFoo(ns, fooName(i)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	b.waitUntil(t, "the Foos of "+prefix, runLimit(n), allFoos(n))

	if c.weighted() {
		// The boundaries the idle run published split no Foos: equal
		// ranges, which the replicas would hold, and crowd, until they
		// weighed again, RebalancePeriod on. A first deployment has none.
		err := b.kube.CoordinationV1().Leases(benchLeaseNamespace).Delete(b.ctx,
			replicas.BoundariesLeaseName(samplecontroller.ControllerName, c.shards), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			b.t.Fatal(err)
		}
	}
	start := time.Now()
	ctrls := b.startReplicas(c, prefix)
	var published split
	if c.weighted() {
		if published, err = b.publishedSplit(b.ctx, c.shards); err != nil {
			b.t.Fatal(err)
		}
		b.report("%s: the Foos of each of the %d shards of the published split %s, in order: %v", c.name, c.shards,
			published.generation, foosByRange(nss, n, published.starts))
	}
	samplers := make([]*rssSampler, len(ctrls))
	for i, ctrl := range ctrls {
		if samplers[i], err = startRSSSampler(ctrl.Pid(), time.Second); err != nil {
			b.t.Fatal(err)
		}
	}
	toConverge = b.waitUntil(t, "convergence of "+prefix, runLimit(n), converged(n)).Sub(start)
	toReady = b.waitUntil(t, "every Foo of "+prefix+" Ready", runLimit(n), allReady(n)).Sub(start)
	// At rest: the rollouts done, the syncs they set off over.
	_, quiet := b.waitQuiet(runLimit(n), func(ctx context.Context) (float64, error) {
		var syncs float64
		for _, ctrl := range ctrls {
			samples, err := framework.ScrapeURL(ctx, ctrl.MetricsURL())
			if err != nil {
				return 0, err
			}
			syncs += syncCount(samples)
		}
		return syncs, nil
	})
	if !quiet {
		b.t.Fatalf("%s: the replicas still synced Foos %v after every Foo was Ready", prefix, runLimit(n))
	}
	if c.weighted() {
		now, err := b.publishedSplit(b.ctx, c.shards)
		if err != nil {
			b.t.Fatal(err)
		}
		if now.generation != published.generation {
			b.report("%s: the ranges split anew while the Foos converged: %s, then %s: the Foos of each shard %v",
				c.name, published.generation, now.generation, foosByRange(nss, n, now.starts))
		}
	}
	for i, ctrl := range ctrls {
		r := idle[i]
		samplers[i].stop()
		r.peakAfter = samplers[i].peakAfter + samplers[i].began.Sub(start)
		r.rest = b.readMemoryParts(ctrl)
		if r.peak, err = peakRSSKiB(ctrl.Pid()); err != nil {
			b.t.Fatal(err)
		}
		if r.atRest, err = rssKiB(ctrl.Pid()); err != nil {
			b.t.Fatal(err)
		}
		samples := b.scrapeController(ctrl)
		r.shardsHeld = framework.Sum(samples, metrics.Subsystem+"_shards_held", nil)
		r.foosCached = framework.Sum(samples, metrics.Subsystem+"_foos", nil)
		if c.shards > 1 {
			b.report("%s, replica %d: shard handovers %s", c.name, i, handovers(samples))
		}
		figures = append(figures, r)
		b.saveHeapProfile(ctrl, fmt.Sprintf("%s-%d", prefix, i))
	}
	for _, ctrl := range ctrls {
		b.stopController(ctrl)
	}
	if !remove {
		return toConverge, toReady, figures
	}
	for _, ns := range nss {
		if err := b.kube.CoreV1().Namespaces().Delete(b.ctx, ns, metav1.DeleteOptions{}); err != nil {
			b.t.Fatal(err)
		}
	}
	for _, ns := range nss {
		b.waitNamespaceGone(ns, n/len(nss))
	}
	return toConverge, toReady, figures
}

// namespaceName is the i-th namespace of the run prefix. Numbered, the
// number comes first: FNV-1a, the API server's hash, carries a name's last
// bytes into the low bits of the hash alone, and equal ranges split the
// high bits, so names that differ only at their end share a shard
// (docs/operations.md, Sharding). Tenant names put it last,
// <prefix>-tenant-<i>, as tenants' namespaces are often named, and equal
// ranges crowd; the prefix keeps each run's namespaces apart from the
// last run's, which may still be being deleted.
func namespaceName(prefix string, i int) string {
	if shardedNames == "tenant" {
		return fmt.Sprintf("%s-tenant-%d", prefix, i)
	}
	return fmt.Sprintf("%03d-%s", i, prefix)
}

// foosByShard counts the Foos each of count shards holds when n Foos are
// spread evenly over namespaces, as shardedColdStart spreads them: a
// replica's share of the Foos is the sum over the shards it holds.
func foosByShard(namespaces []string, n, count int) []int {
	perShard := make([]int, count) // not foos: a copy (hack/new-controller) names its package so
	for i := range n {
		perShard[replicas.Of(namespaces[i%len(namespaces)], count).Index]++
	}
	return perShard
}

// foosByRange is foosByShard for the shards of published starts: a
// namespace is in the last range whose start is at most its hash, the
// API server's, FNV-1a 64 of its name.
func foosByRange(namespaces []string, n int, starts []uint64) []int {
	perShard := make([]int, len(starts))
	for i := range n {
		h := fnv.New64a()
		h.Write([]byte(namespaces[i%len(namespaces)]))
		hash := h.Sum64()
		index, found := slices.BinarySearch(starts, hash)
		if !found {
			index--
		}
		perShard[index]++
	}
	return perShard
}

// handovers are a replica's shard handovers by event, as its metrics count
// them.
func handovers(samples []framework.Sample) string {
	kinds := []string{"acquired", "released", "lost"}
	events := make([]string, 0, len(kinds))
	for _, event := range kinds {
		count := framework.Sum(samples, metrics.Subsystem+"_shard_handovers_total",
			func(l map[string]string) bool { return l["event"] == event })
		events = append(events, fmt.Sprintf("%s %.0f", event, count))
	}
	return strings.Join(events, ", ")
}
