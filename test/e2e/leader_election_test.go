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
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/test/framework"
)

// takeoverDeadline bounds the wait for a standby to take the Lease after the
// leader got a signal. It is a deadline against a take-over that never
// comes, not a judgement of how fast it came: a bound tight enough to judge
// speed breaks when the machine is loaded. The test reports the time; speed
// is judged by the bench (docs/performance.md). On a quiet machine, with the default lease duration (15 s) and a retry period of
// 1 s instead of 2 s (to shorten the test):
//   - a killed leader does not release the Lease. A standby takes it at its
//     first attempt after having seen it unchanged for the lease duration,
//     counted from the attempt at which it saw the last renewal. Attempts are
//     one to 2.2 retry periods apart (client-go's jitter), so the take-over
//     comes 15 s plus up to two such gaps after the last renewal: at most
//     about 19.4 s. With a build running beside the test it can come
//     later, as the test reports.
//   - a terminated leader releases the Lease, and the standby takes it at its
//     next attempt, at most 2.2 s later.
//   - a Lease forged as another holder's, claiming 2147483647 s: a standby
//     honours only its own lease duration, counted from the attempt at which
//     it read the forged record, at most one attempt gap after the write, so
//     it takes over at most about 19.4 s after the write, as after a kill.
//
// A minute is three times the slowest.
const takeoverDeadline = time.Minute

// terminationGracePeriod is how long the kubelet waits after SIGTERM before
// it SIGKILLs the container (artifacts/deploy sets the default, 30 s). A
// leader that took longer to exit would be killed before it released the
// Lease, so the test asserts it exits within this bound: the deployment's
// contract, not a figure of speed.
const terminationGracePeriod = 30 * time.Second

// Two replicas: one leads and reconciles, the other waits with warm caches.
// When the leader dies, a standby takes over and syncs the Foos created
// since: after SIGKILL once the Lease has gone unrenewed for the lease
// duration, after SIGTERM at once, the leader having released the Lease on
// its way out. And when whoever may update the Lease rewrites it as another
// holder's, claiming 2147483647 s (68 years): the leader cannot renew it and
// exits, and a standby takes over one lease duration after it read the
// forged record, not 68 years. The test reports how long each take-over
// took; it does not judge it (see takeoverDeadline), but for the forged
// Lease checks it was not taken before a lease duration had passed since the
// write: the standby counts from its own reading, not from the forged
// record's times.
func TestStandbyTakesOverWhenLeaderDies(t *testing.T) {
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
	lease := waitLeaseTaken(t, ns, id, standby.identity, 1)
	waitFooReady(t, ns, foo2.Name)
	ready := time.Since(killed)
	t.Logf("take-over after SIGKILL of the leader: %s acquired the Lease %v after the kill (the Lease's acquireTime); a Foo created right after the kill was Ready %v after it",
		standby.Name, lease.Spec.AcquireTime.Sub(killed).Round(10*time.Millisecond), ready.Round(10*time.Millisecond))
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
	exit := waitExit(leader.Controller, terminationGracePeriod)
	foo3 := createFoo(t, newFoo(ns, "after-sigterm", "after-sigterm", nil))
	lease = waitLeaseTaken(t, ns, id, standby.identity, 2)
	waitFooReady(t, ns, foo3.Name)
	ready = time.Since(terminated)
	exited := <-exit
	if exited.err != nil {
		t.Fatalf("%v: a replica must exit within the termination grace period, or the kubelet kills it before it releases the Lease", exited.err)
	}
	code := exited.code
	t.Logf("take-over after SIGTERM of the leader: it exited with %d %v after the signal; %s acquired the Lease %v after the signal (the Lease's acquireTime); a Foo created right after the signal was Ready %v after it",
		code, exited.at.Sub(terminated).Round(10*time.Millisecond), standby.Name,
		lease.Spec.AcquireTime.Sub(terminated).Round(10*time.Millisecond), ready.Round(10*time.Millisecond))
	if code != 0 {
		t.Errorf("%s exited with %d after SIGTERM, want 0", leader.Name, code)
	}
	if !strings.Contains(leader.Log(), "Released leadership") {
		t.Errorf("%s did not log the release of the Lease", leader.Name)
	}
	waitLeaderGauges(t, id, standby)
	if got := reconciles(scrape(t, standby.Controller), "success"); got < 1 {
		t.Errorf("new leader %s: %v successful syncs, want at least 1", standby.Name, got)
	}
	if t.Failed() {
		t.FailNow()
	}

	// A fresh standby, then the Lease forged: another holder's, claiming
	// 2147483647 s, written as the deployed ServiceAccount may (its Role
	// grants update of its Lease). Without the cap of the Lease lock
	// (pkg/replicas, fencedLock.Get) every replica waits 68 years.
	leader, standby = standby, start("replica-d")
	waitControllerReady(t, standby.Controller)
	waitLeaderGauges(t, id, leader, standby)
	expectLease(t, ns, id, leader.identity, 2)
	written := forgeLease(t, ns, id, "intruder", math.MaxInt32)
	exit = waitExit(leader.Controller, takeoverDeadline)
	foo4 := createFoo(t, newFoo(ns, "after-forged-lease", "after-forged-lease", nil))
	lease = waitLeaseTaken(t, ns, id, standby.identity, 4)
	waitFooReady(t, ns, foo4.Name)
	ready = time.Since(written)
	exited = <-exit
	if exited.err != nil {
		t.Fatalf("%s, which led, after the Lease was forged: %v", leader.Name, exited.err)
	}
	took := lease.Spec.AcquireTime.Sub(written)
	t.Logf("take-over after the Lease was forged: %s exited with %d %v after the write; %s acquired the Lease %v after it (the Lease's acquireTime; lease duration %v); a Foo created right after the write was Ready %v after it",
		leader.Name, exited.code, exited.at.Sub(written).Round(10*time.Millisecond), standby.Name,
		took.Round(10*time.Millisecond), defaultLeaseDuration, ready.Round(10*time.Millisecond))
	if exited.code != 1 || !strings.Contains(leader.Log(), `"Lost leadership, exiting"`) {
		t.Errorf("%s exited with %d after the Lease was forged, want 1 and \"Lost leadership, exiting\" in its log",
			leader.Name, exited.code)
	}
	if took < defaultLeaseDuration {
		t.Errorf("%s took the forged Lease %v after the write, before the lease duration (%v) had passed", standby.Name,
			took, defaultLeaseDuration)
	}
	if claim := `"Lease claims a longer duration than this replica's, honouring its own"`; !strings.Contains(standby.Log(), claim) {
		t.Errorf("%s did not log %s", standby.Name, claim)
	}
	waitLeaderGauges(t, id, standby)
}

// defaultLeaseDuration is -leader-elect-lease-duration's default.
const defaultLeaseDuration = 15 * time.Second

// forgeLease rewrites the Lease ns/id as holder's, just acquired and
// claiming seconds, as a replica's acquisition would but for the duration,
// and returns when the write was sent.
func forgeLease(t *testing.T, ns, id, holder string, seconds int32) time.Time {
	t.Helper()
	leases := cluster.Kube.CoordinationV1().Leases(ns)
	var sent time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the leader renews meanwhile
		lease, err := leases.Get(context.Background(), id, metav1.GetOptions{})
		if err != nil {
			return err
		}
		sent = time.Now()
		now := metav1.NewMicroTime(sent)
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds = &holder, &seconds
		lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
		lease.Spec.LeaseTransitions = ptr.To(ptrValue(lease.Spec.LeaseTransitions) + 1)
		_, err = leases.Update(context.Background(), lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("forging the Lease %s/%s: %v", ns, id, err)
	}
	return sent
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
	eventually(t, convergeTimeout, "the leader election gauges", func(ctx context.Context) (bool, error) {
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

// waitLeaseTaken waits, up to takeoverDeadline, until holder holds the
// Lease ns/id, then checks it as expectLease does, and returns it.
func waitLeaseTaken(t *testing.T, ns, id, holder string, transitions int32) *coordinationv1.Lease {
	t.Helper()
	eventually(t, takeoverDeadline, holder+" to take the Lease "+id, func(ctx context.Context) (bool, error) {
		lease, err := cluster.Kube.CoordinationV1().Leases(ns).Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if leaseHolderOf(lease) != holder {
			return false, fmt.Errorf("lease %s", describeLease(lease))
		}
		return true, nil
	})
	return expectLease(t, ns, id, holder, transitions)
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
