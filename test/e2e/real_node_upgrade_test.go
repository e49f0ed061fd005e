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

// The upgrade of TestUpgradeFromV1alpha1ThenMigrateAndRetireIt as a user
// rolls it: the release deployed by its own shipped manifests, then this
// tree's applied over it, and the Deployment's rolling update replaces the
// release's pods with this image's, through the real webhook Service.

import (
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/test/framework"
)

// The release that served v1alpha1 alone, deployed by its manifests from
// its image, is rolled to this tree's manifests and image by kubectl apply
// -k while users change Foos in both versions: the rollout ends with every
// Foo Ready at the user's last change, every Deployment the same object,
// and neither new pod writing anything at rest; make undeploy then
// deletes it all, the Foos still stored in v1alpha1 included.
func TestReleaseRollsToThisImageOnARealNode(t *testing.T) {
	requireRealNode(t)

	releaseDir, releaseImage := buildReleaseImage(t, "v1alpha1-release-image")
	node, image := startRealNode(t, releaseImage)
	releaseOverlay := writeRealNodeOverlay(t, node, "real-node-release-overlay", releaseDir, releaseImage.Ref)
	overlay := writeRealNodeOverlay(t, node, "real-node-upgrade-overlay", cluster.Root, image.Ref)
	t.Cleanup(func() { removeRealNodeDeploy(t, releaseOverlay, overlay) })

	// The release's CRD serves v1alpha1 alone: as in the upgrade on local
	// processes, the cluster starts without the Foo API.
	deleteCRD(t)
	kubectl(t, "apply", "-k", releaseOverlay)
	waitDeployReady(t, releaseImage.Ref)
	ns := newNamespace(t, "real-node-upgrade")
	createFoosUnderRelease(t, ns)
	deploymentsBefore := deploymentsOf(t, ns)

	changes := startUserChanges(t, ns)
	applied := time.Now()
	kubectl(t, "apply", "-k", overlay)
	pods := waitDeployReady(t, image.Ref)
	rolled := time.Now()
	t.Logf("rolled out to %s %v after the apply", image.Ref, rolled.Sub(applied).Round(100*time.Millisecond))
	changes.expectAccepted(t, "after the rollout", rolled)
	last := changes.stop(t)

	expectFoosAsLastChanged(t, ns, "after the rollout", last)
	expectNotRecreated(t, deploymentsBefore, deploymentsOf(t, ns))
	for i := range pods {
		url, err := cluster.PodMetricsURL(t.Context(), &pods[i], metricsPort(t, &pods[i]))
		if err != nil {
			t.Fatal(err)
		}
		expectZeroWritesAtRestOf(t, url)
	}

	// make undeploy deletes the Foos still stored in v1alpha1 through the
	// webhook, before the webhook goes.
	expectStoredFoo(t, ns, "foo-3", "v1alpha1")
	undeploy(t)
}

// buildReleaseImage writes the tree of the release that served v1alpha1
// alone into outDir/dir and builds its image from it, as that release's
// hack/build-image.sh does.
func buildReleaseImage(t *testing.T, dir string) (string, framework.Image) {
	t.Helper()
	releaseDir := filepath.Join(outDir, dir)
	if err := framework.CheckoutRelease(cluster.Root, v1alpha1Release, releaseDir); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	releaseImage, err := framework.BuildReleaseImage(cluster.Root, releaseDir,
		"localhost/"+samplecontroller.ControllerName+":v1alpha1-release", filepath.Join(outDir, "v1alpha1-release.tar"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the release's image built in %v", time.Since(began).Round(100*time.Millisecond))
	return releaseDir, releaseImage
}

// metricsPort is the port of the controller's container named metrics.
func metricsPort(t *testing.T, pod *corev1.Pod) int {
	t.Helper()
	for _, p := range pod.Spec.Containers[0].Ports {
		if p.Name == "metrics" {
			return int(p.ContainerPort)
		}
	}
	t.Fatalf("pod %s has no port named metrics", pod.Name)
	return 0
}
