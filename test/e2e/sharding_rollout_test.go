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
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	"github.com/kube-samples/sample-controller/test/framework"
)

const (
	// rolloutClusterDir holds the rollout test's control plane, of its own:
	// room on the fake node for every Foo at its largest, and an audit log.
	rolloutClusterDir = "rollout-cluster"
	// rolloutLeaseNamespace holds the replicas' Leases, whose writes the
	// audit policy records.
	rolloutLeaseNamespace = "rollout-leases"
	rolloutID             = "e2e-rollout"
	rolloutNamespaces     = 24
	rolloutFoosPerNS      = 2
	// The replicas' lease timing, short for a short test; the bounds
	// below follow from it.
	rolloutLeaseDuration = 6 * time.Second
	rolloutRenewDeadline = 4 * time.Second
	rolloutRetryPeriod   = time.Second
	// rolloutPause is how long a rollout waits between its steps, as a
	// Deployment's does for its new pods to be Ready (or paused): the old
	// replicas must keep every Foo reconciled meanwhile. Two lease
	// durations: a shard left unheld through one pause outlasts
	// rolloutUnheldBound, through both rolloutReconcileBound.
	rolloutPause = 2 * rolloutLeaseDuration
	// rolloutUnheldBound is the longest a namespace may go with none of
	// its Leases held: the replicas that are to take a shard take none
	// while a Lease of another sharding is held and fresh, so one the old
	// holder did not release holds them back for a lease duration after
	// its last renewal, and their requests may take a renew deadline.
	rolloutUnheldBound = rolloutLeaseDuration + rolloutRenewDeadline
	// rolloutReconcileBound is the longest a user's change may wait for
	// its Deployment: rolloutUnheldBound, and room for the new holder's
	// list and the Deployment's write on a loaded machine. A change made
	// to a shard that no replica takes until the old replicas left waits
	// two pauses, more than this.
	rolloutReconcileBound = rolloutUnheldBound + 10*time.Second
)

// A rolling update between shardings, as a Deployment with maxSurge makes
// it, has one writer for each Foo at every moment and leaves no Foo without
// one for long: 48 Foos in 24 namespaces, tenant-0 to tenant-23, from 2
// unsharded replicas to 16 shards, to 8, back to 16, to 16 split by weight
// (-shard-boundaries=weighted: the new replicas publish boundaries once the
// old have left, and every shard moves to them), and back to one. Split by
// weight, each of the 16 shards holds 1 or 2 of the namespaces that equal
// ranges crowd into a few. Each rollout starts 2 new
// replicas beside the 2 old ones, waits (a rollout paused, or slow pods),
// and then terminates the old ones one by one (SIGTERM, the leader first),
// waiting between them again, so that an old replica is alive all along.
// Meanwhile a user changes a random Foo's replicas every few hundred
// milliseconds, and each change must reach its Deployment within
// rolloutReconcileBound. The audit log is the judge: every write for a Foo
// or its Deployment came from a replica holding a Lease that covers its
// namespace (the unsharded leader's, or its shard's of 8 or 16, of equal
// ranges or of the published boundaries) at that
// moment; no two replicas wrote for a namespace while both held such a
// Lease; and no namespace went without a held Lease for longer than
// rolloutUnheldBound.
func TestRollingUpdatesBetweenShardingsKeepOneWriterAndNoShardUnheld(t *testing.T) {
	want := rolloutNamespaces * rolloutFoosPerNS
	policy := filepath.Join(t.TempDir(), "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(framework.AuditPolicy(rolloutLeaseNamespace)), 0o644); err != nil {
		t.Fatal(err)
	}
	own := useOwnCluster(t, rolloutClusterDir, framework.WithAuditPolicy(policy),
		framework.WithNodePods(3*want+100), framework.WithTimeout(180*time.Second))
	ensureStandardCRD(t)
	if _, err := cluster.Kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rolloutLeaseNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nss := make([]string, 0, rolloutNamespaces)
	for i := range rolloutNamespaces { // names that differ at their end, which equal ranges crowd together
		ns := fmt.Sprintf("tenant-%d", i)
		if _, err := cluster.Kube.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		nss = append(nss, ns)
	}
	foos := make([]string, 0, want)
	for _, ns := range nss {
		for i := range rolloutFoosPerNS {
			foos = append(foos, fmt.Sprintf("%s/foo-%d", ns, i))
		}
	}
	err := framework.Parallel(want, creators, func(i int) error {
		ns, name, _ := strings.Cut(foos[i], "/")
		_, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Create(context.Background(),
			newFoo(ns, name, name, int32p(1)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	run := &rolloutRun{t: t}
	old := run.start(1, false, "unsharded-a", "unsharded-b")
	run.waitServing(old)
	waitShardedFoosReady(t, nss, want)
	t.Logf("2 unsharded replicas, %d Foos in %d namespaces Ready", want, rolloutNamespaces)

	user := newRolloutUser(cluster.Sample, cluster.Kube, foos)
	user.start()
	t.Cleanup(user.stop)
	type rollout struct {
		name     string
		from, to time.Time
	}
	steps := []struct {
		shards   int
		weighted bool
		names    []string
	}{
		{16, false, []string{"shards16-a", "shards16-b"}},
		{8, false, []string{"shards8-a", "shards8-b"}},
		{16, false, []string{"shards16-c", "shards16-d"}},
		{16, true, []string{"weighted16-a", "weighted16-b"}},
		{1, false, []string{"unsharded-c", "unsharded-d"}},
	}
	rollouts := make([]rollout, 0, len(steps))
	for i, step := range steps {
		r := rollout{name: fmt.Sprintf("%s -> %s", old, describeSharding(step.shards, step.weighted)), from: time.Now()}
		next := run.start(step.shards, step.weighted, step.names...)
		run.replaceOneByOne(old)
		run.waitServing(next)
		r.to = time.Now()
		changes := user.nextRollout()
		if i == len(steps)-1 {
			user.stopChanging()
		}
		expectChangesReconciled(t, user, r.name, changes)
		t.Logf("rollout %s: took %v", r.name, r.to.Sub(r.from).Round(time.Second))
		if step.weighted {
			expectTenantsSpread(t, nss, run.starts)
		}
		rollouts = append(rollouts, r)
		old = next
	}
	if errs := user.failures(); len(errs) > 0 {
		t.Errorf("the user's changes failed %d times: %v", len(errs), errs)
	}

	waitShardedFoosReady(t, nss, want)
	expectLastChangesApplied(t, user.lastValues())
	end := time.Now()

	// The audit log.
	events, cut, err := framework.ReadAuditLog(own.AuditLogPath())
	if err != nil {
		t.Fatal(err)
	}
	leaderships := map[string][]framework.Leadership{}
	names := []string{rolloutID}
	for _, count := range []int{8, 16} {
		for i := range count {
			names = append(names, shardLeaseName(rolloutID, i, count))
		}
	}
	for i := range run.starts {
		names = append(names, generationLeaseName(rolloutID, i, 16, run.generation))
	}
	for _, name := range names {
		if leaderships[name], err = framework.Leaderships(events, rolloutLeaseNamespace, name); err != nil {
			t.Fatal(err)
		}
	}
	covering := func(ns string) []string {
		return []string{rolloutID, shardLeaseName(rolloutID, shardOf(ns, 8), 8),
			shardLeaseName(rolloutID, shardOf(ns, 16), 16),
			generationLeaseName(rolloutID, weightedShardOf(ns, run.starts), 16, run.generation)}
	}
	for _, ns := range nss {
		for _, name := range covering(ns) {
			if len(leaderships[name]) == 0 {
				t.Fatalf("no holder of the Lease %s, of namespace %s, in the audit log %s: the checks would see "+
					"nothing", name, ns, own.AuditLogPath())
			}
		}
	}
	writes, writers := framework.ControllerWrites(events)
	t.Logf("audit log: %d requests audited (%d cut lines); %d writes for the Foos and their Deployments by %d "+
		"replicas judged; the unsharded leader's Lease changed hands %d times", len(events), cut, writes, writers,
		len(leaderships[rolloutID]))
	expectNone(t, "accepted writes from a replica that held no Lease covering the namespace",
		framework.WritesOutsideLeases(events, leaderships, covering))
	two := framework.WritesByTwoReplicas(events, leaderships, covering)
	t.Logf("writes for one namespace by two replicas while both held its Leases: %d", len(two))
	expectNone(t, "pairs of writes for one namespace by two replicas while both held its Leases", two)
	for _, r := range rollouts {
		ns, gap := longestUnheld(leaderships, nss, covering, r.from, r.to)
		t.Logf("rollout %s: the longest a namespace had none of its Leases held: %s", r.name, describeGap(ns, gap))
	}
	ns, gap := longestUnheld(leaderships, nss, covering, time.Time{}, end)
	t.Logf("the whole test: the longest a namespace had none of its Leases held: %s", describeGap(ns, gap))
	if gap.To.Sub(gap.From) > rolloutUnheldBound {
		t.Errorf("namespace %s had none of its Leases %v held from %s to %s, %v, more than %v", ns, covering(ns),
			gap.From.Format("15:04:05.000"), gap.To.Format("15:04:05.000"), gap.To.Sub(gap.From), rolloutUnheldBound)
	}
}

// longestUnheld is the longest framework.LongestUnheld over the namespaces,
// and its namespace.
func longestUnheld(leaderships map[string][]framework.Leadership, nss []string, covering func(string) []string,
	from, to time.Time) (string, framework.Window) {
	var (
		longest framework.Window
		which   string
	)
	for _, ns := range nss {
		if gap := framework.LongestUnheld(leaderships, covering(ns), from, to); which == "" ||
			gap.To.Sub(gap.From) > longest.To.Sub(longest.From) {
			longest, which = gap, ns
		}
	}
	return which, longest
}

func describeGap(ns string, gap framework.Window) string {
	if gap.To.Equal(gap.From) {
		return "0s"
	}
	return fmt.Sprintf("%v (%s, from %s)", gap.To.Sub(gap.From).Round(10*time.Millisecond), ns,
		gap.From.Format("15:04:05.000"))
}

// rolloutSide is the replicas of one sharding (shards 1: unsharded).
type rolloutSide struct {
	shards   int
	weighted bool
	replicas []*replica
}

func (s *rolloutSide) String() string { return describeSharding(s.shards, s.weighted) }

// describeSharding names a sharding in the test's log: 1, 16, 16 weighted.
func describeSharding(shards int, weighted bool) string {
	if weighted {
		return fmt.Sprintf("%d weighted", shards)
	}
	return strconv.Itoa(shards)
}

// rolloutRun starts and stops the replicas of the rollouts.
type rolloutRun struct {
	t *testing.T
	// starts and generation are the boundaries the weighted replicas
	// published, once they did (waitServing).
	starts     []uint64
	generation string
}

// start starts a replica of shards for each name, splitting them by weight
// if weighted.
func (r *rolloutRun) start(shards int, weighted bool, names ...string) *rolloutSide {
	r.t.Helper()
	args := []string{"-leader-elect-namespace=" + rolloutLeaseNamespace, "-leader-elect-id=" + rolloutID,
		"-leader-elect-lease-duration=" + rolloutLeaseDuration.String(),
		"-leader-elect-renew-deadline=" + rolloutRenewDeadline.String(),
		"-leader-elect-retry-period=" + rolloutRetryPeriod.String()}
	if shards > 1 {
		args = append(args, "-shards="+strconv.Itoa(shards))
	}
	if weighted {
		args = append(args, "-shard-boundaries=weighted")
	}
	side := &rolloutSide{shards: shards, weighted: weighted}
	for _, name := range names {
		c := startController(r.t, name, args...)
		identity := ""
		if shards > 1 {
			identity = shardingIdentity(r.t, c)
		} else {
			identity = leaderElectionIdentity(r.t, c)
		}
		side.replicas = append(side.replicas, &replica{Controller: c, identity: identity})
	}
	return side
}

// replaceOneByOne is the rest of a rollout, once the new replicas started:
// a pause, the old leader (unsharded) or the first old replica terminated,
// a pause, and the other.
func (r *rolloutRun) replaceOneByOne(old *rolloutSide) {
	r.t.Helper()
	time.Sleep(rolloutPause)
	first, second := old.replicas[0], old.replicas[1]
	if old.shards == 1 && r.leaderHolder() == second.identity {
		first, second = second, first
	}
	r.terminate(first)
	time.Sleep(rolloutPause)
	if old.shards == 1 {
		r.t.Logf("the Lease %s, a pause after the old leader %s left: held by %q (the old standby %s is %q)",
			rolloutID, r.short(first), r.leaderHolder(), r.short(second), second.identity)
	}
	r.terminate(second)
}

// short is the name the replica was started with.
func (r *rolloutRun) short(rep *replica) string {
	return strings.TrimPrefix(rep.Name, strings.NewReplacer("/", "_", " ", "_").Replace(r.t.Name())+"-")
}

// leaderHolder is the holder of the unsharded leader's Lease, "" for none.
func (r *rolloutRun) leaderHolder() string {
	r.t.Helper()
	lease, err := cluster.Kube.CoordinationV1().Leases(rolloutLeaseNamespace).Get(context.Background(), rolloutID,
		metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return leaseHolderOf(lease)
}

// terminate sends the replica SIGTERM and waits for it to exit with 0.
func (r *rolloutRun) terminate(rep *replica) {
	r.t.Helper()
	if err := rep.Signal(syscall.SIGTERM); err != nil {
		r.t.Fatal(err)
	}
	sent := time.Now()
	exited := <-waitExit(rep.Controller, terminationGracePeriod)
	if exited.err != nil || exited.code != 0 {
		r.t.Fatalf("%s after SIGTERM: exit %d, %v", r.short(rep), exited.code, exited.err)
	}
	r.t.Logf("%s exited %v after SIGTERM", r.short(rep), exited.at.Sub(sent).Round(10*time.Millisecond))
}

// waitServing waits until side holds every Lease of its sharding, and no
// Lease of another is held: every shard spread over side's replicas, or the
// unsharded leader's Lease held by one of them and no shard Lease by anyone.
func (r *rolloutRun) waitServing(side *rolloutSide) {
	r.t.Helper()
	if side.shards > 1 {
		sharded := map[string]*shardedReplica{}
		for _, rep := range side.replicas {
			sharded[rep.Name] = &shardedReplica{Controller: rep.Controller, identity: rep.identity}
		}
		if !side.weighted {
			waitShardsSpread(r.t, rolloutLeaseNamespace, rolloutID, side.shards, sharded)
			return
		}
		eventually(r.t, convergeTimeout, "the boundaries published", func(ctx context.Context) (bool, error) {
			var err error
			r.starts, r.generation, err = publishedBoundaries(ctx, rolloutLeaseNamespace, rolloutID, side.shards)
			return err == nil, err
		})
		waitGenerationSpread(r.t, rolloutLeaseNamespace, rolloutID, side.shards, r.generation, sharded)
		return
	}
	eventually(r.t, convergeTimeout, "the unsharded leader's Lease held by a new replica, no shard's",
		func(ctx context.Context) (bool, error) {
			lease, err := cluster.Kube.CoordinationV1().Leases(rolloutLeaseNamespace).Get(ctx, rolloutID,
				metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			holder := leaseHolderOf(lease)
			if !slices.ContainsFunc(side.replicas, func(rep *replica) bool { return rep.identity == holder }) {
				return false, fmt.Errorf("the Lease %s is held by %q", rolloutID, holder)
			}
			for _, sharding := range []struct {
				count      int
				generation string
			}{{8, ""}, {16, ""}, {16, r.generation}} {
				holders, err := generationHolders(ctx, rolloutLeaseNamespace, rolloutID, sharding.count,
					sharding.generation)
				if err != nil {
					return false, err
				}
				for i, h := range holders {
					if h != "" {
						return false, fmt.Errorf("the Lease of shard %d of %d %s is held by %q", i, sharding.count,
							sharding.generation, h)
					}
				}
			}
			return true, nil
		})
}

// userChange is a change of a Foo's spec.replicas by the user.
type userChange struct {
	foo      string // namespace/name, the name its Deployment's too
	replicas int32
	// made is when the API server had answered the change; seen, when a
	// list of the Deployments begun after it showed the Foo's Deployment
	// at its value or at a later change's (zero until then).
	made, seen time.Time
}

// rolloutUser changes a random Foo every few hundred milliseconds, and
// watches the Deployments for the changes.
type rolloutUser struct {
	sample versioned.Interface
	kube   kubernetes.Interface
	foos   []string

	mu      sync.Mutex
	last    map[string]int32         // each Foo's spec.replicas as last set
	byFoo   map[string][]*userChange // each Foo's changes, in order
	current []*userChange            // the changes since the last nextRollout
	errs    []error

	stopChanging, stopWatching context.CancelFunc
	changing, watching         sync.WaitGroup
}

func newRolloutUser(sample versioned.Interface, kube kubernetes.Interface, foos []string) *rolloutUser {
	u := &rolloutUser{sample: sample, kube: kube, foos: foos, last: map[string]int32{},
		byFoo: map[string][]*userChange{}}
	for _, foo := range foos {
		u.last[foo] = 1
	}
	return u
}

func (u *rolloutUser) start() {
	changing, stopChanging := context.WithCancel(context.Background())
	watching, stopWatching := context.WithCancel(context.Background())
	u.stopChanging = func() { stopChanging(); u.changing.Wait() }
	u.stopWatching = func() { stopWatching(); u.watching.Wait() }
	rng := rand.New(rand.NewPCG(74, 1))
	u.changing.Go(func() {
		for {
			select {
			case <-changing.Done():
				return
			case <-time.After(300*time.Millisecond + time.Duration(rng.IntN(200))*time.Millisecond):
			}
			u.change(rng)
		}
	})
	u.watching.Go(func() {
		for {
			select {
			case <-watching.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			u.watch()
		}
	})
}

func (u *rolloutUser) stop() {
	if u.stopChanging != nil {
		u.stopChanging()
		u.stopWatching()
	}
}

// change sets a random Foo's replicas to one of the two values of 1 to 3
// it does not have. Its requests have no part in the stop: one cut short
// could have changed the Foo unrecorded.
func (u *rolloutUser) change(rng *rand.Rand) {
	foo := u.foos[rng.IntN(len(u.foos))]
	ns, name, _ := strings.Cut(foo, "/")
	u.mu.Lock()
	value := (u.last[foo]+int32(rng.IntN(2)))%3 + 1
	u.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := u.sample.SamplecontrollerV1beta1().Foos(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		f, err := client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		f.Spec.Replicas = &value
		_, err = client.Update(ctx, f, metav1.UpdateOptions{})
		return err
	})
	made := time.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		u.errs = append(u.errs, fmt.Errorf("%s to %d: %w", foo, value, err))
		return
	}
	c := &userChange{foo: foo, replicas: value, made: made}
	u.last[foo] = value
	u.byFoo[foo] = append(u.byFoo[foo], c)
	u.current = append(u.current, c)
}

// watch lists the Deployments, and marks seen each change whose
// Deployment has the value of the Foo's last change made before the list.
func (u *rolloutUser) watch() {
	begun := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := u.kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return // the next list tells
	}
	answered := time.Now()
	replicas := map[string]int32{}
	for _, d := range list.Items {
		if d.Spec.Replicas != nil {
			replicas[d.Namespace+"/"+d.Name] = *d.Spec.Replicas
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for foo, changes := range u.byFoo {
		before := -1
		for i, c := range changes {
			if c.made.Before(begun) {
				before = i
			}
		}
		if before < 0 || replicas[foo] != changes[before].replicas {
			continue
		}
		for _, c := range changes[:before+1] {
			if c.seen.IsZero() {
				c.seen = answered
			}
		}
	}
}

// nextRollout returns the changes made since it was last called.
func (u *rolloutUser) nextRollout() []*userChange {
	u.mu.Lock()
	defer u.mu.Unlock()
	changes := u.current
	u.current = nil
	return changes
}

// waits are how long each of changes waited for its Deployment, so far.
func (u *rolloutUser) waits(changes []*userChange) (waits []time.Duration, unseen int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, c := range changes {
		if c.seen.IsZero() {
			unseen++
			waits = append(waits, time.Since(c.made))
			continue
		}
		waits = append(waits, c.seen.Sub(c.made))
	}
	return waits, unseen
}

func (u *rolloutUser) failures() []error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.errs)
}

func (u *rolloutUser) lastValues() map[string]int32 {
	u.mu.Lock()
	defer u.mu.Unlock()
	last := map[string]int32{}
	for foo, v := range u.last {
		last[foo] = v
	}
	return last
}

// expectChangesReconciled waits for the Deployments of changes, made during
// the rollout name, and fails the test if one waited longer than
// rolloutReconcileBound.
func expectChangesReconciled(t *testing.T, user *rolloutUser, name string, changes []*userChange) {
	t.Helper()
	if len(changes) == 0 {
		t.Fatalf("rollout %s: the user changed no Foo during it", name)
	}
	deadline := time.Now().Add(convergeTimeout)
	waits, unseen := user.waits(changes)
	for unseen > 0 && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		waits, unseen = user.waits(changes)
	}
	longest := slices.Index(waits, slices.Max(waits))
	c := changes[longest]
	t.Logf("rollout %s: %d changes of a Foo's replicas by the user; the longest until its Deployment had it: %v "+
		"(%s to %d at %s)", name, len(changes), waits[longest].Round(10*time.Millisecond), c.foo, c.replicas,
		c.made.Format("15:04:05.000"))
	if unseen > 0 {
		t.Errorf("rollout %s: %d changes still not on their Deployments %v after the rollout", name, unseen,
			convergeTimeout)
	}
	if waits[longest] > rolloutReconcileBound {
		var late []string
		for i, w := range waits {
			if w > rolloutReconcileBound {
				late = append(late, fmt.Sprintf("%s to %d at %s: %v", changes[i].foo, changes[i].replicas,
					changes[i].made.Format("15:04:05.000"), w.Round(10*time.Millisecond)))
			}
		}
		t.Errorf("rollout %s: %d changes waited longer than %v for their Deployments: %s", name, len(late),
			rolloutReconcileBound, strings.Join(late, "; "))
	}
}

// expectLastChangesApplied checks that every Foo, and its Deployment, has
// the replicas the user last set.
func expectLastChangesApplied(t *testing.T, last map[string]int32) {
	t.Helper()
	for _, foo := range slices.Sorted(maps.Keys(last)) {
		ns, name, _ := strings.Cut(foo, "/")
		f := getFoo(t, ns, name)
		d, err := getDeployment(context.Background(), ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if specReplicas(f) != last[foo] || d.Spec.Replicas == nil || *d.Spec.Replicas != last[foo] {
			t.Errorf("Foo %s: spec.replicas %d, its Deployment's %v; the user last set %d", foo, specReplicas(f),
				d.Spec.Replicas, last[foo])
		}
	}
}

// publishedBoundaries reads the boundaries Lease of count shards: the
// starts of the ranges, from 0, and their generation, which names their
// shard Leases: FNV-1a 32 of the annotation, as docs/operations.md says,
// worked out here apart from pkg/replicas.
func publishedBoundaries(ctx context.Context, leaseNS, id string, count int) ([]uint64, string, error) {
	lease, err := cluster.Kube.CoordinationV1().Leases(leaseNS).Get(ctx,
		fmt.Sprintf("%s-boundaries-of-%d", id, count), metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	annotation := lease.Annotations["samplecontroller.k8s.io/boundaries"]
	starts := []uint64{0}
	for part := range strings.SplitSeq(annotation, ",") {
		start, err := strconv.ParseUint(strings.TrimPrefix(part, "0x"), 16, 64)
		if err != nil {
			return nil, "", fmt.Errorf("the boundaries Lease %s says %q: %w", lease.Name, annotation, err)
		}
		starts = append(starts, start)
	}
	if len(starts) != count {
		return nil, "", fmt.Errorf("the boundaries Lease %s has %d ranges, want %d", lease.Name, len(starts), count)
	}
	h := fnv.New32a()
	h.Write([]byte(annotation))
	return starts, fmt.Sprintf("%08x", h.Sum32()), nil
}

// weightedShardOf is the range of starts the namespace's FNV-1a 64 hash
// falls in.
func weightedShardOf(namespace string, starts []uint64) int {
	h := fnv.New64a()
	h.Write([]byte(namespace))
	hash := h.Sum64()
	index := 0
	for i, start := range starts {
		if hash >= start {
			index = i
		}
	}
	return index
}

// expectTenantsSpread fails the test unless every one of the published
// ranges holds 1 or 2 of the namespaces, 24 over 16 with 2 Foos each, and
// logs how equal ranges would have held them.
func expectTenantsSpread(t *testing.T, nss []string, starts []uint64) {
	t.Helper()
	weighted, equal := make([]int, len(starts)), make([]int, len(starts))
	for _, ns := range nss {
		weighted[weightedShardOf(ns, starts)]++
		equal[shardOf(ns, len(starts))]++
	}
	t.Logf("namespaces per shard: split by weight %v; equal ranges %v", weighted, equal)
	for i, n := range weighted {
		if n != 1 && n != 2 {
			t.Errorf("shard %d of the published boundaries holds %d of the %d namespaces, want 1 or 2 (%v)", i, n,
				len(nss), weighted)
		}
	}
}
