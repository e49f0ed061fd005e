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

// Helpers of the fault scenarios (faults_test.go): their own control plane,
// many Foos created at once, a controller that leads through a Lease, and
// the check that everything converged without duplicates or orphans.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/freshfirst"
	"github.com/kube-samples/sample-controller/test/framework"
)

const (
	// faultClusterDir is the fault scenarios' own control plane, under the
	// suite's outDir: the rest of the suite never sees a disturbed cluster.
	faultClusterDir = "faults-cluster"
	// creators is how many goroutines create Foos at once.
	creators = 8
	// faultStall is how long the Foos of a scenario may make no progress
	// (none more with a Deployment, none more Ready, none fewer) before the
	// wait for them fails. How long kube-controller-manager, kube-scheduler
	// and kwok take to roll hundreds of Deployments out after a fault
	// depends on the machine and is not the controller's to promise: the
	// time is reported, not bounded.
	faultStall = 3 * time.Minute
)

// faultFoos is how many Foos each scenario creates: E2E_FAULT_FOOS, default
// 500.
func faultFoos(t *testing.T) int {
	t.Helper()
	v := os.Getenv("E2E_FAULT_FOOS")
	if v == "" {
		return 500
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 10 {
		t.Fatalf("E2E_FAULT_FOOS=%q: want a number of at least 10", v)
	}
	return n
}

// useFaultCluster starts the fault scenarios' control plane and points the
// package's helpers at it until the test ends (useOwnCluster).
func useFaultCluster(t *testing.T, count int) {
	t.Helper()
	useOwnCluster(t, faultClusterDir,
		// Room for the pods of every scenario on the one fake node:
		// namespaces are deleted at the end of each scenario, but not
		// waited for.
		framework.WithNodePods(8*count+500),
		// A kube-apiserver started again over hundreds of objects, on a
		// busy machine, can take tens of seconds to pass /readyz
		// (docs/failure-modes.md, Measured results).
		framework.WithTimeout(180*time.Second))
}

// useOwnCluster starts a control plane of the test's own in dir (relative
// to the suite's outDir) and points the package's helpers (which act on
// the variable cluster) at it until the test ends; then the control plane
// is stopped, whatever was killed or paused in it, and cluster is the
// suite's again. The e2e tests run one at a time, so no other test sees
// the swap.
func useOwnCluster(t *testing.T, dir string, opts ...framework.ClusterOption) *framework.Cluster {
	t.Helper()
	own, err := framework.StartCluster(repoRoot, filepath.Join(outDir, dir), opts...)
	if err != nil {
		t.Fatal(err)
	}
	suite := cluster
	cluster = own
	t.Cleanup(func() {
		cluster = suite
		if err := own.Stop(); err != nil {
			t.Errorf("stopping the control plane in %s: %v", dir, err)
		}
	})
	return own
}

// repairAtEnd makes the component run again when the test ends, so that a
// scenario failing in the middle of its fault does not break the next one.
func repairAtEnd(t *testing.T, component string) {
	t.Helper()
	faults := cluster
	t.Cleanup(func() {
		if err := faults.EnsureComponent(component); err != nil {
			t.Errorf("repairing %s: %v", component, err)
		}
	})
}

// faultRun is one scenario: a namespace of Foos and the controller leading
// for it.
type faultRun struct {
	ns      string
	want    int // Foos created so far
	leaseNS string
	leaseID string
	// kubeconfig, if set, is the deployed ServiceAccount's, which the
	// leaders run with (and so with its Lease and webhook CA Secret).
	kubeconfig string
	leader     *replica
	started    time.Time // when the leader's process started
}

// newFaultRun creates the scenario's namespace and starts a controller for
// it as artifacts/deploy runs it: with the deployed ServiceAccount's token
// of kubeconfig alone, under its admission policies, leader election on,
// its Lease the one its Role allows (outside the namespaces the scenarios
// disturb: one of them deletes its namespace). extra flags are passed on.
func newFaultRun(t *testing.T, prefix, kubeconfig string, extra ...string) *faultRun {
	t.Helper()
	r := freshFaultRun(t, prefix, kubeconfig)
	r.startLeader(t, "controller", extra...)
	return r
}

// freshFaultRun is a scenario's namespace, and no Lease yet, as after a
// fresh install: the scenario before ended with its controller killed,
// holding the one Lease the ServiceAccount's Role allows.
func freshFaultRun(t *testing.T, prefix, kubeconfig string) *faultRun {
	t.Helper()
	ns := newNamespace(t, prefix)
	err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Delete(context.Background(), deployName,
		metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return &faultRun{ns: ns, leaseNS: deployNamespace, leaseID: deployName, kubeconfig: kubeconfig}
}

// startLeader starts a controller that watches the run's namespace and
// competes for the run's Lease, and waits until it holds the Lease: at
// once, or, after a leader died without releasing it, once the Lease has
// expired (15 s). extra flags come last and override the defaults.
func (r *faultRun) startLeader(t *testing.T, name string, extra ...string) {
	t.Helper()
	args := []string{"-namespace=" + r.ns, "-leader-elect=true",
		"-leader-elect-namespace=" + r.leaseNS, "-leader-elect-id=" + r.leaseID}
	if r.kubeconfig != "" {
		// Its webhook keeps its CA where the webhook Role lets it.
		args = append(args, "-kubeconfig="+r.kubeconfig, "-webhook-namespace="+deployNamespace)
	}
	args = append(args, extra...)
	r.started = time.Now()
	c := startController(t, name, args...)
	r.leader = &replica{Controller: c, identity: leaderElectionIdentity(t, c)}
	waitLeaseHolder(t, r.leaseNS, r.leaseID, r.leader.identity)
}

func fooIndexName(i int) string { return fmt.Sprintf("foo-%04d", i) }

// createFoos creates the Foos foo-<from> to foo-<to-1> (one replica, the
// Deployment named after the Foo) from several goroutines at once.
func (r *faultRun) createFoos(t *testing.T, from, to int) {
	t.Helper()
	if _, err := r.createFoosUntilError(from, to); err != nil {
		t.Fatal(err)
	}
}

// createFoosUntilError creates Foos as createFoos does, stops at the first
// error and returns it with the number of Foos created.
func (r *faultRun) createFoosUntilError(from, to int) (int, error) {
	var created atomic.Int64
	fooClient := cluster.Sample.SamplecontrollerV1beta1().Foos(r.ns)
	err := framework.Parallel(to-from, creators, func(i int) error {
		name := fooIndexName(from + i)
		if _, err := fooClient.Create(context.Background(), newFoo(r.ns, name, name, int32p(1)), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Foo %s/%s: %w", r.ns, name, err)
		}
		created.Add(1)
		return nil
	})
	r.want += int(created.Load())
	return int(created.Load()), err
}

// convergence is what a namespace looks like, compared to what the Foos in
// it ask for.
type convergence struct {
	foos, ready, deployments int
	// problems lists what must not be, whatever the timing: a Foo with more
	// than one Deployment, a Deployment the Foo does not ask for or that is
	// not as the controller makes it, and orphans (a Deployment labelled
	// managed-by this controller without a live controlling Foo).
	problems []string
	// missing counts the Foos without a Deployment yet.
	missing int
	// waiting says why the first few Foos that are not Ready are not: the
	// reason and message of their Ready condition.
	waiting []string
}

// progress is what moves while the Foos converge.
func (c convergence) progress() string {
	return fmt.Sprintf("%d Foos, %d Ready, %d Deployments, %d Foos without one, %d problems", c.foos, c.ready, c.deployments, c.missing, len(c.problems))
}

func (c convergence) converged(want int) bool {
	return c.foos == want && c.ready == want && c.missing == 0 && len(c.problems) == 0
}

func (c convergence) String() string {
	s := fmt.Sprintf("%d Foos, %d Ready, %d Deployments, %d Foos without one", c.foos, c.ready, c.deployments, c.missing)
	if len(c.waiting) > 0 {
		s += "; not Ready: " + strings.Join(c.waiting, "; ")
	}
	if len(c.problems) > 0 {
		shown := c.problems
		if len(shown) > 5 {
			shown = shown[:5]
		}
		s += fmt.Sprintf("; %d problems: %s", len(c.problems), strings.Join(shown, "; "))
	}
	return s
}

// observe lists the namespace's Foos and Deployments (a quorum read) and
// compares them.
func (r *faultRun) observe(ctx context.Context) (convergence, error) {
	listed, err := cluster.Sample.SamplecontrollerV1beta1().Foos(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return convergence{}, err
	}
	deployments, err := cluster.Kube.AppsV1().Deployments(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return convergence{}, err
	}
	return compare(listed.Items, deployments.Items), nil
}

// compare checks the Deployments against the Foos.
func compare(served []samplev1beta1.Foo, deployments []appsv1.Deployment) convergence {
	c := convergence{foos: len(served), deployments: len(deployments)}
	byUID := map[types.UID]*samplev1beta1.Foo{}
	for i := range served {
		byUID[served[i].UID] = &served[i]
	}
	owned := map[types.UID][]*appsv1.Deployment{}
	for i := range deployments {
		d := &deployments[i]
		ref := metav1.GetControllerOf(d)
		if ref == nil || ref.Kind != samplecontroller.FooKind {
			if d.Labels[samplecontroller.LabelManagedBy] == samplecontroller.ControllerName {
				c.problems = append(c.problems, fmt.Sprintf("orphan Deployment %s: labelled managed-by %s, controlled by no Foo", d.Name, samplecontroller.ControllerName))
			}
			continue
		}
		if byUID[ref.UID] == nil {
			c.problems = append(c.problems, fmt.Sprintf("orphan Deployment %s: its Foo %s (uid %s) is gone", d.Name, ref.Name, ref.UID))
			continue
		}
		owned[ref.UID] = append(owned[ref.UID], d)
	}
	for i := range served {
		foo := &served[i]
		if isReady(foo) {
			c.ready++
		} else if len(c.waiting) < 3 {
			c.waiting = append(c.waiting, notReadyBecause(foo))
		}
		mine := owned[foo.UID]
		switch {
		case len(mine) == 0:
			c.missing++
		case len(mine) > 1:
			var names []string
			for _, d := range mine {
				names = append(names, d.Name)
			}
			sort.Strings(names)
			c.problems = append(c.problems, fmt.Sprintf("Foo %s controls %d Deployments %v, want only %s", foo.Name, len(mine), names, foo.Spec.Deployment.Name))
		case mine[0].Name != foo.Spec.Deployment.Name:
			c.problems = append(c.problems, fmt.Sprintf("Foo %s controls Deployment %s, asks for %s", foo.Name, mine[0].Name, foo.Spec.Deployment.Name))
		default:
			if err := checkManagedDeployment(mine[0], foo); err != nil {
				c.problems = append(c.problems, err.Error())
			}
		}
	}
	return c
}

// notReadyBecause says why a Foo is not Ready, from its status.
func notReadyBecause(foo *samplev1beta1.Foo) string {
	c := readyCondition(foo)
	if c == nil {
		return foo.Name + ": no Ready condition"
	}
	return fmt.Sprintf("%s: %s %s (generation %d, observed %d): %s", foo.Name, c.Status, c.Reason, foo.Generation, c.ObservedGeneration, c.Message)
}

// waitDeploymentsAtLeast waits until n Deployments exist in the namespace
// (the controller is well into its work) and returns what it saw then.
func (r *faultRun) waitDeploymentsAtLeast(t *testing.T, n int) convergence {
	t.Helper()
	var last convergence
	_, err := framework.PollProgress(context.Background(), 200*time.Millisecond, faultStall, func(ctx context.Context) (bool, string, error) {
		var err error
		last, err = r.observe(ctx)
		return last.deployments >= n, last.progress(), err
	})
	if err != nil {
		t.Fatalf("waiting for %d Deployments in %s: %v; last seen: %v", n, r.ns, err, last)
	}
	return last
}

// waitMidConvergence waits until a quarter of the Foos have a Deployment
// and fails the test if every Foo is already Ready: the fault would then
// come too late to test anything.
func (r *faultRun) waitMidConvergence(t *testing.T) {
	t.Helper()
	seen := r.waitDeploymentsAtLeast(t, r.want/4)
	if seen.ready >= r.want {
		t.Fatalf("every Foo was Ready before the fault (%v); the fault must come mid-convergence", seen)
	}
	t.Logf("fault injected mid-convergence: %v", seen)
}

// waitConverged waits until every Foo is Ready with exactly one Deployment,
// the one it asks for, as the controller makes it, and no orphan exists,
// for as long as the Foos make progress (faultStall); it returns the time
// since since.
func (r *faultRun) waitConverged(t *testing.T, since time.Time) time.Duration {
	t.Helper()
	var last convergence
	_, err := framework.PollProgress(context.Background(), time.Second, faultStall, func(ctx context.Context) (bool, string, error) {
		if r.leader.Exited() {
			t.Fatalf("the controller exited before everything converged (%v); last log lines:\n%s", last, framework.Trim(r.leader.Log(), 3000))
		}
		var err error
		last, err = r.observe(ctx)
		return last.converged(r.want), last.progress(), err
	})
	if err != nil {
		t.Fatalf("waiting for %d Foos Ready, each with exactly its one Deployment, and no orphan in %s: %v; last seen: %v",
			r.want, r.ns, err, last)
	}
	return time.Since(since)
}

// expectAtMostOneWarningPerProblem checks that no Foo carries more than one
// Warning event, seen once, for the same reason: a problem is reported when
// it is found, not on every retry.
func (r *faultRun) expectAtMostOneWarningPerProblem(t *testing.T) {
	t.Helper()
	perProblem := map[string][]corev1.Event{}
	for _, e := range namespaceEvents(t, r.ns) {
		if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == samplecontroller.FooKind {
			key := e.InvolvedObject.Name + " " + e.Reason
			perProblem[key] = append(perProblem[key], e)
		}
	}
	for key, events := range perProblem {
		if len(events) > 1 || events[0].Count > 1 {
			t.Errorf("Foo %s: %d Warning events for one problem, want 1 seen once: %s", key, len(events), describeEvents(events))
		}
	}
	t.Logf("Warning events on Foos: %d distinct problems", len(perProblem))
}

// expectLeaderStayed checks that the leader rode through the fault: still
// running, never logged losing the Lease, and the Lease has had no other
// holder.
func (r *faultRun) expectLeaderStayed(t *testing.T) {
	t.Helper()
	if r.leader.Exited() {
		code, _ := r.leader.Wait(0)
		t.Fatalf("the controller exited (code %d); last log lines:\n%s", code, framework.Trim(r.leader.Log(), 3000))
	}
	if lines := grepLines(r.leader.Log(), lostLeadershipRE); len(lines) > 0 {
		t.Errorf("the controller logged:\n%s", strings.Join(lines, "\n"))
	}
	expectLease(t, r.leaseNS, r.leaseID, r.leader.identity, 0)
}

// controllerFigures summarises the leader's metrics: syncs by result,
// workqueue retries, API requests and their rate since the process started,
// and the answers that were not 2xx.
func (r *faultRun) controllerFigures(t *testing.T) string {
	t.Helper()
	samples := scrape(t, r.leader.Controller)
	requests := framework.Sum(samples, "rest_client_requests_total", nil)
	elapsed := time.Since(r.started)
	codes := map[string]float64{}
	for _, s := range samples {
		if s.Name == "rest_client_requests_total" && !strings.HasPrefix(s.Labels["code"], "2") {
			codes[s.Labels["method"]+" "+s.Labels["code"]] += s.Value
		}
	}
	failed := make([]string, 0, len(codes))
	for k, v := range codes {
		failed = append(failed, fmt.Sprintf("%s: %.0f", k, v))
	}
	sort.Strings(failed)
	return fmt.Sprintf("syncs success=%.0f conflict=%.0f deferred=%.0f error=%.0f, workqueue_retries_total=%.0f, %.0f API requests in %v (%.1f/s), not 2xx: %v",
		reconciles(samples, "success"), reconciles(samples, "conflict"), reconciles(samples, "deferred"), reconciles(samples, "error"),
		framework.Sum(samples, "workqueue_retries_total", func(l map[string]string) bool { return l["name"] == freshfirst.QueueName }),
		requests, elapsed.Round(time.Second), requests/elapsed.Seconds(), failed)
}

// startSlowLink starts a slow link to the API server (framework.SlowLink),
// closed when the test ends.
func startSlowLink(t *testing.T) *framework.SlowLink {
	t.Helper()
	server, err := url.Parse(cluster.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	link, err := framework.StartSlowLink(server.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Close() })
	return link
}

// slowedKubeconfig writes a copy of the kubeconfig at path whose clusters
// are reached at addr (a slow link's), and returns the copy's path. The API
// server's certificate names 127.0.0.1, which the link listens on too.
func slowedKubeconfig(t *testing.T, path, addr string) string {
	t.Helper()
	config, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range config.Clusters {
		c.Server = "https://" + addr
	}
	slowed := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, slowed); err != nil {
		t.Fatal(err)
	}
	return slowed
}
