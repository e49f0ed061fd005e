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
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/test/framework"
)

// hostSnapshot is what the real node may change on the host, as a user
// would look at it: links, nft tables, network namespaces, mounts, the
// sysctls its components set.
func hostSnapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, cmd := range [][]string{{"ip", "-br", "link"}, {"nft", "list", "tables"}, {"ip", "netns"}} {
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v: %s", cmd, err, out)
		}
		b.WriteString(strings.Join(cmd, " ") + ":\n" + string(out))
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString("mounts:\n" + string(mounts))
	for _, s := range []string{"net/ipv4/ip_forward", "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
		"kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"} {
		v, _ := os.ReadFile(filepath.Join("/proc/sys", s))
		b.WriteString(s + " = " + string(v))
	}
	return b.String()
}

// The real node runs a pod from an imported image, never pulled, with an
// address on the node's bridge; once stopped, the host is as it was.
func TestRealNodeRunsAPodAndPutsTheHostBack(t *testing.T) {
	requireRealNode(t)
	// What a killed run left is put back first (StartRealNode would), so
	// that the host is compared with itself as it was before any node.
	dir := filepath.Join(outDir, "real-node")
	if err := framework.CleanRealNodeLeftovers(dir); err != nil {
		t.Fatal(err)
	}
	before := hostSnapshot(t)
	_, pause, err := framework.BuildImages(cluster.Root, "sample-controller")
	if err != nil {
		t.Fatal(err)
	}
	node, err := cluster.StartRealNode(dir, realNodeMinor(t), pause.Ref, pause.Tarball)
	if node != nil {
		t.Cleanup(func() {
			if err := node.Stop(); err != nil {
				t.Errorf("stopping the real node: %v", err)
			}
			if after := hostSnapshot(t); after != before {
				t.Errorf("the host is not as it was:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t, "real-node-pod")
	_, err = cluster.Kube.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node.Name},
			Tolerations:  []corev1.Toleration{{Key: framework.RealNodeTaint, Operator: corev1.TolerationOpExists}},
			Containers:   []corev1.Container{{Name: "pause", Image: pause.Ref, ImagePullPolicy: corev1.PullNever}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	eventually(t, realNodeSetupTimeout, "the pod running on the real node", func(ctx context.Context) (bool, error) {
		pod, err = cluster.Kube.CoreV1().Pods(ns).Get(ctx, "pause", metav1.GetOptions{})
		return err == nil && pod.Status.Phase == corev1.PodRunning, err
	})
	if !strings.HasPrefix(pod.Status.PodIP, strings.TrimSuffix(node.IP, "1")) || pod.Status.PodIP == node.IP {
		t.Errorf("pod IP %q, want one of the node's bridge (%s/24)", pod.Status.PodIP, node.IP)
	}
}
