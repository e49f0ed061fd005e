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
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/test/framework"
)

// Fail-over bounds of TestLeaderFailoverWithinLeaseDuration, from the signal to a Foo created right
// after it being Ready. The replicas run with the default lease duration
// (15 s) and renew deadline, and a retry period of 1 s instead of 2 s.
const (
	// A killed leader does not release the Lease. A standby takes it at its
	// first attempt after having seen it unchanged for the lease duration,
	// counted from the attempt at which it saw the last renewal. Attempts
	// are one to 1.2 retry periods of jitter apart, so the take-over comes
	// 15 s plus up to two such gaps after the last renewal: with the
	// default 2 s retry period up to about 23.8 s (about 17 s typically),
	// with 1 s at most about 19.4 s. Hence the 1 s retry period here.
	sigkillFailoverBound = 20 * time.Second
	// A terminated leader releases the Lease; the standby takes it at its
	// next attempt, at most 2.2 s later.
	sigtermFailoverBound = 5 * time.Second
)

// Two replicas: one leads and reconciles, the other waits with warm
// caches. A killed leader is replaced within the lease duration and a bit;
// a terminated one hands over at once.
func TestLeaderFailoverWithinLeaseDuration(t *testing.T) {
	ensureStandardCRD(t)
	ns := newNamespace(t, "prod-failover")
	id := "e2e-failover-" + ns[strings.LastIndex(ns, "-")+1:]
	leases := cluster.Kube.CoordinationV1().Leases(ns)

	start := func(name string) *replica {
		// -v=4 logs each acquire attempt, to explain a slow take-over.
		c := startController(t, name, "-namespace="+ns, "-leader-elect=true",
			"-leader-elect-namespace="+ns, "-leader-elect-id="+id, "-leader-elect-retry-period=1s", "-v=4")
		return &replica{Controller: c, identity: leaderElectionIdentity(t, c)}
	}
	a, b := start("replica-a"), start("replica-b")
	waitControllerReady(t, a.Controller)
	waitControllerReady(t, b.Controller)

	// Exactly one leads: it holds the Lease, and its gauge says so.
	var leader, standby *replica
	eventually(t, convergeTimeout, "a leader", func(ctx context.Context) (bool, error) {
		lease, err := leases.Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		switch leaseHolderOf(lease) {
		case a.identity:
			leader, standby = a, b
		case b.identity:
			leader, standby = b, a
		default:
			return false, fmt.Errorf("lease %s; replicas are %s and %s", describeLease(lease), a.identity, b.identity)
		}
		return true, nil
	})
	t.Logf("%s leads, %s stands by", leader.Name, standby.Name)
	waitLeaderGauges(t, id, leader, standby)
	expectLease(t, ns, id, leader.identity, 0)

	// Only the leader reconciles.
	foo1 := createFoo(t, newFoo(ns, "before-failover", "before-failover", nil))
	waitFooReady(t, ns, foo1.Name)
	leaderSamples, standbySamples := scrape(t, leader.Controller), scrape(t, standby.Controller)
	if got := reconciles(leaderSamples, "success"); got < 1 {
		t.Errorf("leader: %v successful syncs, want at least 1", got)
	}
	if got := reconciles(standbySamples, ""); got != 0 {
		t.Errorf("standby: %v syncs, want 0", got)
	}
	t.Logf("leader synced %v times; standby synced 0 times and holds %v queued keys",
		reconciles(leaderSamples, ""), queueDepth(standbySamples))
	if t.Failed() {
		t.FailNow()
	}

	// SIGKILL: the Lease is not released; the standby takes it once it has
	// seen it unrenewed for the lease duration.
	killed := time.Now()
	leader.Kill() // SIGKILL, and reaped: it cannot sync foo2
	foo2 := createFoo(t, newFoo(ns, "after-sigkill", "after-sigkill", nil))
	waitFooReady(t, ns, foo2.Name)
	ready := time.Since(killed)
	lease := expectLease(t, ns, id, standby.identity, 1)
	t.Logf("SIGKILL of the leader: %s took the Lease %v after the kill; a Foo created right after the kill was Ready after %v",
		standby.Name, lease.Spec.AcquireTime.Sub(killed).Round(10*time.Millisecond), ready.Round(10*time.Millisecond))
	if ready > sigkillFailoverBound {
		t.Errorf("after SIGKILL of the leader a new Foo was Ready after %v, want at most %v (take-over: the lease duration, 15 s, after the standby's attempt that saw the last renewal, plus up to one more attempt; attempts are 2 to 4.4 s apart)",
			ready.Round(10*time.Millisecond), sigkillFailoverBound)
	}
	leader, standby = standby, nil
	waitLeaderGauges(t, id, leader)
	if got := reconciles(scrape(t, leader.Controller), "success"); got < 1 {
		t.Errorf("new leader %s: %v successful syncs, want at least 1", leader.Name, got)
	}

	// A fresh standby, then SIGTERM of the leader: it releases the Lease and
	// the standby takes it at its next attempt.
	c := start("replica-c")
	waitControllerReady(t, c.Controller)
	standby = c
	waitLeaderGauges(t, id, leader, standby)
	expectLease(t, ns, id, leader.identity, 1)

	if err := leader.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	terminated := time.Now()
	exit := waitExit(leader.Controller, 10*time.Second)
	foo3 := createFoo(t, newFoo(ns, "after-sigterm", "after-sigterm", nil))
	waitFooReady(t, ns, foo3.Name)
	ready = time.Since(terminated)
	exited := <-exit
	if exited.err != nil {
		t.Fatal(exited.err)
	}
	code := exited.code
	lease = expectLease(t, ns, id, standby.identity, 2)
	t.Logf("SIGTERM of the leader: it exited with %d %v after the signal; %s took the Lease %v after the signal; a Foo created right after the signal was Ready after %v",
		code, exited.at.Sub(terminated).Round(10*time.Millisecond), standby.Name,
		lease.Spec.AcquireTime.Sub(terminated).Round(10*time.Millisecond), ready.Round(10*time.Millisecond))
	if code != 0 {
		t.Errorf("%s exited with %d after SIGTERM, want 0", leader.Name, code)
	}
	if !strings.Contains(leader.Log(), "Released leadership") {
		t.Errorf("%s did not log the release of the Lease", leader.Name)
	}
	if ready > sigtermFailoverBound {
		t.Errorf("after SIGTERM of the leader a new Foo was Ready after %v, want at most %v", ready.Round(10*time.Millisecond), sigtermFailoverBound)
	}
	waitLeaderGauges(t, id, standby)
	if got := reconciles(scrape(t, standby.Controller), "success"); got < 1 {
		t.Errorf("new leader %s: %v successful syncs, want at least 1", standby.Name, got)
	}
}

// replica is a controller taking part in leader election.
type replica struct {
	*framework.Controller
	identity string // its holderIdentity in the Lease
}

// exitResult is how and when a process ended.
type exitResult struct {
	code int
	err  error // still running after the timeout
	at   time.Time
}

// waitExit waits in the background, up to timeout, for the process to exit,
// so that the test can do something else meanwhile and still learn when it
// exited.
func waitExit(c *framework.Controller, timeout time.Duration) <-chan exitResult {
	done := make(chan exitResult, 1)
	go func() {
		code, err := c.Wait(timeout)
		done <- exitResult{code: code, err: err, at: time.Now()}
	}()
	return done
}

// waitLeaderGauges waits until leader's leader_election_master_status for
// the Lease id is 1 and every standby's is 0 (present, not just absent).
func waitLeaderGauges(t *testing.T, id string, leader *replica, standbys ...*replica) {
	t.Helper()
	check := func(ctx context.Context, r *replica, want float64) error {
		samples, err := framework.ScrapeURL(ctx, r.MetricsURL())
		if err != nil {
			return err
		}
		if got, ok := leaderGauge(samples, id); !ok || got != want {
			return fmt.Errorf("%s: leader_election_master_status{name=%q} = %v (present %v), want %v", r.Name, id, got, ok, want)
		}
		return nil
	}
	eventually(t, 10*time.Second, "the leader election gauges", func(ctx context.Context) (bool, error) {
		if err := check(ctx, leader, 1); err != nil {
			return false, err
		}
		for _, s := range standbys {
			if err := check(ctx, s, 0); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// expectLease checks that the Lease ns/id is held by holder after the given
// number of leader transitions, and returns it.
func expectLease(t *testing.T, ns, id, holder string, transitions int32) *coordinationv1.Lease {
	t.Helper()
	lease, err := cluster.Kube.CoordinationV1().Leases(ns).Get(context.Background(), id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if leaseHolderOf(lease) != holder || lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions != transitions ||
		lease.Spec.AcquireTime == nil {
		t.Fatalf("lease %s; want holder %s after %d transitions", describeLease(lease), holder, transitions)
	}
	return lease
}
