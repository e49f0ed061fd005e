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

// Package bench measures the controller on a local control plane ("make
// bench"); docs/performance.md records the results. It prints figures beside
// a floor measured in the same run and asserts nothing about time.
//
// The files, in the order the bench runs them: series_test.go (at each N,
// floor and controller runs alternating), atrest_test.go (after the smallest
// N: writes at rest, change latency, unrelated Deployments), startup_test.go
// (at the largest N: fresh Foos during a cold start, a restart, a failover),
// curve_test.go (the CSV and the SVG chart in docs/). tracker_test.go follows
// a namespace's objects through watches; proc_test.go reads /proc.
package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	"github.com/kube-samples/sample-controller/test/framework"
)

// Parameters, from the environment.
var (
	// sizes is BENCH_SCALE: the numbers of Foos to measure at, in one
	// control plane.
	sizes = envInts("BENCH_SCALE", []int{1000}, true)
	// runs is BENCH_RUNS: how many floor and controller runs each size
	// gets, one number for every size or one per size.
	runs         = envInts("BENCH_RUNS", []int{3}, false)
	numUnrelated = envInt("BENCH_UNRELATED_DEPLOYMENTS", 10000)
	numChanges   = envInt("BENCH_SPEC_CHANGES", 50)
	// webhookOff is BENCH_WEBHOOK=off: every controller the bench starts
	// runs with -webhook-bind-address=0, without the conversion webhook
	// and its certificate manager, so that what they cost is measured by
	// the same bench.
	webhookOff = envOnOff("BENCH_WEBHOOK")
	// floorWorkers is how many goroutines write the floor, as many as the
	// controller's default -workers.
	floorWorkers = 8
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// envOnOff reads a switch that is on unless set to "off".
func envOnOff(name string) bool {
	switch v := os.Getenv(name); v {
	case "", "on":
		return false
	case "off":
		return true
	default:
		panic(fmt.Sprintf("%s: %q is neither on nor off", name, v))
	}
}

// envInts reads a space-separated list of positive integers, sorted and
// without repeats if asked.
func envInts(name string, def []int, sorted bool) []int {
	var xs []int
	for _, f := range strings.Fields(os.Getenv(name)) {
		v, err := strconv.Atoi(f)
		if err != nil || v <= 0 {
			panic(fmt.Sprintf("%s: %q is not a positive integer", name, f))
		}
		xs = append(xs, v)
	}
	if len(xs) == 0 {
		return def
	}
	if sorted {
		slices.Sort(xs)
		xs = slices.Compact(xs)
	}
	return xs
}

// runsAt is how many runs of each kind the i-th size gets.
func runsAt(i int) int {
	if len(runs) == 1 {
		return runs[0]
	}
	if len(runs) != len(sizes) {
		panic(fmt.Sprintf("BENCH_RUNS %v: one number, or one per size of BENCH_SCALE %v", runs, sizes))
	}
	return runs[i]
}

// bench holds the run's cluster, clients without a client-side rate limit,
// and the results.
type bench struct {
	t       *testing.T
	ctx     context.Context
	root    string
	cluster *framework.Cluster
	kube    kubernetes.Interface
	sample  clientset.Interface
	bin     string
	logDir  string
	results []string
}

func (b *bench) report(format string, args ...interface{}) {
	line := fmt.Sprintf(format, args...)
	b.results = append(b.results, line)
	fmt.Println("bench:", line)
}

func TestBenchmark(t *testing.T) {
	// Room on the one fake node for the pods of the most Foos that exist
	// at once (every run's namespace is removed before the next starts):
	// the latency measure's Foos scaled up, or the fresh-change cold start
	// and the Foos created during it.
	b := startBench(t, "bench-cluster", 1000+max(2*sizes[0]+numChanges, 2*sizes[len(sizes)-1]))

	began := time.Now()
	webhook := "on"
	if webhookOff {
		webhook = "off (-webhook-bind-address=0)"
	}
	b.report("sizes %v, floor and controller runs of each %v, floor with %d goroutines; %d unrelated Deployments, %d spec changes; webhook %s",
		sizes, runs, floorWorkers, numUnrelated, numChanges, webhook)
	series := make([]sizeResult, 0, len(sizes))
	for i, n := range sizes {
		r := b.measureSize(n, runsAt(i))
		b.summarize(r)
		series = append(series, r)
		if i == 0 {
			b.measureAtRest(r.convergedNS, n)
		}
		b.removeNamespace(r.convergedNS, n)
	}
	smallest, largest := series[0], series[len(series)-1]
	if len(series) > 1 {
		b.report("peak RSS slope from N=%d to N=%d: %.2f KiB per Foo", smallest.n, largest.n, rssSlopeKiB(smallest, largest))
	}
	ns, total := b.measureFreshChanges(largest.n)
	b.measureStreamingLists(ns, total)
	leader := b.measureRestart(ns, total)
	b.measureFailover(ns, total, leader)
	b.writeCurve(series)
	b.report("the bench took %v", time.Since(began).Round(time.Second))
	b.printResults()
}

// printResults prints every line reported, together, at the end of the run.
func (b *bench) printResults() {
	fmt.Println("\nbench: results")
	for _, r := range b.results {
		fmt.Println("  " + r)
	}
}

// startBench builds the controller, starts a control plane in
// _output/<clusterDir> whose one fake node has room for pods, stopped when
// the test ends, and installs the CRD.
func startBench(t *testing.T, clusterDir string, pods int) *bench {
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{t: t, ctx: context.Background(), root: root, logDir: filepath.Join(root, "_output", "bench-logs")}
	if err := os.MkdirAll(b.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	b.bin = filepath.Join(root, "_output", "bin", samplecontroller.ControllerName)
	if err := framework.BuildController(root, b.bin); err != nil {
		t.Fatal(err)
	}
	b.cluster, err = framework.StartCluster(root, filepath.Join(root, "_output", clusterDir), framework.WithNodePods(pods))
	if err != nil {
		t.Fatal(err)
	}
	framework.CleanupOnInterrupt(b.cluster)
	t.Cleanup(func() {
		framework.KillAll()
		_ = b.cluster.Stop()
	})
	// The floor and the setup run with no client-side rate limit at all.
	cfg := rest.CopyConfig(b.cluster.Config)
	cfg.QPS = -1
	b.kube = kubernetes.NewForConfigOrDie(cfg)
	b.sample = clientset.NewForConfigOrDie(cfg)

	if _, err := b.cluster.Kubectl("", "apply", "-f", "artifacts/examples/crd.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.cluster.Kubectl("", "wait", "--for=condition=Established", "crd/"+samplecontroller.FooCRDName); err != nil {
		t.Fatal(err)
	}
	return b
}

// rssSlopeKiB is the growth of the median peak RSS per added Foo between
// two sizes: the memory a managed Foo costs, without the fixed part.
func rssSlopeKiB(small, large sizeResult) float64 {
	return (median(large.peakRSSMiB()) - median(small.peakRSSMiB())) * 1024 / float64(large.n-small.n)
}

func (b *bench) createNamespace(name string) {
	_, err := b.kube.CoreV1().Namespaces().Create(b.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
	b.poll(30*time.Second, "default ServiceAccount in "+name, func(ctx context.Context) (bool, error) {
		_, err := b.kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// removeNamespace deletes a namespace and waits until it is gone: its Foos,
// Deployments, ReplicaSets and pods deleted, so that the next run starts on
// a cluster that holds no more than before. Left in place, the pods of
// earlier runs pile up on the fake node, and past about 8,000 pods kwok
// alone takes about half a core.
func (b *bench) removeNamespace(name string, n int) {
	if err := b.kube.CoreV1().Namespaces().Delete(b.ctx, name, metav1.DeleteOptions{}); err != nil {
		b.t.Fatal(err)
	}
	b.waitNamespaceGone(name, n)
}

// waitNamespaceGone waits until a namespace being deleted, with n Foos, is gone.
func (b *bench) waitNamespaceGone(name string, n int) {
	b.poll(runLimit(n), "namespace "+name+" deleted", func(ctx context.Context) (bool, error) {
		_, err := b.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

func (b *bench) poll(timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	b.t.Helper()
	b.pollEvery(200*time.Millisecond, timeout, what, cond)
}

func (b *bench) pollEvery(interval, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	b.t.Helper()
	if err := framework.Poll(b.ctx, interval, timeout, cond); err != nil {
		b.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// quietWindow is how long a count of writes must stand still for the
// writes it counts to be over. Nothing says when a controller has no more
// to write: its syncs write before they end, but it records Events through
// client-go's broadcaster, which writes them from a goroutine of its own
// moments later (and retries a failed write after seconds). So the bench
// watches the count until it stops moving, bounded by a deadline, instead
// of sleeping and hoping the writes have landed.
const quietWindow = 5 * time.Second

// waitQuiet polls count every 500 ms (a count may come from the API
// server's /metrics, megabytes of text) until its value has not changed for
// quietWindow, and returns that value and true; if it still moves after
// timeout, the last value and false. An error of count counts as a move.
func (b *bench) waitQuiet(timeout time.Duration, count func(context.Context) (float64, error)) (float64, bool) {
	last, quietSince := -1.0, time.Now()
	err := framework.Poll(b.ctx, 500*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		v, err := count(ctx)
		if err != nil || v != last {
			last, quietSince = v, time.Now()
			return false, err
		}
		return time.Since(quietSince) >= quietWindow, nil
	})
	return last, err == nil
}

func fooName(i int) string { return fmt.Sprintf("foo-%05d", i) }

// unrelatedDeployment has the shape of the controller's Deployments but is
// someone else's: owned by nobody, without the managed-by label, so the
// controller's informer never lists it.
func unrelatedDeployment(ns, name string) *appsv1.Deployment {
	d := desired.NewDeployment(newFoo(ns, name))
	d.OwnerReferences = nil
	delete(d.Labels, samplecontroller.LabelManagedBy)
	return d
}

func newFoo(ns, name string) *samplev1beta1.Foo {
	return &samplev1beta1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       samplev1beta1.FooSpec{Deployment: samplev1beta1.FooDeployment{Name: name}, Replicas: ptr.To[int32](1)},
	}
}

// createFoos creates n Foos (not timed).
func (b *bench) createFoos(ns string, n int) []*samplev1beta1.Foo {
	created := make([]*samplev1beta1.Foo, n)
	err := framework.Parallel(n, floorWorkers, func(i int) error {
		f, err := b.sample.SamplecontrollerV1beta1().Foos(ns).Create(b.ctx, newFoo(ns, fooName(i)), metav1.CreateOptions{})
		created[i] = f
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return created
}

// startController runs the controller at its defaults but for the
// namespace it watches, leader election (off unless args turn it on),
// plain-HTTP metrics (so that the bench's scrapes cost no TokenReviews,
// which would count among the controller's requests), profiling and, with
// BENCH_WEBHOOK=off, no conversion webhook; args come last.
func (b *bench) startController(ns, name string, args ...string) *framework.Controller {
	return b.startControllerWithEnv(ns, name, nil, args...)
}

// startControllerWithEnv is startController with env added to the
// controller's environment.
func (b *bench) startControllerWithEnv(ns, name string, env []string, args ...string) *framework.Controller {
	return b.startBinary(b.bin, ns, name, env, args...)
}

// startBinary is startControllerWithEnv running bin, which runs the
// controller.
func (b *bench) startBinary(bin, ns, name string, env []string, args ...string) *framework.Controller {
	defaults := []string{"-namespace=" + ns, "-leader-elect=false", "-metrics-secure=false", "-profiling", "-v=1"}
	if webhookOff {
		defaults = append(defaults, "-webhook-bind-address=0")
	}
	ctrl, err := b.cluster.StartControllerWithEnv(bin, b.logDir, name, env, append(defaults, args...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	return ctrl
}

// stopController stops a controller as the kubelet does, with SIGTERM, and
// waits for it to exit.
func (b *bench) stopController(ctrl *framework.Controller) {
	if ctrl.Exited() {
		return
	}
	if err := ctrl.Signal(syscall.SIGTERM); err != nil {
		b.t.Fatal(err)
	}
	if _, err := ctrl.Wait(30 * time.Second); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bench) scrapeController(ctrl *framework.Controller) []framework.Sample {
	samples, err := framework.ScrapeURL(b.ctx, ctrl.MetricsURL())
	if err != nil {
		b.t.Fatal(err)
	}
	return samples
}

func (b *bench) scrapeAPIServer() []framework.Sample {
	samples, err := b.cluster.ScrapeAPIServer(b.ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	return samples
}

// percentile returns the p-th percentile (0..1) of ds, rounded for printing.
func percentile(ds []time.Duration, p float64) time.Duration {
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[int(p*float64(len(sorted)-1))].Round(100 * time.Microsecond)
}
