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
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/freshfirst"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/test/framework"
)

// The controller at rest over n converged Foos: what it writes while
// nothing changes, how fast it follows a change, and what its memory
// does when the namespace also holds many Deployments it does not manage.

// restResync is a short resync period, so that a window of a few of them
// re-syncs every Foo several times.
const restResync = 10 * time.Second

// waitResyncs waits until a controller at rest over n Foos, past its first
// full pass, has synced k×n Foos more with its queues empty: k resyncs are
// done. At rest only the periodic resync queues a Foo, every Foo once per
// -resync-period (the Deployment informer's resync queues nothing, see
// onOwnedUpdate), so these syncs are the evidence that k periods have
// passed and their passes ran, which a sleep of k periods would only hope.
// Were the controller writing at rest, the echoes of its writes would be
// synced too and the wait could end sooner; the callers report the time
// and the syncs the wait took. The deadline is generous: the first resync
// may come up to a period after the call, and each pass takes its time.
func (b *bench) waitResyncs(ctrl *framework.Controller, n, k int) {
	from := syncCount(b.scrapeController(ctrl))
	b.waitSyncs(ctrl, fmt.Sprintf("%d resyncs of %d Foos", k, n), from+float64(k*n), time.Duration(k)*restResync+runLimit(n))
}

func (b *bench) measureAtRest(ns string, n int) {
	ctrl := b.startController(ns, "controller-at-rest", "-resync-period="+restResync.String())
	b.waitFirstFullPass(ctrl, n)
	b.measureWritesAtRest(ctrl, n)
	b.stopController(ctrl)

	// With the default resync period: with the short one above, a change
	// could wait behind a resync of every Foo.
	ctrl = b.startController(ns, "controller-latency")
	b.waitFirstFullPass(ctrl, n)
	b.measureSpecChangeLatency(ctrl, ns, n)
	b.stopController(ctrl)

	b.measureUnrelatedDeployments(ns, n)
}

// writesSince counts, from the API server's apiserver_request_total, the
// writes since before that only the controllers under test make when
// nothing else runs: Foo writes (any subresource), Deployment writes other
// than the deployment controller's status updates, and Events.
func (b *bench) writesSince(before []framework.Sample) writeCounts {
	after := b.scrapeAPIServer()
	count := func(resource string) float64 {
		match := func(l map[string]string) bool {
			return l["resource"] == resource && framework.IsWriteVerb(l["verb"]) && (resource != "deployments" || l["subresource"] != "status")
		}
		return framework.Sum(after, "apiserver_request_total", match) - framework.Sum(before, "apiserver_request_total", match)
	}
	return writeCounts{foos: count(samplecontroller.FooResource), deployments: count("deployments"), events: count("events")}
}

type writeCounts struct {
	foos, deployments, events float64
	// unsettled: the count was still rising when it was read (see
	// settledWritesSince).
	unsettled bool
}

func (w writeCounts) total() float64 { return w.foos + w.deployments + w.events }

func (w writeCounts) String() string {
	s := fmt.Sprintf("%.0f (Foos %.0f, Deployments %.0f, Events %.0f)", w.total(), w.foos, w.deployments, w.events)
	if w.unsettled {
		s += fmt.Sprintf(", still rising after %v", settleWritesLimit)
	}
	return s
}

// settleWritesLimit bounds how long settledWritesSince waits for the writes
// to stand still.
const settleWritesLimit = time.Minute

// settledWritesSince waits until the writes counted by writesSince stand
// still for quietWindow, so that the Events a controller records as it
// writes, which reach the API server after the sync that wrote, are in,
// and returns them. A controller that keeps writing is a finding to
// report, not a reason to stop the bench: after settleWritesLimit the
// count so far is returned, marked as still rising.
func (b *bench) settledWritesSince(before []framework.Sample) writeCounts {
	var w writeCounts
	_, quiet := b.waitQuiet(settleWritesLimit, func(context.Context) (float64, error) {
		w = b.writesSince(before)
		return w.total(), nil
	})
	w.unsettled = !quiet
	return w
}

// measureWritesAtRest counts writes, once every Foo is Ready, through three
// resyncs: each re-syncs every Foo, and none should write. The window is
// not a fixed time but ends on evidence: the controller's sync counter
// shows three more passes over every Foo (waitResyncs), then the API
// server's write counts stand still (settledWritesSince). Its length and
// the syncs in it are reported.
func (b *bench) measureWritesAtRest(ctrl *framework.Controller, n int) {
	isWrite := func(l map[string]string) bool { return framework.IsWriteVerb(l["method"]) }
	const resyncs = 3
	before := b.scrapeAPIServer()
	own := b.scrapeController(ctrl)
	start := time.Now()
	b.waitResyncs(ctrl, n, resyncs)
	seen := b.settledWritesSince(before)
	ownAfter := b.scrapeController(ctrl)
	b.report("writes at rest over %v, through %d resyncs at -resync-period=%v (%.0f syncs of %d Foos): %.0f by the controller; seen by the API server: %v",
		time.Since(start).Round(100*time.Millisecond), resyncs, restResync, syncCount(ownAfter)-syncCount(own), n,
		framework.Sum(ownAfter, "rest_client_requests_total", isWrite)-framework.Sum(own, "rest_client_requests_total", isWrite),
		seen)
}

// measureSpecChangeLatency changes spec.replicas of one Foo at a time and
// times until the watch shows its Deployment following.
func (b *bench) measureSpecChangeLatency(ctrl *framework.Controller, ns string, n int) {
	before := b.scrapeController(ctrl)
	w, err := b.kube.AppsV1().Deployments(ns).Watch(b.ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		b.t.Fatal(err)
	}
	defer w.Stop()
	// Read the watch all along, so that it never backs up while the loop
	// below waits for the cluster to come to rest.
	events := make(chan watch.Event, 1<<16)
	go func() {
		for ev := range w.ResultChan() {
			events <- ev
		}
	}()
	// Skip the initial ADDED events.
	for seen := 0; seen < n; {
		if ev := <-events; ev.Type == watch.Added {
			seen++
		}
	}
	var latencies, patchRTTs []time.Duration
	for i := 0; i < numChanges; i++ {
		name := fooName(i * (n / numChanges))
		replicas := int32(2 + i%2) // 2, 3, 2, ...: always a change
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		start := time.Now()
		if _, err := b.sample.SamplecontrollerV1beta1().Foos(ns).Patch(b.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			b.t.Fatal(err)
		}
		patchRTTs = append(patchRTTs, time.Since(start))
		timeout := time.After(30 * time.Second)
	wait:
		for {
			select {
			case ev := <-events:
				if d, ok := ev.Object.(*appsv1.Deployment); ok && d.Name == name && *d.Spec.Replicas == replicas {
					latencies = append(latencies, time.Since(start))
					break wait
				}
			case <-timeout:
				b.t.Fatalf("Deployment %s did not follow spec.replicas=%d", name, replicas)
			}
		}
		// At rest again before the next change: the rollout this change
		// started (new pods, Deployment and Foo status updates) is over.
		b.poll(time.Minute, name+" Ready", func(ctx context.Context) (bool, error) {
			f, err := b.sample.SamplecontrollerV1beta1().Foos(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ready := meta.IsStatusConditionTrue(f.Status.Conditions, samplecontroller.ConditionReady)
			return ready && f.Status.ObservedGeneration == f.Generation && f.Status.AvailableReplicas == replicas, nil
		})
	}
	after := b.scrapeController(ctrl)
	b.report("spec change -> Deployment latency at rest over %d changes: p50 %v, p99 %v, max %v",
		len(latencies), percentile(latencies, 0.50), percentile(latencies, 0.99), percentile(latencies, 1))
	// Where the time goes: the user's own PATCH of the Foo, and the
	// controller's share (time queued, time syncing) from its histograms;
	// the rest is watch delivery and the Deployment apply's round trip.
	mean := func(name string) time.Duration {
		sum := framework.Sum(after, name+"_sum", fooQueue) - framework.Sum(before, name+"_sum", fooQueue)
		count := framework.Sum(after, name+"_count", fooQueue) - framework.Sum(before, name+"_count", fooQueue)
		if count == 0 {
			return 0
		}
		return time.Duration(sum / count * float64(time.Second))
	}
	b.report("  of which: Foo PATCH round trip p50 %v; controller mean queue wait %v, mean sync %v (all syncs in the window)",
		percentile(patchRTTs, 0.50), mean("workqueue_queue_duration_seconds").Round(10*time.Microsecond), mean(metrics.Subsystem+"_reconcile_duration_seconds").Round(10*time.Microsecond))
}

// fooQueue selects the controller's workers' queue (and unlabelled series).
func fooQueue(l map[string]string) bool { return l["name"] == "" || l["name"] == freshfirst.QueueName }

// idlePeakRSS runs a fresh controller over the converged Foos until it has
// synced every Foo and then re-synced every Foo once, so that the peak
// includes a resync's pass, and returns its peak RSS.
func (b *bench) idlePeakRSS(ns string, n int, name string) int64 {
	ctrl := b.startController(ns, name, "-resync-period="+restResync.String())
	defer b.stopController(ctrl)
	b.waitFirstFullPass(ctrl, n)
	b.waitResyncs(ctrl, n, 1)
	kib, err := peakRSSKiB(ctrl.Pid())
	if err != nil {
		b.t.Fatal(err)
	}
	return kib
}

// measureUnrelatedDeployments compares the controller's peak memory with
// and without many Deployments it does not manage in the very namespace it
// watches: it caches only its own.
func (b *bench) measureUnrelatedDeployments(ns string, n int) {
	without := b.idlePeakRSS(ns, n, "controller-rss-without")
	start := time.Now()
	err := framework.Parallel(numUnrelated, floorWorkers, func(i int) error {
		d := unrelatedDeployment(ns, fmt.Sprintf("unrelated-%05d", i))
		d.Spec.Replicas = ptr.To[int32](0)
		d.Spec.Paused = true // no ReplicaSets: only the Deployments themselves
		_, err := b.kube.AppsV1().Deployments(ns).Create(b.ctx, d, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	b.report("created %d unrelated Deployments in %.1fs", numUnrelated, time.Since(start).Seconds())
	with := b.idlePeakRSS(ns, n, "controller-rss-with")
	b.report("controller peak RSS (VmHWM) at rest, %d Foos: %.1f MiB without, %.1f MiB with %d unrelated Deployments (%+.1f%%)",
		n, float64(without)/1024, float64(with)/1024, numUnrelated, 100*float64(with-without)/float64(without))
}
