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

// The image pulled, not imported: a real OCI registry over TLS
// (test/framework/registry.go), the controller's image pushed to it, and the
// real node's kubelet pulling it by digest through containerd, which trusts
// the registry's CA and nothing else for it.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/test/framework"
)

// A pod on the real node naming the controller's image by digest in a
// registry gets exactly that image, pulled from the registry over TLS: the
// node does not have it before (only the pause image is imported), a pull
// while the node trusts another CA for the registry fails on the
// certificate, and once it trusts the registry's own, the kubelet reports
// "Successfully pulled" (not "already present"), the container's image ID
// is the pushed digest, the registry served that manifest, and the
// controller's binary in it runs.
func TestKubeletPullsTheImageFromTheRegistryByDigest(t *testing.T) {
	requireRealNode(t)
	ctx := context.Background()

	began := time.Now()
	controller, pause, err := framework.BuildImages(cluster.Root, samplecontroller.ControllerName)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("images built in %v", time.Since(began).Round(100*time.Millisecond))
	node := startRealNodeImporting(t, pause)

	began = time.Now()
	reg, err := framework.StartRegistry(filepath.Join(outDir, "registry"), node.IP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("registry log:\n%s", framework.Trim(reg.Log(), 4000))
		}
		reg.Stop()
	})
	t.Logf("registry at https://%s in %v", reg.Host, time.Since(began).Round(100*time.Millisecond))

	began = time.Now()
	image, err := reg.PushImage(controller.Tarball, samplecontroller.ControllerName, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	_, digest, _ := strings.Cut(image, "@")
	t.Logf("pushed %s in %v", image, time.Since(began).Round(100*time.Millisecond))
	pushed := len(reg.Log())

	// Nothing of the image on the node yet: neither a name for it nor its
	// manifest in containerd's content store. Otherwise "pulled" could be
	// containerd finding what it had.
	refs, err := node.ImageRefs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		if strings.Contains(ref, samplecontroller.ControllerName) || strings.Contains(ref, digest) {
			t.Fatalf("the node has %s before any pull: %v", ref, refs)
		}
	}
	if has, err := node.HasContent(digest); err != nil || has {
		t.Fatalf("the node's content store holds %s before any pull (%v)", digest, err)
	}

	ns := newNamespace(t, "registry-pull")
	nsObj, err := cluster.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nsObj.Labels == nil {
		nsObj.Labels = map[string]string{}
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if _, err := cluster.Kube.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// First the node trusts another CA for the registry: https, verified,
	// and refused. (With no hosts.toml at all, containerd 1.6 would try a
	// loopback registry over plain HTTP, which this one, TLS only, refuses
	// too: the hosts.toml is what makes the pull HTTPS.)
	otherCA := filepath.Join(t.TempDir(), "other-ca.crt")
	writeOtherCA(t, otherCA)
	if err := node.TrustRegistry(reg.Host, otherCA); err != nil {
		t.Fatal(err)
	}
	pod, err := cluster.Kube.CoreV1().Pods(ns).Create(ctx, registryPod(node, image), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			events, _ := cluster.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
			if events != nil {
				t.Logf("events in %s: %s", ns, describeEvents(events.Items))
			}
		}
	})

	// The registry's own CA is not trusted yet: the pull fails on its
	// certificate. The kubelet's Failed event says why (the pod's status says so only
	// until its next sync says ImagePullBackOff).
	failed := fields.Set{"involvedObject.uid": string(pod.UID), "reason": "Failed"}.AsSelector().String()
	eventually(t, realNodeSetupTimeout, "the pull refused on the registry's certificate",
		func(ctx context.Context) (bool, error) {
			p, err := cluster.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range p.Status.ContainerStatuses {
				if c.State.Running != nil || c.State.Terminated != nil {
					return false, fmt.Errorf("the container ran before the node trusted the registry: %s", podState(p))
				}
			}
			events, err := cluster.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: failed})
			if err != nil {
				return false, err
			}
			for _, e := range events.Items {
				if strings.Contains(e.Message, "Failed to pull image") {
					if !strings.Contains(e.Message, "x509: certificate signed by unknown authority") {
						return false, fmt.Errorf("the pull failed, not on the certificate: %s", e.Message)
					}
					return true, nil
				}
			}
			return false, nil
		})
	if !strings.Contains(reg.Log()[pushed:], "tls: bad certificate") {
		t.Errorf("the registry logged no handshake the node refused:\n%s", reg.Log()[pushed:])
	}
	if has, err := node.HasContent(digest); err != nil || has {
		t.Fatalf("the node's content store holds %s after a refused pull (%v)", digest, err)
	}

	trusted := time.Now()
	if err := node.TrustRegistry(reg.Host, reg.CAFile); err != nil {
		t.Fatal(err)
	}
	var p *corev1.Pod
	_, err = framework.PollProgress(ctx, 250*time.Millisecond, realNodeSetupTimeout,
		func(ctx context.Context) (bool, string, error) {
			p, err = cluster.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			if p.Status.Phase == corev1.PodFailed {
				return false, "", fmt.Errorf("the pod failed: %s", podState(p))
			}
			return p.Status.Phase == corev1.PodSucceeded, podState(p), nil
		})
	if err != nil {
		t.Fatalf("waiting for the pod to pull its image and run: %v", err)
	}
	t.Logf("pulled and ran %v after the node trusted the registry", time.Since(trusted).Round(100*time.Millisecond))

	status := p.Status.ContainerStatuses[0]
	if status.ImageID != image {
		t.Errorf("the container's image ID is %q, want the pushed %q", status.ImageID, image)
	}
	if term := status.State.Terminated; term == nil || term.ExitCode != 0 {
		t.Errorf("the container did not exit 0: %s", podState(p))
	}
	logs, err := cluster.Kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "Usage of /"+samplecontroller.ControllerName) {
		t.Errorf("the container's output is not the controller's usage:\n%s", framework.Trim(string(logs), 2000))
	}

	// The kubelet's word for it: pulled, not found present.
	selector := fields.Set{"involvedObject.uid": string(p.UID), "reason": "Pulled"}.AsSelector().String()
	want := fmt.Sprintf("Successfully pulled image %q", image)
	eventually(t, time.Minute, "the kubelet's Pulled event", func(ctx context.Context) (bool, error) {
		events, err := cluster.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if !strings.HasPrefix(e.Message, want) {
				return false, fmt.Errorf("Pulled event %q, want one starting %s", e.Message, want)
			}
		}
		return len(events.Items) > 0, nil
	})

	// The registry's word for it: it served the manifest of that digest,
	// after the push.
	if served := reg.Log()[pushed:]; !strings.Contains(served, "GET /v2/"+samplecontroller.ControllerName+
		"/manifests/"+digest) {
		t.Errorf("the registry did not serve the manifest %s after the push:\n%s", digest, served)
	}
	// And containerd's: it has the image now, by that digest.
	refs, err = node.ImageRefs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(refs, image) {
		t.Errorf("the node's images after the pull are %v, want %s among them", refs, image)
	}

	if err := cluster.Kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the pod deleted", func(ctx context.Context) (bool, error) {
		_, err := cluster.Kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// startRealNodeImporting is startRealNode importing only the images given
// (pause is the pod sandbox's, imported whether listed or not), so that
// whatever else a pod runs is pulled. The node is stopped, and the host put
// back, when the test ends.
func startRealNodeImporting(t *testing.T, pause framework.Image, images ...framework.Image) *framework.RealNode {
	t.Helper()
	tarballs := []string{pause.Tarball}
	for _, img := range images {
		if img.Tarball != pause.Tarball {
			tarballs = append(tarballs, img.Tarball)
		}
	}
	dir := filepath.Join(outDir, "real-node")
	began := time.Now()
	node, err := cluster.StartRealNode(dir, realNodeMinor(t), pause.Ref, tarballs...)
	if node != nil {
		t.Cleanup(func() {
			if err := node.Stop(); err != nil {
				t.Errorf("stopping the real node: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatalf("starting the real node: %v (logs in %s)", err, dir)
	}
	t.Logf("real node %s Ready in %v", node.Name, time.Since(began).Round(100*time.Millisecond))
	return node
}

// writeOtherCA writes the PEM certificate of a CA of its own to path: one
// that signed nothing a registry serves.
func writeOtherCA(t *testing.T, path string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "not the registry's CA"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, ca, ca, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

// registryPod runs the controller's binary of image on the real node, with
// -help (it prints its usage and exits 0: it needs no cluster to), under the
// restricted pod security level. IfNotPresent, as a digest is immutable:
// the kubelet pulls only what the node does not have.
func registryPod(node *framework.RealNode, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pulled-by-digest"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  map[string]string{"kubernetes.io/hostname": node.Name},
			Tolerations: []corev1.Toleration{{Key: framework.RealNodeTaint, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoSchedule}},
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "controller",
				Image:           image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            []string{"-help"},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}
