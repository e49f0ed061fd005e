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

import (
	"context"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/freshfirst"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/test/framework"
)

// Starts at the largest N: a cold start with users working meanwhile, then,
// over the same Foos once all are Ready, a restart and a failover onto a warm
// standby.

// freshInterval is how often a user creates a Foo during the cold start.
const freshInterval = 300 * time.Millisecond

// measureFreshChanges times, while the controller works through a cold
// start over n waiting Foos, how long Foos created meanwhile (one every
// freshInterval, from the controller's start until every waiting Foo has its
// Deployment) wait for their Deployment: the Foos a user creates should not
// queue behind the backlog. It returns the namespace and how many Foos it
// holds, all Ready, for the restart and the failover.
func (b *bench) measureFreshChanges(n int) (string, int) {
	ns := fmt.Sprintf("fresh-%d", n)
	b.createNamespace(ns)
	t := b.newTracker(ns)
	defer t.stop()
	b.createFoos(ns, n)
	b.waitUntil(t, "the cold start's Foos", runLimit(n), allFoos(n))

	type probe struct {
		name    string
		created time.Time
	}
	var probes []probe
	freshSynced := func() int {
		synced := 0
		for _, p := range probes {
			if _, ok := t.deploymentSeen(ns, p.name); ok {
				synced++
			}
		}
		return synced
	}
	start := time.Now()
	ctrl := b.startController(ns, "controller-fresh")
	defer b.stopController(ctrl)
	ticker := time.NewTicker(freshInterval)
	defer ticker.Stop()
	deadline := time.Now().Add(runLimit(n))
	for t.snapshot().deployments-freshSynced() < n {
		if time.Now().After(deadline) {
			b.t.Fatalf("cold start in %s: still %s after %v", ns, t.snapshot(), runLimit(n))
		}
		<-ticker.C
		p := probe{name: fmt.Sprintf("fresh-%04d", len(probes)), created: time.Now()}
		if _, err := b.sample.SamplecontrollerV1beta1().Foos(ns).Create(b.ctx, newFoo(ns, p.name), metav1.CreateOptions{}); err != nil {
			b.t.Fatal(err)
		}
		probes = append(probes, p)
	}
	backlogDone := time.Since(start)
	total := n + len(probes)
	b.waitUntil(t, "the fresh Foos' Deployments", runLimit(n), func(c counts) bool { return c.deployments >= total })
	latencies := make([]time.Duration, len(probes))
	for i, p := range probes {
		seen, _ := t.deploymentSeen(ns, p.name)
		latencies[i] = seen.Sub(p.created)
	}
	b.report("fresh Foos during a cold start over %d Foos (backlog synced in %.1fs): %d created, one every %v; create → Deployment p50 %v, p99 %v, max %v",
		n, backlogDone.Seconds(), len(probes), freshInterval, percentile(latencies, 0.50), percentile(latencies, 0.99), percentile(latencies, 1))
	// At rest before the next measurement: every rollout done.
	b.waitUntil(t, "every Foo Ready in "+ns, runLimit(n), allReady(total))
	return ns, total
}

// measureRestart starts a controller, with leader election as in
// production, over n Foos that are all converged, and times its start: the
// process start until /readyz answers (caches synced), and until its first
// full pass over every Foo is done. Such a pass should write nothing. It
// returns the controller, leading, for measureFailover.
func (b *bench) measureRestart(ns string, n int) *framework.Controller {
	b.settle(ns, n)
	before := b.scrapeAPIServer()
	start := time.Now()
	ctrl := b.startController(ns, "controller-restart", leaderElectionArgs(ns)...)
	readyAt := b.waitReadyz(ctrl)
	passAt := b.waitFirstFullPass(ctrl, n)
	b.report("restart over %d converged Foos: process start → /readyz %.2fs, → first full pass done %.2fs; writes %v",
		n, readyAt.Sub(start).Seconds(), passAt.Sub(start).Seconds(), b.settledWritesSince(before))
	return ctrl
}

// measureFailover starts a standby beside the leader, waits until it is
// warm (ready: caches synced), stops the leader with SIGTERM as a rolling
// update does, and times until the standby's first full pass is done.
func (b *bench) measureFailover(ns string, n int, leader *framework.Controller) {
	standby := b.startController(ns, "controller-standby", leaderElectionArgs(ns)...)
	defer b.stopController(standby)
	b.waitReadyz(standby)
	before := b.scrapeAPIServer()
	start := time.Now()
	b.stopController(leader)
	passAt := b.waitFirstFullPass(standby, n)
	b.report("failover over %d converged Foos: leader SIGTERM → warm standby's first full pass done %.2fs; writes %v",
		n, passAt.Sub(start).Seconds(), b.settledWritesSince(before))
}

// measureStreamingLists restarts the controller over n converged Foos with
// client-go's streaming initial lists (the WatchListClient feature, on by
// default: a watch that starts by sending the current objects one by one
// from the API server's watch cache) and with them off (plain paged LISTs:
// the API server builds each page of the list in memory), twice each,
// alternating, and reports for each start its times and what it cost the
// kube-apiserver: CPU seconds, and how far its resident memory rose above
// where it stood before the start, sampled every 20 ms. The API server
// keeps memory it freed for a while, so a start may find room a previous
// one left: hence two rounds, alternating.
func (b *bench) measureStreamingLists(ns string, n int) {
	b.settle(ns, n)
	apiserver, err := b.cluster.ComponentPid("kube-apiserver")
	if err != nil {
		b.t.Fatal(err)
	}
	modes := []struct {
		name string
		env  []string
	}{
		{"streaming lists (default)", nil},
		{"paged LISTs (KUBE_FEATURE_WatchListClient=false)", []string{"KUBE_FEATURE_WatchListClient=false"}},
	}
	for round := 1; round <= 2; round++ {
		for i, mode := range modes {
			cpuBefore, err := cpuSeconds(apiserver)
			if err != nil {
				b.t.Fatal(err)
			}
			sampler, err := startRSSSampler(apiserver, 20*time.Millisecond)
			if err != nil {
				b.t.Fatal(err)
			}
			start := time.Now()
			ctrl := b.startControllerWithEnv(ns, fmt.Sprintf("controller-lists-%d-%d", round, i), mode.env, leaderElectionArgs(ns)...)
			readyAt := b.waitReadyz(ctrl)
			passAt := b.waitFirstFullPass(ctrl, n)
			before, peak := sampler.stop()
			cpuAfter, err := cpuSeconds(apiserver)
			if err != nil {
				b.t.Fatal(err)
			}
			controllerPeak, err := peakRSSKiB(ctrl.Pid())
			if err != nil {
				b.t.Fatal(err)
			}
			b.stopController(ctrl)
			b.report("start over %d converged Foos with %s, round %d: → /readyz %.2fs, → first full pass %.2fs; kube-apiserver: %.2f CPU s, RSS %.1f → peak %.1f MiB (+%.1f); controller peak RSS %.1f MiB",
				n, mode.name, round, readyAt.Sub(start).Seconds(), passAt.Sub(start).Seconds(), cpuAfter-cpuBefore,
				float64(before)/1024, float64(peak)/1024, float64(peak-before)/1024, float64(controllerPeak)/1024)
		}
	}
}

// settle runs a controller over ns until it has synced every Foo and its
// write requests have stood still for quietWindow: the Foos' last rollouts
// may have changed their Deployments after the run that created them
// stopped, and a restart "over a converged set" must not count catching up
// with that. The controller runs without leader election, so its write
// counter holds no Lease renewals and can stand still.
func (b *bench) settle(ns string, n int) {
	ctrl := b.startController(ns, "controller-settle")
	defer b.stopController(ctrl)
	b.waitFirstFullPass(ctrl, n)
	isWrite := func(l map[string]string) bool { return framework.IsWriteVerb(l["method"]) }
	writes, quiet := b.waitQuiet(runLimit(n), func(ctx context.Context) (float64, error) {
		samples, err := framework.ScrapeURL(ctx, ctrl.MetricsURL())
		return framework.Sum(samples, "rest_client_requests_total", isWrite), err
	})
	if !quiet {
		b.t.Fatalf("%s did not settle: the controller was still writing after %v (%.0f write requests)", ns, runLimit(n), writes)
	}
}

// leaderElectionArgs turn leader election on, with the Lease in ns.
func leaderElectionArgs(ns string) []string {
	return []string{"-leader-elect=true", "-leader-elect-namespace=" + ns}
}

// waitReadyz polls the controller's /readyz every 20 ms until it answers
// 200, and returns when it did.
func (b *bench) waitReadyz(ctrl *framework.Controller) time.Time {
	var at time.Time
	b.pollEvery(20*time.Millisecond, time.Minute, ctrl.Name+" /readyz", func(ctx context.Context) (bool, error) {
		code, _, err := ctrl.Probe(ctx, "/readyz")
		at = time.Now()
		return err == nil && code == http.StatusOK, nil
	})
	return at
}

// waitFirstFullPass waits until the controller has synced at least n Foos
// and both of its queues are empty, and returns when it saw that.
func (b *bench) waitFirstFullPass(ctrl *framework.Controller, n int) time.Time {
	return b.waitSyncs(ctrl, "first full pass", float64(n), runLimit(n))
}

// waitSyncs polls the controller's metrics every 100 ms until its Foo
// syncs (samplecontroller_reconcile_total, counted as each sync ends) reach
// syncs and both of its queues are empty, and returns when it saw that; it
// fails the bench after timeout, or at once if the controller exits.
func (b *bench) waitSyncs(ctrl *framework.Controller, what string, syncs float64, timeout time.Duration) time.Time {
	var at time.Time
	b.pollEvery(100*time.Millisecond, timeout, ctrl.Name+" "+what, func(ctx context.Context) (bool, error) {
		if ctrl.Exited() {
			b.t.Fatalf("%s exited:\n%s", ctrl.Name, framework.Trim(ctrl.Log(), 4000))
		}
		samples, err := framework.ScrapeURL(ctx, ctrl.MetricsURL())
		at = time.Now()
		if err != nil {
			return false, nil
		}
		queued := framework.Sum(samples, "workqueue_depth", func(l map[string]string) bool {
			return l["name"] == freshfirst.QueueName || l["name"] == freshfirst.BacklogQueueName
		})
		return syncCount(samples) >= syncs && queued == 0, nil
	})
	return at
}

// syncCount is a controller's Foo syncs so far, whatever their result.
func syncCount(samples []framework.Sample) float64 {
	return framework.Sum(samples, metrics.Subsystem+"_reconcile_total", nil)
}
