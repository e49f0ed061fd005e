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

// Chaos: the fault suite's faults, unscripted. Two replicas, each restarted
// when it exits; users changing Foos and their Deployments at a steady
// rate; and, at seeded moments, every kind of fault: the leader killed, the
// leader paused past its lease, kube-apiserver killed or paused, etcd
// killed, priority and fairness rejecting the controller. Then, once the
// faults have healed, the invariants against the API server, and the audit
// log's account of who wrote what (chaos_audit_test.go). A run prints its
// seed; CHAOS_SEED replays the same operations and faults in the same
// order (their timing, and so the interleaving, is the machine's).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/test/framework"
)

// chaosConfig sizes a scenario.
type chaosConfig struct {
	seed       uint64
	duration   time.Duration // of the traffic and faults
	foos       int           // at the start
	rate       float64       // user operations per second
	faultEvery time.Duration // one fault per slot of this length
	settle     time.Duration // bound on the wait for quiescence, and for a queue to drain
	// shards is the replicas' -shards; above 1, "the leader" is the
	// holder of the Foos' shard, and the audit log is judged by shard.
	shards int
}

// The make test run: every fault kind once (six slots of 25 s), over 40
// Foos, the seed fixed.
const (
	defaultChaosSeed     = 17
	defaultChaosDuration = 150 * time.Second
	defaultChaosFoos     = 40
)

func TestChaosKeepsInvariants(t *testing.T) {
	s := newChaosScenario(t, defaultChaosConfig(t))
	healed := s.run(t)
	s.expectInvariants(t, healed)
}

// The same chaos with the replicas sharing fenceShards shards: the faults
// strike the holder of the Foos' shard, a paused holder's shard is taken
// and it rejoins, and no write for a Foo comes from a replica that did
// not hold the Lease of its shard then.
func TestShardedChaosKeepsInvariants(t *testing.T) {
	cfg := defaultChaosConfig(t)
	cfg.shards = fenceShards
	s := newChaosScenario(t, cfg)
	healed := s.run(t)
	s.expectInvariants(t, healed)
}

// defaultChaosConfig is make test's scenario, sized by CHAOS_* where set.
func defaultChaosConfig(t *testing.T) chaosConfig {
	duration := envDuration(t, "CHAOS_DURATION", defaultChaosDuration)
	return chaosConfig{
		seed:     envUint(t, "CHAOS_SEED", defaultChaosSeed),
		duration: duration,
		foos:     envInt(t, "CHAOS_FOOS", defaultChaosFoos),
		rate:     4,
		// At least one round of every kind, however short the run.
		faultEvery: duration / time.Duration(len(chaosFaults)),
		settle:     3 * time.Minute,
	}
}

// chaosScenario is a running scenario.
type chaosScenario struct {
	cfg      chaosConfig
	rng      *rand.Rand // the faults' draws; the users have their own
	world    *chaosWorld
	replicas []*supervised
	traffic  *traffic
	// refused are the faults' windows in which the API server refused or
	// stalled the controller, until its queue drained after.
	refused []framework.Window
}

// newChaosScenario sets up the world, starts the two replicas, waits until
// the first Foos have converged, and starts the users.
func newChaosScenario(t *testing.T, cfg chaosConfig) *chaosScenario {
	t.Helper()
	t.Logf("chaos seed %d (replay: CHAOS_SEED=%d); %v of traffic at %.1f operations/s over %d Foos, a fault every %v, %d shards",
		cfg.seed, cfg.seed, cfg.duration, cfg.rate, cfg.foos, cfg.faultEvery, max(cfg.shards, 1))
	s := &chaosScenario{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 0))}
	s.world = setUpChaosWorld(t, cfg.foos, s.rng, cfg.duration+2*time.Hour)
	for i, name := range []string{"replica-a", "replica-b"} {
		args := s.world.replicaArgs(i)
		if cfg.shards > 1 {
			args = append(args, fmt.Sprintf("-shards=%d", cfg.shards))
		}
		s.replicas = append(s.replicas, superviseReplica(t, name, args...))
	}
	start := time.Now()
	run := s.world.faultRun(cfg.foos, s.waitLeader(t))
	run.leaseID = s.leaseName()
	run.waitConverged(t, start)
	t.Logf("%d Foos converged %v after the replicas started", cfg.foos, time.Since(start).Round(100*time.Millisecond))
	names := make([]string, cfg.foos)
	for i := range names {
		names[i] = chaosFooName(i)
	}
	s.traffic = startTraffic(t, s.world.ns, names, cfg.seed+1, cfg.rate)
	return s
}

// run injects the scheduled faults while the users work, waits after each
// for the leader's queue to drain, stops the users at the end, makes sure
// every component runs again, and returns when the last fault healed.
func (s *chaosScenario) run(t *testing.T) time.Time {
	t.Helper()
	start := time.Now()
	healed := start
	for _, f := range faultSchedule(s.rng, s.cfg.duration, s.cfg.faultEvery) {
		time.Sleep(time.Until(start.Add(f.at))) // the faults' pace: the scenario itself
		began := time.Now()
		f.fault.inject(t, s)
		healed = time.Now()
		drained := s.waitDrained(t)
		if f.fault.refusesController {
			s.refused = append(s.refused, framework.Window{From: began, To: healed.Add(drained)})
		}
		t.Logf("%s at %v: lasted %v; the leader's queue drained %v after it healed", f.fault.name,
			began.Sub(start).Round(100*time.Millisecond), healed.Sub(began).Round(100*time.Millisecond), drained.Round(100*time.Millisecond))
	}
	time.Sleep(time.Until(start.Add(s.cfg.duration)))
	s.traffic.halt()
	t.Logf("users: %v", s.traffic)
	for _, component := range []string{framework.Etcd, framework.KubeAPIServer, framework.KubeControllerManager, framework.KubeScheduler, framework.Kwok} {
		if err := cluster.EnsureComponent(component); err != nil {
			t.Fatal(err)
		}
	}
	return healed
}

// leaseName is the Lease whose holder writes for the Foos: the leader's,
// or that of the Foos' shard.
func (s *chaosScenario) leaseName() string {
	if s.cfg.shards > 1 {
		return shardLeaseName(deployName, shardOf(s.world.ns, s.cfg.shards), s.cfg.shards)
	}
	return deployName
}

// waitLeader waits until a replica holds leaseName, and returns it.
func (s *chaosScenario) waitLeader(t *testing.T) *replica {
	t.Helper()
	return waitLeader(t, s.replicas, s.leaseName())
}

// waitLeaderOtherThan waits until a replica other than the one of
// identity leads, and returns it.
func (s *chaosScenario) waitLeaderOtherThan(t *testing.T, identity string) *replica {
	t.Helper()
	var leader *replica
	eventually(t, takeoverDeadline, "a replica other than "+identity+" to lead", func(ctx context.Context) (bool, error) {
		lease, err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Get(ctx, s.leaseName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, r := range s.replicas {
			if id := r.identity(); id != "" && id != identity && id == leaseHolderOf(lease) {
				leader = &replica{Controller: r.process(), identity: id}
				return true, nil
			}
		}
		return false, fmt.Errorf("lease %s", describeLease(lease))
	})
	return leader
}

// waitDrained waits until the leader (whichever it is by then) reports an
// empty workqueue, and returns how long that took.
func (s *chaosScenario) waitDrained(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, s.cfg.settle, "the leader's workqueue to drain", func(ctx context.Context) (bool, error) {
		leader := s.waitLeader(t)
		samples, err := framework.ScrapeURL(ctx, leader.MetricsURL())
		if err != nil {
			return false, err
		}
		if d := queueDepth(samples); d != 0 {
			return false, fmt.Errorf("%s: workqueue depth %v", leader.Name, d)
		}
		return true, nil
	})
	return time.Since(start)
}

// envDuration, envInt and envUint read a size from the environment, def
// when unset.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 3m", name, v)
	}
	return d
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 4 {
		t.Fatalf("%s=%q: want a number of at least 4", name, v)
	}
	return n
}

func envUint(t *testing.T, name string, def uint64) uint64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}
