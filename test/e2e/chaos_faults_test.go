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

// The chaos scenarios' faults, and when they come. Each fault is the fault
// suite's (faults_test.go) in the middle of user traffic and with a
// standby ready to lead; they come one after another at seeded moments, a
// seeded shuffle of every kind per round, so that a run of one round sees
// each kind once.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/kube-samples/sample-controller/test/framework"
)

const (
	// zombiePause is how long a paused leader stays paused, counted from
	// when a standby took its Lease and the user scaled some Foos: a pause
	// past the lease duration, and twice the audit check's staleTolerance.
	zombiePause = chaosLeaseDuration
	// apiServerHang is how long the kube-apiserver stays paused: past the
	// leader's renew deadline, so the leader gives up and is restarted.
	apiServerHang = chaosRenewDeadline + 3*time.Second
	// throttleFor is how long priority and fairness rejects the
	// controller's requests.
	throttleFor = 15 * time.Second
	// zombieScaledDuringPause is how many Foos the user scales while the
	// leader is paused, for the standby to apply.
	zombieScaledDuringPause = 5
	// throttleBurst is how many Foos the user scales at once while the
	// controller is throttled.
	throttleBurst = 30
)

// chaosFault is one kind of fault. refusesController: while it lasts the
// API server refuses or stalls the controller's requests, its watches
// among them, so a replica's cache may lag the Foos by as long as it lasts
// and until its Foo informer watches again (the audit check excuses its
// stale writes until the leader's queue drained after it healed, and
// judges those of a replica not watching again yet from the fault's start;
// framework.StaleReplicaWrites).
type chaosFault struct {
	name              string
	refusesController bool
	inject            func(t *testing.T, s *chaosScenario)
}

// chaosFaults are every kind.
var chaosFaults = []chaosFault{
	{"leader-sigkill", false, func(t *testing.T, s *chaosScenario) {
		s.waitLeader(t).Kill()
	}},
	{"leader-sigstop-past-lease", false, func(t *testing.T, s *chaosScenario) {
		s.pauseLeaderPastLease(t)
	}},
	{"kube-apiserver-sigkill", true, func(t *testing.T, _ *chaosScenario) {
		killForAWhile(t, framework.KubeAPIServer)
	}},
	{"etcd-sigkill", true, func(t *testing.T, _ *chaosScenario) {
		killForAWhile(t, framework.Etcd)
		restartClusterControllers(t)
	}},
	{"kube-apiserver-sigstop", true, func(t *testing.T, _ *chaosScenario) {
		repairAtEnd(t, framework.KubeAPIServer)
		if err := cluster.PauseComponent(framework.KubeAPIServer); err != nil {
			t.Fatal(err)
		}
		time.Sleep(apiServerHang) // the fault: the API server answers nothing
		if err := cluster.ResumeComponent(framework.KubeAPIServer); err != nil {
			t.Fatal(err)
		}
	}},
	{"apf-rejects-controller", true, func(t *testing.T, s *chaosScenario) {
		before, err := cluster.ScrapeAPIServer(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		level, remove := throttleDeployedAccount(t)
		// A burst of changes, so that the leader's workers send more
		// requests at once than the level's seats: the steady users alone
		// seldom do.
		s.scaleSome(t, throttleBurst)
		time.Sleep(throttleFor) // the fault: the controller is throttled
		after, err := cluster.ScrapeAPIServer(context.Background())
		if err := errors.Join(err, remove()); err != nil {
			t.Fatal(err)
		}
		t.Logf("priority level %s rejected %.0f requests of the controller", level, rejectedRequests(after, level)-rejectedRequests(before, level))
	}},
}

// pauseLeaderPastLease makes a zombie leader: the leader is paused
// (SIGSTOP), the standby takes its Lease, the user scales some Foos and
// the standby applies them, and the old leader is resumed. Its fence must
// stop it writing (the audit check tells), and it exits (sharded: it drops
// the shard and rejoins).
func (s *chaosScenario) pauseLeaderPastLease(t *testing.T) {
	leader := s.waitLeader(t)
	if err := leader.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			_ = leader.Signal(syscall.SIGCONT)
		}
	}()
	next := s.waitLeaderOtherThan(t, leader.identity)
	scaled := s.scaleSome(t, zombieScaledDuringPause)
	time.Sleep(zombiePause) // the fault: paused past the take-over
	if err := leader.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	t.Logf("leader %s paused for %v; %s took over; the user scaled %v meanwhile", leader.Name,
		time.Since(paused).Round(100*time.Millisecond), next.Name, scaled)
}

// scaleSome has the user set spec.replicas of n Foos at random, and
// returns their names; a change refused (the Foo just deleted) is skipped.
func (s *chaosScenario) scaleSome(t *testing.T, n int) []string {
	t.Helper()
	scaled := s.traffic.someFoos(n)
	for _, foo := range scaled {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		_ = s.traffic.patchFoo(ctx, foo, fmt.Sprintf(`{"spec":{"replicas":%d}}`, 1+s.rng.IntN(5)))
		cancel()
	}
	return scaled
}

// scheduledFault is a fault and when, from the scenario's start, it
// comes.
type scheduledFault struct {
	at    time.Duration
	fault chaosFault
}

// faultSchedule spreads faults over duration, one per slot of length
// every, at a seeded moment in the first third of its slot; the kinds
// follow each other in a fresh seeded shuffle of all kinds per round.
func faultSchedule(rng *rand.Rand, duration, every time.Duration) []scheduledFault {
	var out []scheduledFault
	var round []chaosFault
	for slot := time.Duration(0); slot+every <= duration; slot += every {
		if len(round) == 0 {
			round = append([]chaosFault(nil), chaosFaults...)
			rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		out = append(out, scheduledFault{at: slot + time.Duration(rng.Int64N(int64(every/3))), fault: round[0]})
		round = round[1:]
	}
	return out
}
