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

// The image, deployed by the shipped manifests onto a real node
// (test/framework/node.go): real pods, real probes, the real webhook
// Service, in-cluster configuration, the restricted pod security level and a
// read-only root, together.

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
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// realNodeSetupTimeout bounds each wait on the real node's pods: an image
// that does not start shows in the pod's status long before.
const realNodeSetupTimeout = 3 * time.Minute

// requireRealNode skips the test where this host cannot run a real node,
// saying what to install, unless E2E_REAL_NODE=required makes that a
// failure; and where the suite runs an older minor, as the real node runs
// the newest one's kubelet only.
func requireRealNode(t *testing.T) {
	t.Helper()
	if os.Getenv("E2E_KUBECONFIG") != "" {
		t.Skip("the real node joins a control plane this suite started; E2E_KUBECONFIG names another")
	}
	minors, err := framework.KubernetesMinors(cluster.Root)
	if err != nil {
		t.Fatal(err)
	}
	if minor := realNodeMinor(t); minor != minors[0] {
		t.Skipf("the real node runs the newest minor's kubelet (%s); this suite runs %s", minors[0], minor)
	}
	if err := framework.RealNodeUnavailable(); err != nil {
		if os.Getenv(framework.RealNodeEnv) == "required" {
			t.Fatalf("%s=required, and this host cannot run a real node: %v", framework.RealNodeEnv, err)
		}
		t.Skipf("skipped: %v (%s=required makes this a failure)", err, framework.RealNodeEnv)
	}
}

// realNodeMinor is the suite's minor, 1.37 of v1.37.2.
func realNodeMinor(t *testing.T) string {
	t.Helper()
	parts := strings.SplitN(strings.TrimPrefix(cluster.KubernetesVersion, "v"), ".", 3)
	if len(parts) < 2 {
		t.Fatalf("kube-apiserver's version %q has no minor", cluster.KubernetesVersion)
	}
	return parts[0] + "." + parts[1]
}

// startRealNode builds the images and starts a real node with them
// imported, stopped (and the host put back) when the test ends.
func startRealNode(t *testing.T, extra ...framework.Image) (*framework.RealNode, framework.Image) {
	t.Helper()
	began := time.Now()
	controller, pause, err := framework.BuildImages(cluster.Root, samplecontroller.ControllerName)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("images built in %v", time.Since(began).Round(100*time.Millisecond))
	return startRealNodeImporting(t, pause, append([]framework.Image{controller}, extra...)...), controller
}

// writeRealNodeOverlay writes, into outDir/name, the overlay over the
// manifests of the tree at root (artifacts/deploy) that a user of such a node
// would write: the image, never pulled, and the node chosen and tolerated.
// Nothing else of the shipped manifests changes.
func writeRealNodeOverlay(t *testing.T, node *framework.RealNode, name, root, image string) string {
	t.Helper()
	dir := filepath.Join(outDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Rel(dir, filepath.Join(root, deployKustomization))
	if err != nil {
		t.Fatal(err)
	}
	name, tag, _ := strings.Cut(image, ":")
	overlay := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: %s
    newName: %s
    newTag: %s
patches:
  - target:
      kind: Deployment
      name: %s
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/imagePullPolicy
        value: Never
      - op: add
        path: /spec/template/spec/nodeSelector
        value: {kubernetes.io/hostname: %s}
      - op: add
        path: /spec/template/spec/tolerations
        value: [{key: %s, operator: Exists, effect: NoSchedule}]
`, base, samplecontroller.ControllerName, name, tag, deployName, node.Name, framework.RealNodeTaint)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitDeployReady waits until the controller's Deployment has every
// replica of image updated, Ready and available, and returns its pods.
func waitDeployReady(t *testing.T, image string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	_, err := framework.PollProgress(context.Background(), 250*time.Millisecond, realNodeSetupTimeout,
		func(ctx context.Context) (bool, string, error) {
			d, err := cluster.Kube.AppsV1().Deployments(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			list, err := cluster.Kube.CoreV1().Pods(deployNamespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, "", err
			}
			pods = nil
			var states []string
			ready := 0
			for _, p := range list.Items {
				if p.DeletionTimestamp != nil {
					states = append(states, p.Name+" terminating")
					continue
				}
				pods = append(pods, p)
				states = append(states, p.Name+" "+podState(&p))
				if podReady(&p) && p.Spec.Containers[0].Image == image {
					ready++
				}
			}
			want := *d.Spec.Replicas
			progress := fmt.Sprintf("%d/%d Ready of %s, generation %d observed %d, updated %d available %d; %s",
				ready, want, image, d.Generation, d.Status.ObservedGeneration, d.Status.UpdatedReplicas,
				d.Status.AvailableReplicas, strings.Join(states, ", "))
			done := ready == int(want) && len(pods) == int(want) && d.Status.ObservedGeneration == d.Generation &&
				d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want
			return done, progress, nil
		})
	if err != nil {
		t.Fatalf("waiting for %s/%s: %v", deployNamespace, deployName, err)
	}
	return pods
}

// podState is the pod's phase and its container's state, for progress.
func podState(p *corev1.Pod) string {
	s := string(p.Status.Phase)
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			s += " waiting " + c.State.Waiting.Reason + " " + c.State.Waiting.Message
		case c.State.Terminated != nil:
			s += fmt.Sprintf(" terminated %s (exit %d)", c.State.Terminated.Reason, c.State.Terminated.ExitCode)
		case c.State.Running != nil:
			s += fmt.Sprintf(" running, ready %v, restarts %d", c.Ready, c.RestartCount)
		}
	}
	return s
}

// leaseHolder is the holder of the controller's Lease in its namespace.
func leaseHolder(ctx context.Context) (string, error) {
	lease, err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Get(ctx, samplecontroller.ControllerName,
		metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// holderPod is the pod whose name the Lease's holder identity starts with.
func holderPod(holder string, pods []corev1.Pod) string {
	for _, p := range pods {
		if holder == p.Name || strings.HasPrefix(holder, p.Name+"_") {
			return p.Name
		}
	}
	return ""
}

// undeploy runs make undeploy, as a user would: the overlay deployed
// nothing of another name. It checks that nothing of the deploy is left:
// the Namespace, the cluster-scoped RBAC, the CRD.
func undeploy(t *testing.T) {
	t.Helper()
	out, err := cluster.Make("undeploy")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("make undeploy:\n%s", out)
	eventually(t, gcTimeout, "nothing of the deploy left", func(ctx context.Context) (bool, error) {
		var left []string
		if _, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, deployNamespace, metav1.GetOptions{}); err == nil {
			left = append(left, "namespace "+deployNamespace)
		} else if !apierrors.IsNotFound(err) {
			return false, err
		}
		if _, err := cluster.Kube.RbacV1().ClusterRoles().Get(ctx, deployName, metav1.GetOptions{}); err == nil {
			left = append(left, "clusterrole "+deployName)
		}
		if _, err := cluster.Kube.RbacV1().ClusterRoleBindings().Get(ctx, deployName, metav1.GetOptions{}); err == nil {
			left = append(left, "clusterrolebinding "+deployName)
		}
		crds, err := cluster.Kubectl("", "get", "crd", "-o", "name")
		if err != nil {
			return false, err
		}
		if strings.Contains(crds, samplecontroller.FooCRDName) {
			left = append(left, "crd "+samplecontroller.FooCRDName)
		}
		if len(left) > 0 {
			return false, fmt.Errorf("left: %s", strings.Join(left, ", "))
		}
		return true, nil
	})
}

// removeRealNodeDeploy, when a test on the real node ends, deletes what the
// overlays deployed, whatever failed, after logging what the controller's
// pods said and the Lease if the test failed. The next test finds the
// standard CRD, and the suite's scraper its metrics-reader ClusterRole,
// which the delete takes with the rest of artifacts/deploy.
func removeRealNodeDeploy(t *testing.T, overlays ...string) {
	t.Helper()
	logDeployIfFailed(t)
	deleteFooCRDConverted(t)
	for _, overlay := range overlays {
		if _, err := cluster.Kubectl("", "delete", "--ignore-not-found=true", "--timeout=2m", "-k", overlay); err != nil {
			t.Error(err)
		}
	}
	restoreSuiteCRDAndScraperRole(t)
}

// logDeployIfFailed logs, if the test failed, the controller's pods, its
// Lease, and the last lines each pod logged.
func logDeployIfFailed(t *testing.T) {
	t.Helper()
	if !t.Failed() {
		return
	}
	for _, args := range [][]string{
		{"get", "pods,lease", "-o", "wide"},
		{"logs", "--prefix", "--tail=60", "-l", "app.kubernetes.io/name=" + deployName},
	} {
		out, err := cluster.Kubectl("", append(args, "-n", deployNamespace)...)
		t.Logf("kubectl %s:\n%s%v", strings.Join(args, " "), out, err)
	}
}

// deleteFooCRDConverted deletes the Foo CRD first, as make undeploy does,
// while the webhook still converts the Foos for the API server's deletion
// of them. If it does not (the test failed on it), the Foos are deleted
// unconverted.
func deleteFooCRDConverted(t *testing.T) {
	t.Helper()
	deleteCRD := []string{"delete", "--ignore-not-found=true", "--timeout=2m", "crd", samplecontroller.FooCRDName}
	if _, err := cluster.Kubectl("", deleteCRD...); err != nil {
		t.Logf("the CRD's deletion, its webhook to convert the Foos: %v", err)
		_, _ = cluster.Kubectl("", "patch", "crd", samplecontroller.FooCRDName, "--type=json",
			"-p", `[{"op":"replace","path":"/spec/conversion","value":{"strategy":"None"}}]`)
		if _, err := cluster.Kubectl("", deleteCRD...); err != nil {
			t.Errorf("the CRD's deletion, with no conversion: %v", err)
		}
	}
}

// restoreSuiteCRDAndScraperRole puts back what the suite's other tests
// expect after a real-node test deleted them with its deploy: the standard
// CRD, and the metrics-reader ClusterRole of the suite's scraper.
func restoreSuiteCRDAndScraperRole(t *testing.T) {
	t.Helper()
	ensureStandardCRD(t)
	if _, err := cluster.Kubectl("", "apply", "-f", framework.MetricsReaderClusterRoleFile); err != nil {
		t.Error(err)
	}
}

// The image, deployed by kubectl apply -k of an overlay over the shipped
// manifests onto a real node, runs the controller as two real pods under
// the restricted pod security level with a read-only root: both Ready
// through /readyz, a Foo gets its Deployment and its status follows, the
// API server serves foos.v1alpha1 through the real webhook Service,
// deleting the leader's pod hands the Lease over, and make undeploy leaves
// nothing behind.
func TestImageRunsOnARealNodeFromTheShippedManifests(t *testing.T) {
	requireRealNode(t)
	ctx := context.Background()
	node, image := startRealNode(t)
	overlay := writeRealNodeOverlay(t, node, "real-node-overlay", cluster.Root, image.Ref)
	t.Cleanup(func() { removeRealNodeDeploy(t, overlay) })

	// As on a cluster that never had it: kubectl apply cannot take over a
	// CRD another client created without its last-applied annotation (the
	// suite's standard CRD, put back by the test before), where it would
	// keep that CRD's webhook URL beside the manifests' Service.
	deleteCRD(t)
	began := time.Now()
	out := kubectl(t, "apply", "-k", overlay)
	if strings.Contains(out, "PodSecurity") {
		t.Errorf("kubectl apply -k warned about Pod Security:\n%s", out)
	}
	pods := waitDeployReady(t, image.Ref)
	t.Logf("2/2 Ready %v after the apply", time.Since(began).Round(100*time.Millisecond))

	ns, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, deployNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("namespace %s enforces %q, want restricted", deployNamespace, got)
	}
	for _, p := range pods {
		if p.Spec.NodeName != node.Name {
			t.Errorf("pod %s runs on %s, want the real node %s", p.Name, p.Spec.NodeName, node.Name)
		}
		sc := p.Spec.Containers[0].SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("pod %s's container has no read-only root: %+v", p.Name, sc)
		}
		if !strings.HasPrefix(p.Status.PodIP, strings.TrimSuffix(node.IP, "1")) {
			t.Errorf("pod %s has IP %q, not one of the real node's bridge (%s)", p.Name, p.Status.PodIP, node.IP)
		}
	}

	fooNS := newNamespace(t, "real-node")
	t.Run("a Foo gets its Deployment and its status follows", func(t *testing.T) {
		createFoo(t, newFoo(fooNS, "real", "real-dep", int32p(2)))
		foo := waitFooReady(t, fooNS, "real")
		if foo.Status.AvailableReplicas != 2 {
			t.Errorf("Foo %s/real reports %d available replicas, want 2", fooNS, foo.Status.AvailableReplicas)
		}
		dep, err := cluster.Kube.AppsV1().Deployments(fooNS).Get(ctx, "real-dep", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !metav1.IsControlledBy(dep, foo) {
			t.Errorf("Deployment %s/real-dep is not controlled by Foo real: %v", fooNS, dep.OwnerReferences)
		}
		updateFoo(t, fooNS, "real", func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(3) })
		waitFoo(t, fooNS, "real", "3 available replicas", func(f *samplev1beta1.Foo) bool {
			return f.Status.AvailableReplicas == 3 && isReady(f)
		})
	})

	t.Run("the API server serves foos.v1alpha1 through the webhook Service", func(t *testing.T) {
		createFoo(t, newFoo(fooNS, "converted", "converted-dep", int32p(1)))
		out := kubectl(t, "get", "foos.v1alpha1."+samplecontroller.GroupName, "-n", fooNS, "converted",
			"-o", "jsonpath={.apiVersion} {.spec.deploymentName}")
		// kubectl prints the version's deprecation warning first.
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if want := samplecontroller.GroupName + "/v1alpha1 converted-dep"; lines[len(lines)-1] != want {
			t.Errorf("kubectl get foos.v1alpha1: %q, want %q", out, want)
		}
	})

	t.Run("the leader's pod deleted hands over", func(t *testing.T) {
		var leader string
		eventually(t, time.Minute, "a leader among the pods", func(ctx context.Context) (bool, error) {
			holder, err := leaseHolder(ctx)
			leader = holderPod(holder, pods)
			return leader != "", err
		})
		before := deploymentsOf(t, fooNS)
		deleted := time.Now()
		if err := cluster.Kube.CoreV1().Pods(deployNamespace).Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// The Lease goes to the other pod, or to the one the ReplicaSet
		// starts in the deleted one's place, if that is first to try.
		var next string
		eventually(t, 2*time.Minute, "the Lease held by another pod", func(ctx context.Context) (bool, error) {
			holder, err := leaseHolder(ctx)
			if err != nil {
				return false, err
			}
			current, err := cluster.Kube.CoreV1().Pods(deployNamespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			if next = holderPod(holder, current.Items); next == "" || next == leader {
				return false, fmt.Errorf("held by %q", holder)
			}
			return true, nil
		})
		t.Logf("Lease moved from %s to %s %v after the delete", leader, next, time.Since(deleted).Round(100*time.Millisecond))
		pods = waitDeployReady(t, image.Ref)
		// The new leader syncs every Foo again and writes nothing: each
		// Deployment is the same object at the same generation.
		for _, name := range []string{"real", "converted"} {
			waitFooReady(t, fooNS, name)
		}
		createFoo(t, newFoo(fooNS, "after", "after-dep", int32p(1)))
		waitFooReady(t, fooNS, "after")
		after := deploymentsOf(t, fooNS)
		delete(after, "after-dep")
		expectSameDeployments(t, before, after)
	})

	t.Run("make undeploy leaves nothing behind", func(t *testing.T) {
		undeploy(t)
	})
}
