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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-samples/sample-controller/test/framework"
)

// startupClusterDir is the work dir, under the suite's outDir, of the
// control plane whose kube-controller-manager exits as it starts.
const startupClusterDir = "startup-cluster"

// TestControlPlaneStartsAgainAComponentThatExitsAsItStarts brings up a
// control plane whose kube-controller-manager exits the first time it
// starts, as it does by itself on a busy machine when kube-apiserver does
// not answer yet, and checks that the framework (and so make run, which
// brings its control plane up the same way) starts it again: the component
// runs, the node lost its not-ready taint, and example-foo becomes
// available, which needs kube-controller-manager's Deployment and
// ReplicaSet controllers.
func TestControlPlaneStartsAgainAComponentThatExitsAsItStarts(t *testing.T) {
	if os.Getenv("E2E_KUBECONFIG") != "" {
		t.Skip("needs a control plane of its own, which E2E_KUBECONFIG does not give")
	}
	minor, err := framework.DefaultKubernetesMinor(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(repoRoot, "_output", "bin", "k8s-"+minor, "kube-controller-manager")
	scratch := t.TempDir()
	starts := filepath.Join(scratch, "starts")
	// kwokctl runs the binary with --version first to choose its flags:
	// that run is passed through. The first real start exits at once;
	// later ones run kube-controller-manager under the name kwokctl gave
	// the binary, which the framework checks to tell its process.
	wrapper := filepath.Join(scratch, "kube-controller-manager")
	script := fmt.Sprintf(`#!/usr/bin/env bash
if [[ "${1:-}" == --version ]]; then exec %[1]q "$@"; fi
if [[ ! -e %[2]q ]]; then
	echo exited >>%[2]q
	echo "kube-controller-manager exits as it starts, as when kube-apiserver does not answer yet" >&2
	exit 1
fi
echo ran >>%[2]q
exec -a "$0" %[1]q "$@"
`, built, starts)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	own := useOwnCluster(t, startupClusterDir, framework.WithComponentBinary(framework.KubeControllerManager, wrapper))

	data, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(data)), []string{"exited", "ran"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("kube-controller-manager's starts: %v, want %v", got, want)
	}
	if state, err := own.ComponentState(framework.KubeControllerManager); err != nil || state != framework.StateRunning {
		t.Fatalf("kube-controller-manager is %q (%v), want %q", state, err, framework.StateRunning)
	}
	// The log of the run that exited is kept beside the running one's.
	exitedLog, err := os.ReadFile(own.ComponentLogPath(framework.KubeControllerManager) + ".1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(exitedLog), "kube-controller-manager exits as it starts") {
		t.Errorf("the kept log of the run that exited does not hold what it wrote:\n%s", exitedLog)
	}

	ensureStandardCRD(t)
	ns := newNamespace(t, "startup")
	c := startController(t, "controller", controllerArgs(ns)...)
	waitControllerReady(t, c)
	kubectl(t, "create", "-n", ns, "-f", exampleFooManifest)
	foo := waitFooReady(t, ns, "example-foo")
	if foo.Status.AvailableReplicas != 1 {
		t.Fatalf("example-foo has %d available replicas, want 1", foo.Status.AvailableReplicas)
	}
}
