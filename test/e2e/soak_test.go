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

// The soak: the chaos scenario for an hour (make soak) over a few thousand
// Foos, a fault every few minutes, sampling what would grow if something
// leaked: each replica's RSS and goroutines, the API server's open watches
// on Foos and Deployments, and the leader's workqueue. It writes the
// samples to _output/soak/soak.csv and a chart to _output/soak/soak.svg,
// and reports each series' slope; the invariants and the audit checks of
// the chaos scenario close it. Skipped unless SOAK_DURATION is set.

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/test/framework"
	"github.com/kube-samples/sample-controller/test/monitoring"
)

// soakDir holds the soak's CSV and chart, under the repository root.
const soakDir = "_output/soak"

func TestSoakKeepsResourcesFlatAndInvariants(t *testing.T) {
	if os.Getenv("SOAK_DURATION") == "" {
		t.Skip("the soak runs with make soak (SOAK_DURATION set)")
	}
	duration := envDuration(t, "SOAK_DURATION", time.Hour)
	cfg := chaosConfig{
		seed:       envUint(t, "CHAOS_SEED", defaultChaosSeed),
		duration:   duration,
		foos:       envInt(t, "SOAK_FOOS", 2000),
		rate:       5,
		faultEvery: min(envDuration(t, "SOAK_FAULT_EVERY", 4*time.Minute), duration/2),
		// Thousands of Foos to resync after a restart on a busy machine.
		settle: 10 * time.Minute,
	}
	s := newChaosScenario(t, cfg)
	sampler := startSampler(s, envDuration(t, "SOAK_SAMPLE_EVERY", 30*time.Second))
	healed := s.run(t)
	samples := sampler.halt()
	s.expectInvariants(t, healed)
	reportSoak(t, samples)
}

// soakSample is one replica's figures at one moment, with the API
// server's open watches then (NaN: could not be read).
type soakSample struct {
	at         time.Time
	replica    string
	pid        int
	leader     bool
	rss        float64 // bytes
	goroutines float64
	depth      float64 // workqueue_depth of the Foo queues
	watches    float64 // apiserver_longrunning_requests WATCH on foos and deployments
}

// sampler scrapes every interval until halted.
type sampler struct {
	s    *chaosScenario
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	samples []soakSample
}

func startSampler(s *chaosScenario, every time.Duration) *sampler {
	sm := &sampler{s: s, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(sm.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			sm.sample()
			select {
			case <-sm.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return sm
}

// sample records every replica's figures now.
func (sm *sampler) sample() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := time.Now()
	watches := math.NaN()
	if api, err := cluster.ScrapeAPIServer(ctx); err == nil {
		watches = framework.Sum(api, "apiserver_longrunning_requests", func(l map[string]string) bool {
			return l["verb"] == "WATCH" && (l["resource"] == samplecontroller.FooResource || l["resource"] == "deployments")
		})
	}
	holder := ""
	if lease, err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Get(ctx, deployName, metav1.GetOptions{}); err == nil {
		holder = leaseHolderOf(lease)
	}
	for _, r := range sm.s.replicas {
		c := r.process()
		smp := soakSample{at: now, replica: r.name, pid: c.Pid(), leader: holder != "" && r.identity() == holder,
			rss: math.NaN(), goroutines: math.NaN(), depth: math.NaN(), watches: watches}
		if metrics, err := framework.ScrapeURL(ctx, c.MetricsURL()); err == nil && !c.Exited() {
			smp.rss = framework.Sum(metrics, "process_resident_memory_bytes", nil)
			smp.goroutines = framework.Sum(metrics, "go_goroutines", nil)
			smp.depth = queueDepth(metrics)
		}
		sm.mu.Lock()
		sm.samples = append(sm.samples, smp)
		sm.mu.Unlock()
	}
}

func (sm *sampler) halt() []soakSample {
	close(sm.stop)
	<-sm.done
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.samples
}

// reportSoak writes the CSV and the chart, and logs each series' slope.
func reportSoak(t *testing.T, samples []soakSample) {
	t.Helper()
	dir := filepath.Join(cluster.Root, soakDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeSoakCSV(filepath.Join(dir, "soak.csv"), samples); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.svg"), soakChart(samples), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples in %s/soak.csv, chart %s/soak.svg", len(samples), soakDir, soakDir)
	for _, run := range longestRuns(samples) {
		t.Logf("%s, its longest-lived process (pid %d, %v, %d samples): RSS %.1f MiB at the end, slope %+.2f MiB/h; goroutines %.0f at the end, slope %+.1f/h",
			run[0].replica, run[0].pid, run[len(run)-1].at.Sub(run[0].at).Round(time.Second), len(run),
			run[len(run)-1].rss/(1<<20), slopePerHour(run, func(s soakSample) float64 { return s.rss })/(1<<20),
			run[len(run)-1].goroutines, slopePerHour(run, func(s soakSample) float64 { return s.goroutines }))
	}
	t.Logf("API server's open watches on Foos and Deployments: slope %+.2f/h over the run",
		slopePerHour(samples, func(s soakSample) float64 { return s.watches }))
}

// longestRuns returns, per replica, the samples of its process that lived
// longest: a restart starts its RSS and goroutines afresh, so a slope
// across processes says nothing of a leak.
func longestRuns(samples []soakSample) [][]soakSample {
	byProcess := map[string][]soakSample{}
	for _, s := range samples {
		key := s.replica + "/" + strconv.Itoa(s.pid)
		byProcess[key] = append(byProcess[key], s)
	}
	longest := map[string][]soakSample{}
	var order []string
	for _, s := range samples {
		run := byProcess[s.replica+"/"+strconv.Itoa(s.pid)]
		if _, seen := longest[s.replica]; !seen {
			order = append(order, s.replica)
		}
		if len(run) > len(longest[s.replica]) {
			longest[s.replica] = run
		}
	}
	out := make([][]soakSample, 0, len(order))
	for _, r := range order {
		out = append(out, longest[r])
	}
	return out
}

// slopePerHour is the least-squares slope of value over time, per hour,
// skipping NaNs (NaN with fewer than two values).
func slopePerHour(samples []soakSample, value func(soakSample) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range samples {
		y := value(s)
		if math.IsNaN(y) {
			continue
		}
		x := s.at.Sub(samples[0].at).Hours()
		n++
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if n < 2 || n*sxx-sx*sx == 0 {
		return math.NaN()
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

func writeSoakCSV(path string, samples []soakSample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"time", "seconds", "replica", "pid", "leader", "rss_mib", "goroutines", "queue_depth", "apiserver_watches"})
	format := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
	for _, s := range samples {
		_ = w.Write([]string{s.at.UTC().Format(time.RFC3339), format(s.at.Sub(samples[0].at).Seconds()), s.replica, strconv.Itoa(s.pid),
			strconv.FormatBool(s.leader), format(s.rss / (1 << 20)), format(s.goroutines), format(s.depth), format(s.watches)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// soakChart draws the series with the dashboard picture's renderer: one
// line per replica (a gap where it was down), and the API server's
// watches.
func soakChart(samples []soakSample) []byte {
	if len(samples) == 0 {
		return monitoring.RenderSVG("sample-controller soak (make soak)", time.Now(), time.Now(), nil)
	}
	perReplica := func(title, unit string, value func(soakSample) float64) monitoring.PanelData {
		p := monitoring.PanelData{Title: title, Unit: unit}
		index := map[string]int{}
		for _, s := range samples {
			i, ok := index[s.replica]
			if !ok {
				i = len(p.Lines)
				index[s.replica] = i
				p.Lines = append(p.Lines, monitoring.Line{Label: s.replica})
			}
			p.Lines[i].Times = append(p.Lines[i].Times, s.at)
			p.Lines[i].Values = append(p.Lines[i].Values, value(s))
		}
		return p
	}
	watches := perReplica("API server: open watches on Foos and Deployments", "short", func(s soakSample) float64 { return s.watches })
	watches.Lines = watches.Lines[:1]
	watches.Lines[0].Label = "WATCH foos + deployments"
	panels := []monitoring.PanelData{
		perReplica("Replica RSS", "bytes", func(s soakSample) float64 { return s.rss }),
		perReplica("Replica goroutines", "short", func(s soakSample) float64 { return s.goroutines }),
		perReplica("Workqueue depth (foo + foo_backlog)", "short", func(s soakSample) float64 { return s.depth }),
		watches,
	}
	return monitoring.RenderSVG(fmt.Sprintf("sample-controller soak (make soak), %v", samples[len(samples)-1].at.Sub(samples[0].at).Round(time.Minute)),
		samples[0].at, samples[len(samples)-1].at, panels)
}
