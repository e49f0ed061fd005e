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

package framework

// The local control plane: kwokctl's binary runtime runs etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok from
// _output/bin (hack/build-tools.sh), configured by hack/kwokctl.yaml, with
// one fake node (hack/kwok-node.yaml). Each cluster has its own kwokctl
// work dir (KWOK_WORKDIR), the directory given to StartCluster, so several
// run side by side; kwokctl keeps the cluster in <dir>/clusters/<name>.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// clusterName is the kwokctl cluster's name in its work dir.
const clusterName = samplecontroller.ControllerName

// DefaultTimeout is how long, by default, a wait on the control plane may
// see no progress (WithTimeout).
const DefaultTimeout = 2 * time.Minute

// ClusterOption changes how StartCluster brings a control plane up.
type ClusterOption func(*clusterOptions)

type clusterOptions struct {
	nodePods    int
	timeout     time.Duration
	auditPolicy string
	minor       string
	binaries    map[string]string
}

// WithNodePods sets the fake node's pod capacity (default 110).
func WithNodePods(n int) ClusterOption {
	return func(o *clusterOptions) { o.nodePods = n }
}

// WithTimeout bounds each wait for progress: while the cluster comes up
// (startup.go), and for a component started again to serve (default
// DefaultTimeout).
func WithTimeout(d time.Duration) ClusterOption {
	return func(o *clusterOptions) { o.timeout = d }
}

// WithAuditPolicy makes the kube-apiserver audit requests with the policy
// in the file at path; the events go to AuditLogPath.
func WithAuditPolicy(path string) ClusterOption {
	return func(o *clusterOptions) { o.auditPolicy = path }
}

// WithKubernetesMinor runs the control plane of a Kubernetes minor release
// hack/tools pins, e.g. "1.35". Default: $K8S_MINOR, else the newest one
// (DefaultKubernetesMinor).
func WithKubernetesMinor(minor string) ClusterOption {
	return func(o *clusterOptions) { o.minor = minor }
}

// WithComponentBinary runs the component (KubeControllerManager, ...) from
// path instead of the binary hack/build-tools.sh built.
func WithComponentBinary(component, path string) ClusterOption {
	return func(o *clusterOptions) { o.binaries[component] = path }
}

// KubernetesMinors are the Kubernetes minor releases hack/tools pins a
// control plane for (one module hack/tools/k8s-<minor> each), newest first.
func KubernetesMinors(root string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "hack", "tools", "k8s-1.*", "go.mod"))
	if err != nil {
		return nil, err
	}
	var minors []string
	for _, d := range dirs {
		minors = append(minors, strings.TrimPrefix(filepath.Base(filepath.Dir(d)), "k8s-"))
	}
	slices.SortFunc(minors, func(a, b string) int { return minorNumber(b) - minorNumber(a) })
	if len(minors) == 0 {
		return nil, fmt.Errorf("no hack/tools/k8s-<minor>/go.mod under %s", root)
	}
	return minors, nil
}

// minorNumber is 37 for "1.37".
func minorNumber(minor string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(minor, "1."))
	return n
}

// DefaultKubernetesMinor is the minor StartCluster runs unless told
// otherwise: $K8S_MINOR if set, else the newest hack/tools pins.
func DefaultKubernetesMinor(root string) (string, error) {
	if m := os.Getenv("K8S_MINOR"); m != "" {
		return m, nil
	}
	minors, err := KubernetesMinors(root)
	if err != nil {
		return "", err
	}
	return minors[0], nil
}

// kwokctl drives one cluster with _output/bin/kwokctl.
type kwokctl struct {
	root    string
	workdir string // KWOK_WORKDIR
	timeout time.Duration
	// binaries are the components' binaries, by component name.
	binaries map[string]string
}

// command is kwokctl with args, for this cluster: its work dir and name.
// kwokctl logs its progress on stderr.
func (k *kwokctl) command(args ...string) *exec.Cmd {
	kwokctl := filepath.Join(k.root, "_output", "bin", "kwokctl")
	cmd := exec.Command(kwokctl, append([]string{"--name=" + clusterName}, args...)...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+k.workdir)
	cmd.Dir = k.root
	cmd.Stderr = os.Stderr
	return cmd
}

func (k *kwokctl) run(args ...string) error {
	cmd := k.command(args...)
	cmd.Stdout = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kwokctl %v: %w", args, err)
	}
	return nil
}

// clusterDir is where kwokctl keeps the cluster: its config (kwok.yaml),
// pki/, pids/, logs/, etcd/.
func (k *kwokctl) clusterDir() string {
	return filepath.Join(k.workdir, "clusters", clusterName)
}

// kubeconfig is the admin kubeconfig kwokctl writes when it creates the
// cluster. Given to create and delete, it also keeps kwokctl away from the
// user's ~/.kube/config.
func (k *kwokctl) kubeconfig() string {
	return filepath.Join(k.workdir, "kubeconfig")
}

// create creates the cluster and starts its components, on the ports of
// portsConfig. kwokctl starts them without waiting for any: startup.go
// brings them up.
func (k *kwokctl) create(o clusterOptions, portsConfig string) error {
	args := []string{"create", "cluster",
		"--config=" + filepath.Join(k.root, "hack", "kwokctl.yaml"),
		"--config=" + portsConfig,
		"--kubeconfig=" + k.kubeconfig(),
		"--timeout=" + k.timeout.String(),
		"--etcd-binary=" + k.binaries[Etcd],
		"--kube-apiserver-binary=" + k.binaries[KubeAPIServer],
		"--kube-controller-manager-binary=" + k.binaries[KubeControllerManager],
		"--kube-scheduler-binary=" + k.binaries[KubeScheduler],
		"--kwok-controller-binary=" + k.binaries[Kwok],
	}
	if o.auditPolicy != "" {
		args = append(args, "--kube-audit-policy="+o.auditPolicy)
	}
	return k.run(args...)
}

// builtBinaries are the components' binaries as hack/build-tools.sh builds
// them for the minor: etcd and kwok in _output/bin, the Kubernetes ones in
// _output/bin/k8s-<minor>.
func builtBinaries(root, minor string) map[string]string {
	bin := filepath.Join(root, "_output", "bin")
	k8s := filepath.Join(bin, "k8s-"+minor)
	return map[string]string{
		Etcd:                  filepath.Join(bin, "etcd"),
		Kwok:                  filepath.Join(bin, "kwok"),
		KubeAPIServer:         filepath.Join(k8s, "kube-apiserver"),
		KubeControllerManager: filepath.Join(k8s, "kube-controller-manager"),
		KubeScheduler:         filepath.Join(k8s, "kube-scheduler"),
	}
}

// delete stops every component and removes the cluster, after copying its
// logs to <work dir>/logs for a post-mortem. A cluster that does not exist
// is no error.
func (k *kwokctl) delete() error {
	pids := k.pids()
	if err := k.saveLogs(); err != nil {
		return err
	}
	if err := k.run("delete", "cluster", "--kubeconfig="+k.kubeconfig()); err != nil {
		return err
	}
	// kwokctl sends SIGKILL and returns; the ports are free once the
	// processes are gone.
	for _, pid := range pids {
		if err := waitGone(pid, k.timeout); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(filepath.Join(k.workdir, "ports.yaml")); err != nil {
		return err
	}
	return os.RemoveAll(k.kubeconfig())
}

// saveLogs replaces <work dir>/logs with a copy of the cluster's logs.
func (k *kwokctl) saveLogs() error {
	src := filepath.Join(k.clusterDir(), "logs")
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	dst := filepath.Join(k.workdir, "logs")
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.CopyFS(dst, os.DirFS(src))
}

// writePortsConfig writes the KwokctlConfiguration that gives the
// components their ports, and the feature gates of the minor, and returns
// its path. kwokctl itself would pick
// the first free ones from 32767 down: every cluster tries the same, and
// takes the port of another cluster's component that is down for a moment
// (a test killed it). A block at random is all but never another cluster's.
func (k *kwokctl) writePortsConfig(minor string) (string, error) {
	p, err := freePortBlock(6)
	if err != nil {
		return "", err
	}
	featureGates := ""
	if minorNumber(minor) >= shardedListAndWatchSince {
		featureGates = "  kubeFeatureGates: ShardedListAndWatch=true\n"
	}
	config := fmt.Sprintf(`apiVersion: config.kwok.x-k8s.io/v1beta1
kind: KwokctlConfiguration
options:
  kubeApiserverPort: %d
  etcdPort: %d
  etcdPeerPort: %d
  kubeControllerManagerPort: %d
  kubeSchedulerPort: %d
  kwokControllerPort: %d
%s`, p, p+1, p+2, p+3, p+4, p+5, featureGates)
	if err := os.MkdirAll(k.workdir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(k.workdir, "ports.yaml")
	return path, os.WriteFile(path, []byte(config), 0o644)
}

// shardedListAndWatchSince is the first minor with the ShardedListAndWatch
// feature gate (KEP-5866), alpha and off by default: the control plane turns
// it on, so that the API server filters a sharded controller's lists and
// watches (pkg/replicas). An older kube-apiserver refuses the unknown gate.
const shardedListAndWatchSince = 36

// freePortBlock returns the first of n consecutive ports, all free now on
// 127.0.0.1, from [10000, 32768): below the kernel's ephemeral ports (from
// 32768 by default), which outgoing connections take.
func freePortBlock(n int) (int, error) {
	const lo, hi = 10000, 32768
	for range 100 {
		first := lo + rand.IntN(hi-lo-n)
		if portsFree(first, n) {
			return first, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports found in [%d, %d)", n, lo, hi)
}

// portsFree reports whether ports [first, first+n) can be listened on.
func portsFree(first, n int) bool {
	for p := first; p < first+n; p++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// StartCluster brings up a local control plane with kwokctl, dir its work
// dir (KWOK_WORKDIR), and waits until every component serves, its fake node
// is Ready and untainted and pods may be created in the default namespace,
// starting again any component that exits meanwhile (startup.go). A cluster
// left in dir by an earlier, killed run is deleted first. The control-plane
// binaries are built if they are out of date.
func StartCluster(root, dir string, opts ...ClusterOption) (*Cluster, error) {
	o := clusterOptions{nodePods: 110, timeout: DefaultTimeout, binaries: map[string]string{}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.minor == "" {
		m, err := DefaultKubernetesMinor(root)
		if err != nil {
			return nil, err
		}
		o.minor = m
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := buildTools(root, o.minor, false); err != nil {
		return nil, err
	}
	binaries := builtBinaries(root, o.minor)
	maps.Copy(binaries, o.binaries)
	k := &kwokctl{root: root, workdir: dir, timeout: o.timeout, binaries: binaries}
	if err := k.delete(); err != nil {
		return nil, fmt.Errorf("deleting the cluster left in %s: %w", dir, err)
	}
	c, err := startCluster(k, o)
	if err != nil {
		if derr := k.delete(); derr != nil {
			err = errors.Join(err, fmt.Errorf("deleting the cluster: %w", derr))
		}
		return nil, fmt.Errorf("%w (logs in %s)", err, filepath.Join(dir, "logs"))
	}
	startedClustersMu.Lock()
	startedClusters[c] = struct{}{}
	startedClustersMu.Unlock()
	return c, nil
}

// startCluster creates the cluster and brings it up: every component
// serving, the fake node Ready and untainted, the default ServiceAccount
// there; and checks that it runs the Kubernetes minor asked for.
func startCluster(k *kwokctl, o clusterOptions) (*Cluster, error) {
	portsConfig, err := k.writePortsConfig(o.minor)
	if err != nil {
		return nil, err
	}
	if err := k.create(o, portsConfig); err != nil {
		return nil, err
	}
	c, err := ConnectCluster(k.root, k.kubeconfig())
	if err != nil {
		return nil, err
	}
	c.Dir, c.kwok = k.workdir, k
	up := newStartup(c, o.timeout, func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "control plane in %s: "+format+"\n", append([]any{k.workdir}, args...)...)
	})
	if err := up.until("every component to serve", up.allServing); err != nil {
		return nil, err
	}
	if err := c.checkMinor(o.minor); err != nil {
		return nil, err
	}
	ctx := context.Background()
	node, err := c.addFakeNode(ctx, o.nodePods)
	if err != nil {
		return nil, err
	}
	err = up.until("node "+node+" to be Ready and untainted", func(ctx context.Context) (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeReady(n) && len(n.Spec.Taints) == 0, nil
	})
	if err != nil {
		return nil, err
	}
	// Pods cannot be created before the namespace's default
	// ServiceAccount exists.
	err = up.until("the default ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := c.Kube.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// checkMinor fails unless kube-apiserver reports the minor release asked
// for: a binary of another release, or one built without its version stamp
// (v0.0.0), would pass every test for the wrong reason.
func (c *Cluster) checkMinor(minor string) error {
	v, err := c.Kube.Discovery().ServerVersion()
	if err != nil {
		return err
	}
	if !strings.HasPrefix(v.GitVersion, "v"+minor+".") || v.Major+"."+v.Minor != minor {
		return fmt.Errorf("kube-apiserver is %s (major %q, minor %q), want Kubernetes %s",
			v.GitVersion, v.Major, v.Minor, minor)
	}
	c.KubernetesVersion = v.GitVersion
	return nil
}

// addFakeNode creates the node of hack/kwok-node.yaml with room for pods
// pods, and returns its name. kwok makes it Ready; the node controller then
// removes its not-ready taint.
func (c *Cluster) addFakeNode(ctx context.Context, pods int) (string, error) {
	data, err := os.ReadFile(filepath.Join(c.Root, "hack", "kwok-node.yaml"))
	if err != nil {
		return "", err
	}
	var node corev1.Node
	if err := yaml.UnmarshalStrict(data, &node); err != nil {
		return "", fmt.Errorf("hack/kwok-node.yaml: %w", err)
	}
	capacity := *resource.NewQuantity(int64(pods), resource.DecimalSI)
	node.Status.Capacity[corev1.ResourcePods] = capacity
	node.Status.Allocatable[corev1.ResourcePods] = capacity
	// A node's status is kept on create.
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, &node, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating node %s: %w", node.Name, err)
	}
	return node.Name, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Stop deletes the control plane if this process started it, whatever was
// killed or paused in it; its logs are kept in Dir/logs for a post-mortem.
func (c *Cluster) Stop() error {
	c.stopWebhookService()
	if c.Dir == "" {
		// A cluster of the user's keeps running: remove what the suite
		// added to it.
		return c.removeMetricsScraper(context.Background())
	}
	startedClustersMu.Lock()
	delete(startedClusters, c)
	startedClustersMu.Unlock()
	return c.kwok.delete()
}

// AuditLogPath is the kube-apiserver's audit log, written when the cluster
// was started WithAuditPolicy; "" for a cluster this process did not start.
func (c *Cluster) AuditLogPath() string {
	if c.kwok == nil {
		return ""
	}
	return filepath.Join(c.kwok.clusterDir(), "logs", "audit.log")
}

// buildTools runs hack/build-tools.sh, which builds the control-plane
// binaries of the minor unless they are up to date; with realNode, the real
// node's kubelet and kube-proxy too, which a control plane alone never
// starts.
func buildTools(root, minor string, realNode bool) error {
	cmd := exec.Command(filepath.Join(root, "hack", "build-tools.sh"))
	cmd.Env = append(os.Environ(), "K8S_MINOR="+minor, "BUILD_REAL_NODE="+strconv.FormatBool(realNode))
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/build-tools.sh: %w", err)
	}
	return nil
}

// DeleteCluster deletes the control plane StartCluster started in dir, from
// any process, keeping its logs in dir/logs. No cluster there is no error.
func DeleteCluster(root, dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	return (&kwokctl{root: root, workdir: dir, timeout: DefaultTimeout}).delete()
}
