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

// The chart as platform teams install it: from an OCI registry (a real one,
// over TLS, test/framework/registry.go), with the image the real node's
// kubelet pulls from the same registry by digest. The release that served
// v1alpha1 alone, as a chart made from its own manifests by this tree's
// hack/helm-chart, is upgraded to this tree's chart while users change Foos
// in both versions; then uninstalled and installed again.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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

// helmRelease is the name the test installs the chart under, the name
// docs/deploying.md uses.
const helmRelease = samplecontroller.ControllerName

// chartRegistry is a registry holding the charts and images of one test,
// and the helm flags that reach it.
type chartRegistry struct {
	*framework.Registry
}

// pushChart packages the chart in dir as version and pushes it, returning
// the oci:// reference helm installs it from.
func (r chartRegistry) pushChart(t *testing.T, dir, version string) string {
	t.Helper()
	packages := filepath.Join(outDir, "helm", "packages")
	helm(t, "package", dir, "--version", version, "--destination", packages)
	pkg := filepath.Join(packages, samplecontroller.ControllerName+"-"+version+".tgz")
	helm(t, "push", pkg, "oci://"+r.Host+"/charts", "--ca-file", r.CAFile)
	return "oci://" + r.Host + "/charts/" + samplecontroller.ControllerName
}

// valuesFor writes the values a user of the real node sets: the image by
// digest from the registry, the node chosen and tolerated.
func valuesFor(t *testing.T, node *framework.RealNode, name, digestRef string) string {
	t.Helper()
	repository, digest, ok := strings.Cut(digestRef, "@")
	if !ok {
		t.Fatalf("%q is not a reference by digest", digestRef)
	}
	values := fmt.Sprintf(`image:
  repository: %s
  digest: %s
nodeSelector:
  kubernetes.io/hostname: %s
tolerations:
  - key: %s
    operator: Exists
    effect: NoSchedule
`, repository, digest, node.Name, framework.RealNodeTaint)
	path := filepath.Join(outDir, "helm", name+"-values.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// expectPulled fails unless each pod's container runs the image of
// digestRef, pulled by the kubelet (the node had only the pause image
// imported).
func expectPulled(t *testing.T, pods []corev1.Pod, digestRef string) {
	t.Helper()
	_, digest, _ := strings.Cut(digestRef, "@")
	for _, p := range pods {
		if got := p.Status.ContainerStatuses[0].ImageID; !strings.HasSuffix(got, "@"+digest) {
			t.Errorf("pod %s runs image %q, want the pushed %s", p.Name, got, digest)
		}
	}
}

// The chart from the registry on a real node: the release's chart installs
// its image; helm upgrade to this tree's chart, while users change Foos in
// both versions, rolls to this image with every Foo Ready at the user's last
// change, the same Deployments and no write at rest; both versions are
// served and a new Foo reconciled; the optional objects go and come back
// whole with their values; deleting the leader's pod hands over; helm
// uninstall leaves the CRD, the Foos and their Deployments; and helm install
// takes them up again.
func TestHelmChartFromARegistryInstallsUpgradesAndUninstallsOnARealNode(t *testing.T) {
	requireRealNode(t)
	ctx := context.Background()

	releaseDir, releaseImage := buildReleaseImage(t, "v1alpha1-release-helm")
	began := time.Now()
	image, pause, err := framework.BuildImages(cluster.Root, samplecontroller.ControllerName)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("images built in %v", time.Since(began).Round(100*time.Millisecond))
	node := startRealNodeImporting(t, pause)
	reg, err := framework.StartRegistry(filepath.Join(outDir, "helm-registry"), node.IP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	if err := node.TrustRegistry(reg.Host, reg.CAFile); err != nil {
		t.Fatal(err)
	}
	registry := chartRegistry{reg}

	// The release's chart: this tree's chart files, its templates made by
	// this tree's hack/helm-chart from the release's manifests.
	releaseChart := filepath.Join(outDir, "helm", "v1alpha1-release-chart")
	if err := os.RemoveAll(releaseChart); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(releaseChart, os.DirFS(filepath.Join(cluster.Root, chartDir))); err != nil {
		t.Fatal(err)
	}
	generate := exec.Command("go", "run", "./hack/helm-chart",
		"-manifests", filepath.Join(releaseDir, deployKustomization),
		"-monitoring", filepath.Join(releaseDir, monitoringKustomization), "-chart", releaseChart)
	generate.Dir = cluster.Root
	if out, err := generate.CombinedOutput(); err != nil {
		t.Fatalf("hack/helm-chart on the release's manifests: %v: %s", err, out)
	}
	chart := registry.pushChart(t, releaseChart, "0.0.1")
	if again := registry.pushChart(t, filepath.Join(cluster.Root, chartDir), "0.1.0"); again != chart {
		t.Fatalf("the charts were pushed to %s and %s", chart, again)
	}
	releaseRef, err := reg.PushImage(releaseImage.Tarball, samplecontroller.ControllerName, "v1alpha1-release")
	if err != nil {
		t.Fatal(err)
	}
	imageRef, err := reg.PushImage(image.Tarball, samplecontroller.ControllerName, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeHelmRelease(t) })

	// The release's CRD serves v1alpha1 alone: the cluster starts without
	// the Foo API, as in the upgrade with kustomize. The namespace, with its
	// Pod Security labels, as docs/deploying.md creates it.
	// The suite's scraper has the chart's metrics-reader ClusterRole,
	// applied with kubectl: helm takes up no object another installed.
	deleteCRD(t)
	kubectl(t, "delete", "--ignore-not-found=true", "-f", framework.MetricsReaderClusterRoleFile)
	kubectl(t, "apply", "-f", filepath.Join(deployKustomization, "namespace.yaml"))
	helm(t, "install", helmRelease, chart, "--version", "0.0.1", "--namespace", deployNamespace,
		"--ca-file", reg.CAFile, "--values", valuesFor(t, node, "release", releaseRef))
	pods := waitDeployReady(t, releaseRef)
	expectPulled(t, pods, releaseRef)
	ns := newNamespace(t, "helm-upgrade")
	createFoosUnderRelease(t, ns)
	deploymentsBefore := deploymentsOf(t, ns)

	t.Run("helm upgrade to this chart while users change Foos", func(t *testing.T) {
		changes := startUserChanges(t, ns)
		upgraded := time.Now()
		helm(t, "upgrade", helmRelease, chart, "--version", "0.1.0", "--namespace", deployNamespace,
			"--ca-file", reg.CAFile, "--values", valuesFor(t, node, "this", imageRef))
		pods = waitDeployReady(t, imageRef)
		rolled := time.Now()
		t.Logf("rolled out to %s %v after helm upgrade", imageRef, rolled.Sub(upgraded).Round(100*time.Millisecond))
		expectPulled(t, pods, imageRef)
		changes.expectAccepted(t, "after the rollout", rolled)
		last := changes.stop(t)
		expectFoosAsLastChanged(t, ns, "after the rollout", last)
		expectNotRecreated(t, deploymentsBefore, deploymentsOf(t, ns))
		for i := range pods {
			url, err := cluster.PodMetricsURL(ctx, &pods[i], metricsPort(t, &pods[i]))
			if err != nil {
				t.Fatal(err)
			}
			expectZeroWritesAtRestOf(t, url)
		}
	})

	t.Run("both versions served and a new Foo reconciled", func(t *testing.T) {
		createFoo(t, newFoo(ns, "after-upgrade", "after-upgrade", int32p(1)))
		waitFooReady(t, ns, "after-upgrade")
		out := kubectl(t, "get", "foos.v1alpha1."+samplecontroller.GroupName, "-n", ns, "after-upgrade",
			"-o", "jsonpath={.apiVersion} {.spec.deploymentName}")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if want := samplecontroller.GroupName + "/v1alpha1 after-upgrade"; lines[len(lines)-1] != want {
			t.Errorf("kubectl get foos.v1alpha1: %q, want %q", out, want)
		}
	})

	t.Run("optional objects go and come back whole", func(t *testing.T) {
		off := []string{"--set", "admissionPolicies.enabled=false", "--set", "admissionPolicies.acknowledgeUnconfined=true",
			"--set", "networkPolicy.enabled=false", "--set", "flowSchema.enabled=false"}
		upgrade := func(set ...string) {
			helm(t, append([]string{"upgrade", helmRelease, chart, "--version", "0.1.0", "--namespace", deployNamespace,
				"--ca-file", reg.CAFile, "--values", valuesFor(t, node, "this", imageRef)}, set...)...)
		}
		upgrade(off...)
		expectOptionalObjects(t, false)
		upgrade()
		expectOptionalObjects(t, true)
		waitDeployReady(t, imageRef)
	})

	t.Run("the leader's pod deleted hands over", func(t *testing.T) {
		var leader string
		eventually(t, time.Minute, "a leader among the pods", func(ctx context.Context) (bool, error) {
			holder, err := leaseHolder(ctx)
			leader = holderPod(holder, pods)
			return leader != "", err
		})
		before := deploymentsOf(t, ns)
		if err := cluster.Kube.CoreV1().Pods(deployNamespace).Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 2*time.Minute, "the Lease held by another pod", func(ctx context.Context) (bool, error) {
			holder, err := leaseHolder(ctx)
			if err != nil {
				return false, err
			}
			if next := strings.SplitN(holder, "_", 2)[0]; next == "" || next == leader {
				return false, fmt.Errorf("held by %q", holder)
			}
			return true, nil
		})
		createFoo(t, newFoo(ns, "after-handover", "after-handover", int32p(1)))
		waitFooReady(t, ns, "after-handover")
		after := deploymentsOf(t, ns)
		delete(after, "after-handover")
		expectSameDeployments(t, before, after)
		pods = waitDeployReady(t, imageRef)
	})

	t.Run("helm uninstall leaves the Foos and their Deployments", func(t *testing.T) {
		before := deploymentsOf(t, ns)
		helm(t, "uninstall", helmRelease, "--namespace", deployNamespace)
		eventually(t, gcTimeout, "the controller's Deployment gone", func(ctx context.Context) (bool, error) {
			_, err := cluster.Kube.AppsV1().Deployments(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		if _, err := crds(t).Get(ctx, samplecontroller.FooCRDName, metav1.GetOptions{}); err != nil {
			t.Fatalf("the CRD after helm uninstall: %v", err)
		}
		// Those stored in v1beta1 read as they are; those the release
		// stored in v1alpha1 wait for the conversion webhook's return.
		foo, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Get(ctx, "after-handover", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !isReady(foo) {
			t.Errorf("Foo %s/after-handover is not Ready after helm uninstall: %+v", ns, foo.Status.Conditions)
		}
		expectStoredFoo(t, ns, "foo-3", "v1alpha1")
		expectSameDeployments(t, before, deploymentsOf(t, ns))
	})

	t.Run("helm install takes them up again", func(t *testing.T) {
		before := deploymentsOf(t, ns)
		helm(t, "install", helmRelease, chart, "--version", "0.1.0", "--namespace", deployNamespace,
			"--ca-file", reg.CAFile, "--values", valuesFor(t, node, "this", imageRef))
		pods = waitDeployReady(t, imageRef)
		for _, name := range []string{"foo-0", "foo-1", "foo-2", "foo-3", "after-upgrade", "after-handover"} {
			waitFooReady(t, ns, name)
		}
		expectSameDeployments(t, before, deploymentsOf(t, ns))
	})
}

// expectOptionalObjects checks that the admission policies and their
// bindings, the NetworkPolicy and the FlowSchema are all installed, or none
// of them.
func expectOptionalObjects(t *testing.T, installed bool) {
	t.Helper()
	ctx := context.Background()
	admission := cluster.Kube.AdmissionregistrationV1()
	gets := map[string]func() error{
		"NetworkPolicy": func() error {
			_, err := cluster.Kube.NetworkingV1().NetworkPolicies(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
			return err
		},
		"FlowSchema": func() error {
			_, err := cluster.Kube.FlowcontrolV1().FlowSchemas().Get(ctx, deployLeaseFlowSchema, metav1.GetOptions{})
			return err
		},
	}
	for _, name := range []string{samplecontroller.CRDWritePolicyName, samplecontroller.OwnNamespacePolicyName,
		samplecontroller.OwnNamesPolicyName, samplecontroller.OwnEventsPolicyName, samplecontroller.OwnLeasesPolicyName} {
		gets["ValidatingAdmissionPolicy "+name] = func() error {
			_, err := admission.ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
			return err
		}
		gets["ValidatingAdmissionPolicyBinding "+name] = func() error {
			_, err := admission.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
			return err
		}
	}
	for _, what := range sortedKeys(gets) {
		err := gets[what]()
		switch {
		case installed && err != nil:
			t.Errorf("%s: %v", what, err)
		case !installed && err == nil:
			t.Errorf("%s still installed with its value off", what)
		case !installed && !apierrors.IsNotFound(err):
			t.Errorf("%s: %v", what, err)
		}
	}
}

// removeHelmRelease, when the test ends, removes the release whatever
// failed: the CRD first, as docs/deploying.md says, then the release and its
// namespace.
func removeHelmRelease(t *testing.T) {
	t.Helper()
	logDeployIfFailed(t)
	deleteFooCRDConverted(t)
	if out, err := runHelm("uninstall", helmRelease, "--namespace", deployNamespace, "--ignore-not-found"); err != nil {
		t.Errorf("%v: %s", err, out)
	}
	if _, err := cluster.Kubectl("", "delete", "--ignore-not-found=true", "--timeout=2m", "namespace",
		deployNamespace); err != nil {
		t.Error(err)
	}
	restoreSuiteCRDAndScraperRole(t)
}
