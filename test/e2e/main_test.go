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

// Package e2e proves the controller on real Kubernetes components: one local
// control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok) for the whole suite, and the controller built and run
// as a separate process, driven with client-go and kubectl.
//
// Each file holds the tests of one contract (walkthrough_test.go is the
// README's story; drift_test.go, rbac_test.go, leader_election_test.go, ...),
// and each test is named for what it proves. Shared helpers are in
// helpers_test.go and helpers_<topic>_test.go; a helper only one file uses
// lives in that file. A test creates its own namespace and runs its own
// controller, confined to that namespace and without leader election
// (controllerArgs), unless what it proves needs otherwise. The tests run one
// at a time and in any order: those that change or delete the Foo CRD put
// artifacts/examples/crd.yaml back when they end, and the others install it
// if it is missing (ensureStandardCRD).
//
// Run it with "make test" (everything) or "make e2e"; K8S_MINOR=1.35 runs
// it on the control plane of another supported minor. Set E2E_KUBECONFIG to
// run against a cluster you started yourself (with kwokctl, as hack/run.sh
// does, or any other).
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/test/framework"
)

var (
	// repoRoot is the repository's root, where the binaries are built.
	repoRoot string
	// cluster is the control plane every test runs against: nil in a run
	// of E2E_NO_SUITE_CONTROL_PLANE, until a test starts its own
	// (useOwnCluster).
	cluster *framework.Cluster
	// controllerBin is the controller binary under test.
	controllerBin string
	// outDir holds what this run keeps: the control plane (cluster/ and the
	// scenarios' own, such as chaos-cluster/), the controllers' logs
	// (logs/), the controller binary and the dashboard picture. It is
	// _output/e2e-<minor>, one per Kubernetes minor so that the minors'
	// suites can run side by side (make e2e-minors), or _output/e2e-kubeconfig
	// against the cluster of E2E_KUBECONFIG; E2E_OUT_DIR names another, for
	// a run beside one of those (make e2e runs the tests that start control
	// planes of their own in one).
	outDir string
	// logDir collects the controllers' logs; kept after the run.
	logDir string
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	root, err := framework.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = root
	kubeconfig := os.Getenv("E2E_KUBECONFIG")
	outDir = filepath.Join(root, "_output", "e2e-kubeconfig")
	if kubeconfig == "" {
		minor, err := framework.DefaultKubernetesMinor(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		outDir = filepath.Join(root, "_output", "e2e-"+minor)
	}
	if dir := os.Getenv("E2E_OUT_DIR"); dir != "" {
		// Relative to the repository's root, where make runs, not to
		// test/e2e, where go test runs the suite.
		outDir = dir
		if !filepath.IsAbs(dir) {
			outDir = filepath.Join(root, dir)
		}
	}
	logDir = filepath.Join(outDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	controllerBin = filepath.Join(outDir, samplecontroller.ControllerName)
	if err := framework.BuildController(root, controllerBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	if os.Getenv("E2E_NO_SUITE_CONTROL_PLANE") == "true" {
		// A run of only the tests that start control planes of their own
		// (make e2e's second go test): the suite's would sit idle beside
		// them, using CPU that make test has none of to spare
		// (docs/performance.md, make test). A test that needs it fails.
		framework.CleanupOnInterrupt(nil)
		defer framework.KillAll()
		return m.Run()
	}

	if kubeconfig != "" {
		cluster, err = framework.ConnectCluster(root, kubeconfig)
	} else {
		cluster, err = framework.StartCluster(root, filepath.Join(outDir, "cluster"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if v, err := cluster.Kube.Discovery().ServerVersion(); err == nil {
		fmt.Fprintf(os.Stderr, "end-to-end tests on Kubernetes %s\n", v.GitVersion)
	}
	// Ctrl-C or a kill of "go test" must not leave the control plane or a
	// controller behind.
	framework.CleanupOnInterrupt(cluster)
	suite := cluster
	defer func() {
		framework.KillAll()
		if err := suite.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}()
	return m.Run()
}

// newNamespace creates a namespace for one test, waits until pods may be
// created in it (its default ServiceAccount exists), and deletes it when the
// test ends.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := cluster.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cluster.Kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	eventually(t, time.Minute, "default ServiceAccount in "+ns.Name, func(ctx context.Context) (bool, error) {
		_, err := cluster.Kube.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return ns.Name
}

// startController runs a controller for the test and stops it (SIGKILL if it
// is still running) when the test ends; on failure its log is printed.
func startController(t *testing.T, name string, args ...string) *framework.Controller {
	t.Helper()
	return startControllerFor(t, t, name, args...)
}

// startControllerFor is startController for a controller that the (sub)test
// t starts and that runs until owner ends, e.g. one a subtest of a sequential
// test starts and the later subtests use. Failures to start it fail t: only
// the goroutine of t may stop t.
func startControllerFor(owner, t *testing.T, name string, args ...string) *framework.Controller {
	t.Helper()
	name = strings.NewReplacer("/", "_", " ", "_").Replace(owner.Name() + "-" + name)
	c, err := cluster.StartController(controllerBin, logDir, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	owner.Cleanup(func() {
		c.Kill()
		if owner.Failed() {
			owner.Logf("log of %s:\n%s", c.Name, framework.Trim(c.Log(), 8000))
		}
	})
	return c
}

// eventually polls cond every 100 ms until it holds, failing the test after
// timeout with what was awaited and the last error.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := framework.Poll(context.Background(), 100*time.Millisecond, timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// kubectl runs kubectl against the suite's cluster, failing the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := cluster.Kubectl("", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kubectlFails runs kubectl and fails the test unless kubectl exits
// non-zero; it returns kubectl's output.
func kubectlFails(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := cluster.Kubectl(stdin, args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded, want an error; output:\n%s", strings.Join(args, " "), out)
	}
	return out
}
