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
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/test/framework"
)

// One size of the series: at N Foos, floor runs and controller runs
// alternate, each in a namespace of its own with N new Foos, removed once the
// run is measured. Alternating spreads whatever else the machine does over
// both sides, and the median of the per-pair ratios is robust to one run
// that went badly.

// sizeResult is what the series measured at one N, one entry per run.
type sizeResult struct {
	n        int
	floors   []floorFigures
	controls []controllerFigures
	// convergedNS is the namespace of the last controller run, kept for
	// the caller to remove: N Foos, all Ready, no controller running.
	convergedNS string
}

// floorFigures: api is N Deployment creates and N Foo status writes from
// floorWorkers unthrottled goroutines; endToEnd runs from the first of those
// writes until every Deployment is available (its pod runs), so that the
// rollouts, the work of kube-controller-manager, kube-scheduler and kwok, are
// inside the figure.
type floorFigures struct{ api, endToEnd time.Duration }

// controllerFigures: converged runs from the controller's process start
// until every Deployment exists and every Foo's status is current (the
// counterpart of floorFigures.api), ready until every Foo is Ready (the
// counterpart of floorFigures.endToEnd: the Deployments are available and
// the controller has said so).
type controllerFigures struct {
	converged, ready time.Duration
	// requests are the controller's API requests until every Foo was
	// Ready, by HTTP method.
	requests map[string]float64
	// syncs are its Foo syncs by result (samplecontroller_reconcile_total).
	syncs map[string]float64
	// eventsDropped are the events it dropped for lack of room, by type
	// (samplecontroller_events_dropped_total).
	eventsDropped map[string]float64
	// What the API server saw written meanwhile (no one else writes these
	// during the run): Deployment creates and other Deployment writes
	// (status aside), Foo status writes, all answered 2xx, and how many of
	// those changed the Foo (seen on the watch); and those Deployment and
	// Foo status writes answered with an error, such as 409 when the
	// controller's cache was behind.
	deploymentCreates, deploymentOtherWrites float64
	statusWrites, statusChanges              float64
	refusedWrites                            float64
	cpuSeconds                               float64
	peakRSSKiB                               int64
}

func (c controllerFigures) totalRequests() float64 {
	var sum float64
	for _, n := range c.requests {
		sum += n
	}
	return sum
}

// measureSize runs the series at n Foos: runs floor runs and as many
// controller runs, alternating.
func (b *bench) measureSize(n, runs int) sizeResult {
	r := sizeResult{n: n}
	for i := 1; i <= runs; i++ {
		// Both sides of a pair start on the same cluster: without the
		// namespaces of earlier runs.
		if r.convergedNS != "" {
			b.removeNamespace(r.convergedNS, n)
		}
		floorNS := fmt.Sprintf("floor-%d-%d", n, i)
		f := b.floorRun(floorNS, n)
		r.floors = append(r.floors, f)
		b.removeNamespace(floorNS, n)
		ns := fmt.Sprintf("controller-%d-%d", n, i)
		c := b.controllerRun(ns, n)
		r.controls = append(r.controls, c)
		r.convergedNS = ns
		b.report("N=%d run %d: floor %.2fs API, %.2fs end to end; controller %.2fs converged, %.2fs Ready (ratios %.2f, %.2f); %.0f requests, %.1f CPU s, peak RSS %.1f MiB",
			n, i, f.api.Seconds(), f.endToEnd.Seconds(), c.converged.Seconds(), c.ready.Seconds(),
			c.converged.Seconds()/f.api.Seconds(), c.ready.Seconds()/f.endToEnd.Seconds(),
			c.totalRequests(), c.cpuSeconds, float64(c.peakRSSKiB)/1024)
	}
	return r
}

// runLimit bounds each wait of a run, generously: the bench reports time,
// it does not judge it.
func runLimit(n int) time.Duration { return 5*time.Minute + time.Duration(n)*100*time.Millisecond }

// floorRun measures the floor in a new namespace: what the controller must
// at least do for n new Foos, done as fast as floorWorkers unthrottled
// goroutines can.
func (b *bench) floorRun(ns string, n int) floorFigures {
	b.createNamespace(ns)
	t := b.newTracker(ns)
	defer t.stop()
	created := b.createFoos(ns, n)
	b.waitUntil(t, "the floor's Foos", runLimit(n), allFoos(n))

	start := time.Now()
	err := framework.Parallel(n, floorWorkers, func(i int) error {
		foo := created[i]
		// The floor writes exactly what the controller writes.
		d := desired.NewDeployment(foo)
		if _, err := b.kube.AppsV1().Deployments(ns).Create(b.ctx, d, metav1.CreateOptions{}); err != nil {
			return err
		}
		// The status the controller writes for a Deployment just created.
		cached := desired.CacheDeployment(d)
		patch, err := json.Marshal(map[string]interface{}{"status": desired.StatusFor(foo, cached, desired.ReadyCondition(foo, cached))})
		if err != nil {
			return err
		}
		_, err = b.sample.SamplecontrollerV1beta1().Foos(ns).Patch(b.ctx, foo.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	api := time.Since(start)
	available := b.waitUntil(t, "the floor's Deployments available", runLimit(n), allAvailable(n))
	return floorFigures{api: api, endToEnd: available.Sub(start)}
}

// controllerRun creates n Foos in a new namespace with no controller
// running, then starts one (default flags but for the namespace, no leader
// election, plain-HTTP metrics) and times it until every Foo is Ready.
func (b *bench) controllerRun(ns string, n int) controllerFigures {
	b.createNamespace(ns)
	t := b.newTracker(ns)
	defer t.stop()
	b.createFoos(ns, n)
	b.waitUntil(t, "the controller's Foos", runLimit(n), allFoos(n))
	apiBefore := b.scrapeAPIServer()
	changesBefore := t.fooChangeCount()

	start := time.Now()
	ctrl := b.startController(ns, ns)
	defer b.stopController(ctrl)
	convergedAt := b.waitUntil(t, "convergence in "+ns, runLimit(n), converged(n))
	readyAt := b.waitUntil(t, "every Foo Ready in "+ns, runLimit(n), allReady(n))

	f := controllerFigures{converged: convergedAt.Sub(start), ready: readyAt.Sub(start),
		requests: map[string]float64{}, syncs: map[string]float64{}, eventsDropped: map[string]float64{"Normal": 0, "Warning": 0}}
	var err error
	if f.cpuSeconds, err = cpuSeconds(ctrl.Pid()); err != nil {
		b.t.Fatal(err)
	}
	if f.peakRSSKiB, err = peakRSSKiB(ctrl.Pid()); err != nil {
		b.t.Fatal(err)
	}
	b.saveHeapProfile(ctrl, ns)
	own := b.scrapeController(ctrl)
	for _, s := range own {
		switch s.Name {
		case "rest_client_requests_total":
			f.requests[s.Labels["method"]] += s.Value
		case metrics.Subsystem + "_reconcile_total":
			f.syncs[s.Labels["result"]] += s.Value
		case metrics.Subsystem + "_events_dropped_total":
			f.eventsDropped[s.Labels["type"]] += s.Value
		}
	}
	apiAfter := b.scrapeAPIServer()
	requests := func(match func(l map[string]string) bool) float64 {
		return framework.Sum(apiAfter, "apiserver_request_total", match) - framework.Sum(apiBefore, "apiserver_request_total", match)
	}
	written := func(resource, subresource string, code func(string) bool) float64 {
		return requests(func(l map[string]string) bool {
			return l["resource"] == resource && l["subresource"] == subresource && framework.IsWriteVerb(l["verb"]) && code(l["code"])
		})
	}
	ok := func(code string) bool { return strings.HasPrefix(code, "2") }
	f.deploymentCreates = requests(func(l map[string]string) bool {
		return l["resource"] == "deployments" && l["subresource"] == "" && l["verb"] == "POST" && ok(l["code"])
	})
	f.deploymentOtherWrites = written("deployments", "", ok) - f.deploymentCreates
	f.statusWrites = written(samplecontroller.FooResource, "status", ok)
	refused := func(code string) bool { return !ok(code) }
	f.refusedWrites = written("deployments", "", refused) + written(samplecontroller.FooResource, "status", refused)
	f.statusChanges = float64(t.fooChangeCount() - changesBefore)
	return f
}

// saveHeapProfile keeps the controller's heap profile (in use now, and
// allocated since its start) in the log directory, for `go tool pprof` to
// show where a run's memory went.
func (b *bench) saveHeapProfile(ctrl *framework.Controller, ns string) {
	url := strings.TrimSuffix(ctrl.MetricsURL(), "/metrics") + "/debug/pprof/heap"
	code, body, err := framework.FetchMetrics(b.ctx, url, "")
	if err != nil || code != http.StatusOK {
		b.t.Fatalf("GET %s: %d %v", url, code, err)
	}
	if err := os.WriteFile(filepath.Join(b.logDir, "heap-"+ns+".pb.gz"), []byte(body), 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minMax(xs []float64) (float64, float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[0], s[len(s)-1]
}

// Per-run series of a size, as float64 for the statistics above.
func (r sizeResult) each(f func(i int) float64) []float64 {
	xs := make([]float64, len(r.controls))
	for i := range xs {
		xs[i] = f(i)
	}
	return xs
}

func (r sizeResult) floorAPI() []float64 {
	return r.each(func(i int) float64 { return r.floors[i].api.Seconds() })
}
func (r sizeResult) floorEndToEnd() []float64 {
	return r.each(func(i int) float64 { return r.floors[i].endToEnd.Seconds() })
}
func (r sizeResult) convergence() []float64 {
	return r.each(func(i int) float64 { return r.controls[i].converged.Seconds() })
}
func (r sizeResult) ready() []float64 {
	return r.each(func(i int) float64 { return r.controls[i].ready.Seconds() })
}
func (r sizeResult) apiRatios() []float64 {
	return r.each(func(i int) float64 { return r.controls[i].converged.Seconds() / r.floors[i].api.Seconds() })
}
func (r sizeResult) endToEndRatios() []float64 {
	return r.each(func(i int) float64 { return r.controls[i].ready.Seconds() / r.floors[i].endToEnd.Seconds() })
}
func (r sizeResult) requestsPerFoo() []float64 {
	return r.each(func(i int) float64 { return r.controls[i].totalRequests() / float64(r.n) })
}
func (r sizeResult) cpuSeconds() []float64 {
	return r.each(func(i int) float64 { return r.controls[i].cpuSeconds })
}
func (r sizeResult) peakRSSMiB() []float64 {
	return r.each(func(i int) float64 { return float64(r.controls[i].peakRSSKiB) / 1024 })
}

// summarize reports a size's medians and spreads, and how the requests of
// its median run break down.
func (b *bench) summarize(r sizeResult) {
	spread := func(xs []float64) string {
		lo, hi := minMax(xs)
		return fmt.Sprintf("%.2f (%.2f–%.2f)", median(xs), lo, hi)
	}
	b.report("N=%d, %d runs each, median (min–max): API floor %ss, converged %ss, ratio %s", r.n, len(r.controls),
		spread(r.floorAPI()), spread(r.convergence()), spread(r.apiRatios()))
	b.report("N=%d: end-to-end floor %ss, Ready %ss, ratio %s", r.n,
		spread(r.floorEndToEnd()), spread(r.ready()), spread(r.endToEndRatios()))
	b.report("N=%d: controller API requests per Foo %s, CPU %ss, peak RSS %s MiB", r.n,
		spread(r.requestsPerFoo()), spread(r.cpuSeconds()), spread(r.peakRSSMiB()))
	for i, c := range r.controls {
		b.report("N=%d run %d writes: %.0f Deployment creates, %.0f other Deployment writes, %.0f Foo status writes of which %.0f changed the Foo; %.0f Deployment or status writes refused (e.g. 409); requests by method: %s; syncs by result: %s; events dropped: %s",
			r.n, i+1, c.deploymentCreates, c.deploymentOtherWrites, c.statusWrites, c.statusChanges, c.refusedWrites,
			joinCounts(c.requests), joinCounts(c.syncs), joinCounts(c.eventsDropped))
	}
}

// joinCounts renders counts by label as "a 1, b 2", sorted.
func joinCounts(counts map[string]float64) string {
	parts := make([]string, 0, len(counts))
	for label, v := range counts {
		parts = append(parts, fmt.Sprintf("%s %.0f", label, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
