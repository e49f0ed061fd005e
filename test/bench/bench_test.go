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
package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	"github.com/kube-samples/sample-controller/test/framework"
)

// Parameters, from the environment.
var (
	numFoos      = envInt("BENCH_FOOS", 1000)
	numUnrelated = envInt("BENCH_UNRELATED_DEPLOYMENTS", 10000)
	numChanges   = envInt("BENCH_SPEC_CHANGES", 50)
	resyncPeriod = 10 * time.Second
	floorWorkers = 8
	benchNS      = "bench"
	// benchClassicNS holds a second set of Foos for a run with the classic
	// sample-controller's 2 workers, for comparison with the default.
	benchClassicNS = "bench-classic"
	classicWorkers = 2
	floorNS        = "floor"
	convergeLimit  = 10 * time.Minute
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// bench holds the run's cluster, clients without a client-side rate limit,
// and the results.
type bench struct {
	t       *testing.T
	ctx     context.Context
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
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{t: t, ctx: context.Background(), logDir: filepath.Join(root, "_output", "bench-logs")}
	if err := os.MkdirAll(b.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if b.bin, err = framework.BuildController(root); err != nil {
		t.Fatal(err)
	}
	// Room for every pod of the run on the one fake node.
	t.Setenv("LOCAL_UP_NODE_PODS", strconv.Itoa(4*numFoos+1000))
	b.cluster, err = framework.StartCluster(root, filepath.Join(root, "_output", "bench-cluster"))
	if err != nil {
		t.Fatal(err)
	}
	framework.CleanupOnInterrupt(b.cluster)
	defer func() {
		framework.KillAll()
		_ = b.cluster.Stop()
	}()
	// The floor and the setup run with no client-side rate limit at all.
	cfg := rest.CopyConfig(b.cluster.Config)
	cfg.QPS = -1
	b.kube = kubernetes.NewForConfigOrDie(cfg)
	b.sample = clientset.NewForConfigOrDie(cfg)

	if _, err := b.cluster.Kubectl("", "apply", "-f", "artifacts/examples/crd.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.cluster.Kubectl("", "wait", "--for=condition=Established", "crd/foos.samplecontroller.k8s.io"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{benchNS, benchClassicNS, floorNS} {
		b.createNamespace(ns)
	}

	b.report("N=%d Foos, %d unrelated Deployments, %d spec changes, resync %v, floor with %d goroutines", numFoos, numUnrelated, numChanges, resyncPeriod, floorWorkers)
	floor := b.measureFloor()
	b.waitDeploymentsAvailable(floorNS, numFoos)

	b.createFoos(benchNS, numFoos)
	ctrl, converged := b.measureConvergence(benchNS, "controller-convergence")
	b.report("convergence, default flags: controller %.2fs, raw API floor %.2fs, ratio %.2f", converged.Seconds(), floor.Seconds(), converged.Seconds()/floor.Seconds())
	b.waitFoosReady(benchNS, numFoos)

	b.createFoos(benchClassicNS, numFoos)
	classic, convergedClassic := b.measureConvergence(benchClassicNS, "controller-convergence-classic", fmt.Sprintf("-workers=%d", classicWorkers))
	b.report("convergence, -workers=%d: controller %.2fs, raw API floor %.2fs, ratio %.2f", classicWorkers, convergedClassic.Seconds(), floor.Seconds(), convergedClassic.Seconds()/floor.Seconds())
	b.waitFoosReady(benchClassicNS, numFoos)
	stopController(t, classic)

	b.measureWritesAtRest(ctrl)
	stopController(t, ctrl)

	// Latency at rest with the default resync period: with the short one of
	// the phases above, a change could wait behind a resync of every Foo.
	ctrl = b.startIdleController("controller-latency")
	b.measureSpecChangeLatency(ctrl)
	stopController(t, ctrl)

	b.measureRSS()

	fmt.Println("\nbench: results")
	for _, r := range b.results {
		fmt.Println("  " + r)
	}
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

func (b *bench) poll(timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	b.t.Helper()
	if err := framework.Poll(b.ctx, 200*time.Millisecond, timeout, cond); err != nil {
		b.t.Fatalf("waiting for %s: %v", what, err)
	}
}

func fooName(i int) string { return fmt.Sprintf("foo-%05d", i) }

// benchDeployment is what the controller creates for a Foo: the same shape
// and size, so the floor writes what the controller writes.
func benchDeployment(ns, name string, owner *samplev1alpha1.Foo) *appsv1.Deployment {
	labels := map[string]string{"app": "nginx", "controller": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "nginx", "controller": name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
			},
		},
	}
	if owner != nil {
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "samplecontroller.k8s.io/v1alpha1", Kind: "Foo", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	}
	return d
}

func newFoo(ns, name string) *samplev1alpha1.Foo {
	return &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       samplev1alpha1.FooSpec{DeploymentName: name, Replicas: ptr.To[int32](1)},
	}
}

// createFoos creates n Foos (not timed).
func (b *bench) createFoos(ns string, n int) []*samplev1alpha1.Foo {
	foos := make([]*samplev1alpha1.Foo, n)
	err := framework.Parallel(n, floorWorkers, func(i int) error {
		f, err := b.sample.SamplecontrollerV1alpha1().Foos(ns).Create(b.ctx, newFoo(ns, fooName(i)), metav1.CreateOptions{})
		foos[i] = f
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return foos
}

// measureFloor times what the controller must at least do for N new Foos,
// done by the API server as fast as 8 unthrottled goroutines can: N
// Deployment creates and N Foo status writes.
func (b *bench) measureFloor() time.Duration {
	foos := b.createFoos(floorNS, numFoos)
	start := time.Now()
	err := framework.Parallel(numFoos, floorWorkers, func(i int) error {
		foo := foos[i]
		if _, err := b.kube.AppsV1().Deployments(floorNS).Create(b.ctx, benchDeployment(floorNS, foo.Name, foo), metav1.CreateOptions{}); err != nil {
			return err
		}
		patch := fmt.Sprintf(`{"status":{"availableReplicas":0,"replicas":0,"selector":"app=nginx,controller=%s","observedGeneration":%d,"conditions":[{"type":"Ready","status":"False","reason":"Progressing","message":"Deployment %s: 0 of 1 replicas updated","lastTransitionTime":%q,"observedGeneration":%d}]}}`,
			foo.Name, foo.Generation, foo.Name, time.Now().UTC().Format(time.RFC3339), foo.Generation)
		_, err := b.sample.SamplecontrollerV1alpha1().Foos(floorNS).Patch(b.ctx, foo.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return time.Since(start)
}

// measureConvergence starts the controller with N Foos waiting in ns and
// times until every Deployment exists and every Foo's status is current.
func (b *bench) measureConvergence(ns, name string, args ...string) (*framework.Controller, time.Duration) {
	start := time.Now()
	ctrl, err := b.cluster.StartController(b.bin, b.logDir, name, append([]string{
		"-namespace=" + ns, "-leader-elect=false", "-resync-period=" + resyncPeriod.String(), "-v=1"}, args...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.poll(convergeLimit, "convergence", func(ctx context.Context) (bool, error) {
		if ctrl.Exited() {
			b.t.Fatalf("controller exited:\n%s", framework.Trim(ctrl.Log(), 4000))
		}
		deployments, err := b.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil || len(deployments.Items) < numFoos {
			return false, err
		}
		foos, err := b.sample.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		for _, f := range foos.Items {
			if f.Status.ObservedGeneration != f.Generation {
				return false, nil
			}
		}
		return true, nil
	})
	elapsed := time.Since(start)
	if samples, err := framework.ScrapeURL(b.ctx, ctrl.MetricsURL()); err == nil {
		b.report("%s: %.0f API requests, %.2fs total waiting on the client-side rate limit", name,
			framework.Sum(samples, "rest_client_requests_total", nil),
			framework.Sum(samples, "rest_client_rate_limiter_duration_seconds_sum", nil))
	}
	return ctrl, elapsed
}

func (b *bench) waitDeploymentsAvailable(ns string, n int) {
	b.poll(convergeLimit, "Deployments available in "+ns, func(ctx context.Context) (bool, error) {
		list, err := b.kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil || len(list.Items) < n {
			return false, err
		}
		for _, d := range list.Items {
			if d.Status.AvailableReplicas != *d.Spec.Replicas {
				return false, nil
			}
		}
		return true, nil
	})
}

func (b *bench) waitFoosReady(ns string, n int) {
	b.poll(convergeLimit, "Foos Ready in "+ns, func(ctx context.Context) (bool, error) {
		list, err := b.sample.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil || len(list.Items) < n {
			return false, err
		}
		for _, f := range list.Items {
			ready := false
			for _, c := range f.Status.Conditions {
				ready = ready || (c.Type == "Ready" && c.Status == metav1.ConditionTrue)
			}
			if !ready || f.Status.ObservedGeneration != f.Generation {
				return false, nil
			}
		}
		return true, nil
	})
}

// writesSnapshot counts the state-changing requests that only the controller
// makes: Foo writes (any subresource), Deployment writes other than the
// deployment controller's status updates, and Events, from the API server's
// apiserver_request_total; and the controller's own write requests.
type writesSnapshot struct {
	apiserver, controller float64
	reconciles            float64
}

func (b *bench) snapshotWrites(ctrl *framework.Controller) writesSnapshot {
	api, err := b.cluster.ScrapeAPIServer(b.ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	own, err := framework.ScrapeURL(b.ctx, ctrl.MetricsURL())
	if err != nil {
		b.t.Fatal(err)
	}
	return writesSnapshot{
		apiserver: framework.Sum(api, "apiserver_request_total", func(l map[string]string) bool {
			if !framework.IsWriteVerb(l["verb"]) {
				return false
			}
			switch l["resource"] {
			case "foos", "events":
				return true
			case "deployments":
				return l["subresource"] != "status"
			}
			return false
		}),
		controller: framework.Sum(own, "rest_client_requests_total", func(l map[string]string) bool { return framework.IsWriteVerb(l["method"]) }),
		reconciles: framework.Sum(own, "samplecontroller_reconcile_total", nil),
	}
}

// measureWritesAtRest counts writes over three resync periods once every Foo
// is Ready: each resync re-syncs every Foo, and none should write.
func (b *bench) measureWritesAtRest(ctrl *framework.Controller) {
	// Let the last status writes of the rollout land first.
	time.Sleep(2 * time.Second)
	before := b.snapshotWrites(ctrl)
	window := 3 * resyncPeriod
	time.Sleep(window)
	after := b.snapshotWrites(ctrl)
	b.report("writes at rest over %v (3 resync periods, %.0f syncs): %.0f by the controller, %.0f Foo/Deployment/Event writes seen by the API server",
		window, after.reconciles-before.reconciles, after.controller-before.controller, after.apiserver-before.apiserver)
}

// measureSpecChangeLatency changes spec.replicas of one Foo at a time and
// times until the watch shows its Deployment following.
func (b *bench) measureSpecChangeLatency(ctrl *framework.Controller) {
	before, err := framework.ScrapeURL(b.ctx, ctrl.MetricsURL())
	if err != nil {
		b.t.Fatal(err)
	}
	var patchRTTs []time.Duration
	w, err := b.kube.AppsV1().Deployments(benchNS).Watch(b.ctx, metav1.ListOptions{ResourceVersion: "0"})
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
	for seen := 0; seen < numFoos; {
		ev := <-events
		if ev.Type == watch.Added {
			seen++
		}
	}
	var latencies []time.Duration
	for i := 0; i < numChanges; i++ {
		name := fooName(i * (numFoos / numChanges))
		replicas := int32(2 + i%2) // 2, 3, 2, ...: always a change
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		start := time.Now()
		if _, err := b.sample.SamplecontrollerV1alpha1().Foos(benchNS).Patch(b.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
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
			f, err := b.sample.SamplecontrollerV1alpha1().Foos(benchNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ready := meta.IsStatusConditionTrue(f.Status.Conditions, samplev1alpha1.ConditionReady)
			return ready && f.Status.ObservedGeneration == f.Generation && f.Status.AvailableReplicas == replicas, nil
		})
	}
	after, err := framework.ScrapeURL(b.ctx, ctrl.MetricsURL())
	if err != nil {
		b.t.Fatal(err)
	}
	b.report("spec change -> Deployment latency at rest over %d changes: p50 %v, p99 %v, max %v",
		len(latencies), percentile(latencies, 0.50), percentile(latencies, 0.99), percentile(latencies, 1))
	// Where the time goes: the user's own PATCH of the Foo, and the
	// controller's share (time queued, time syncing) from its histograms;
	// the rest is watch delivery and the Deployment apply's round trip.
	mean := func(name string) time.Duration {
		sum := framework.Sum(after, name+"_sum", fooQueue) - framework.Sum(before, name+"_sum", fooQueue)
		n := framework.Sum(after, name+"_count", fooQueue) - framework.Sum(before, name+"_count", fooQueue)
		if n == 0 {
			return 0
		}
		return time.Duration(sum / n * float64(time.Second))
	}
	b.report("  of which: Foo PATCH round trip p50 %v; controller mean queue wait %v, mean sync %v (all syncs in the window)",
		percentile(patchRTTs, 0.50), mean("workqueue_queue_duration_seconds").Round(10*time.Microsecond), mean("samplecontroller_reconcile_duration_seconds").Round(10*time.Microsecond))
}

// fooQueue selects the controller's own workqueue (and unlabelled series).
func fooQueue(l map[string]string) bool { return l["name"] == "" || l["name"] == "foo" }

// percentile returns the p-th percentile (0..1) of ds, rounded for printing.
func percentile(ds []time.Duration, p float64) time.Duration {
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[int(p*float64(len(sorted)-1))].Round(100 * time.Microsecond)
}

func stopController(t *testing.T, ctrl *framework.Controller) {
	if err := ctrl.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.Wait(20 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// startIdleController starts a controller with the default flags (but for
// the namespace and leader election) over converged Foos, and waits until it
// has synced every Foo once.
func (b *bench) startIdleController(name string, args ...string) *framework.Controller {
	ctrl, err := b.cluster.StartController(b.bin, b.logDir, name,
		append([]string{"-namespace=" + benchNS, "-leader-elect=false", "-v=1"}, args...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.poll(2*time.Minute, name+" synced", func(ctx context.Context) (bool, error) {
		if ctrl.Exited() {
			b.t.Fatalf("%s exited:\n%s", name, framework.Trim(ctrl.Log(), 4000))
		}
		samples, err := framework.ScrapeURL(ctx, ctrl.MetricsURL())
		if err != nil {
			return false, nil
		}
		return framework.Sum(samples, "samplecontroller_reconcile_total", nil) >= float64(numFoos), nil
	})
	return ctrl
}

// peakRSS runs a fresh controller over the converged Foos until its caches
// are synced and one resync has passed, and returns its peak RSS (VmHWM).
func (b *bench) peakRSS(name string) int64 {
	ctrl := b.startIdleController(name, "-resync-period="+resyncPeriod.String())
	defer stopController(b.t, ctrl)
	time.Sleep(resyncPeriod + time.Second)
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", ctrl.Pid()))
	if err != nil {
		b.t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.t.Fatal(err)
			}
			return kb
		}
	}
	b.t.Fatal("no VmHWM")
	return 0
}

// measureRSS compares the controller's peak memory with and without many
// Deployments it does not manage in the very namespace it watches: it caches
// only its own.
func (b *bench) measureRSS() {
	without := b.peakRSS("controller-rss-without")
	start := time.Now()
	err := framework.Parallel(numUnrelated, floorWorkers, func(i int) error {
		d := benchDeployment(benchNS, fmt.Sprintf("unrelated-%05d", i), nil)
		d.Spec.Replicas = ptr.To[int32](0)
		d.Spec.Paused = true // no ReplicaSets: only the Deployments themselves
		_, err := b.kube.AppsV1().Deployments(benchNS).Create(b.ctx, d, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
	b.report("created %d unrelated Deployments in %.1fs", numUnrelated, time.Since(start).Seconds())
	with := b.peakRSS("controller-rss-with")
	b.report("controller peak RSS (VmHWM), %d Foos: %.1f MiB without, %.1f MiB with %d unrelated Deployments (%+.1f%%)",
		numFoos, float64(without)/1024, float64(with)/1024, numUnrelated, 100*float64(with-without)/float64(without))
}
