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

// A real node beside kwok's fake one, for the tests that run the image:
// containerd (with Debian's runc and CNI plugins), kubelet and kube-proxy
// (nftables mode) of the newest minor, built by hack/build-tools.sh. It runs
// pods for real: their images imported into containerd before any pod names
// them (the node is tainted, and nothing is ever pulled), their network a
// bridge of the node's own whose address is the node's IP, the `kubernetes`
// Service reachable through a forward from that IP to the API server on
// loopback. Test settings throughout (anonymous kubelet on a bridge no
// other host reaches), never a deployment's.
//
// What it changes on the host is recorded and put back (node_host.go).
// One real node runs on a host at a time (kube-proxy's nft tables have one
// name): a lock under /run/lock is held while it runs.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// RealNodeTaint keeps every pod off the real node but those that tolerate
// it: the tests' own, whose images the node has.
const RealNodeTaint = "sample-controller.e2e/real-node"

// RealNodeEnv is the variable that, set to "required", makes a host that cannot run a real node
// fail the tests that need one instead of skipping them (.ci/run sets it).
const RealNodeEnv = "E2E_REAL_NODE"

// RealNodePackages is what a Debian host installs to run the real node.
const RealNodePackages = "containerd runc containernetworking-plugins nftables conntrack iproute2"

// cniBinDir is where Debian's containernetworking-plugins puts the plugins.
const cniBinDir = "/usr/lib/cni"

// realNodeLock is the host-wide lock of the one real node.
const realNodeLock = "/run/lock/sample-controller-real-node.lock"

// RealNodeUnavailable says why this host cannot run a real node, and what
// to install; nil when it can.
func RealNodeUnavailable() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the real node runs on Linux only, not %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("the real node needs root (containerd, kubelet and a bridge of its own)")
	}
	var missing []string
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "nft", "conntrack", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			missing = append(missing, filepath.Join(cniBinDir, plugin))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the real node needs %s: on Debian, apt-get install %s",
			strings.Join(missing, ", "), RealNodePackages)
	}
	return nil
}

// RealNode is a kubelet, containerd and kube-proxy registered with a
// cluster.
type RealNode struct {
	Name string
	// IP is the node's address: its bridge's, the pods' gateway.
	IP  string
	Dir string

	cluster    *Cluster
	state      *hostState
	lock       *os.File
	containerd *Process
	kubelet    *Process
	kubeProxy  *Process
	forward    net.Listener
	forwardWG  sync.WaitGroup
	stopOnce   sync.Once
	stopErr    error
}

// realNodeLane is the node's name, bridge and subnet for a minor: distinct
// per minor, so that a lane's leftovers are never another's.
func realNodeLane(minor string) (name, bridge, subnetPrefix string) {
	n := minorNumber(minor)
	return fmt.Sprintf("real-node-1-%d", n), fmt.Sprintf("scnode%d", n), fmt.Sprintf("10.201.%d", n)
}

// StartRealNode starts a real node for the cluster, its files in dir,
// imports the image tarballs into its containerd, and waits until it is
// Ready. pauseImage names the pod sandbox's image, one of the tarballs.
// Whatever the host had left of an earlier, killed run in dir is put back
// first. Stop puts the host back.
func (c *Cluster) StartRealNode(dir, minor, pauseImage string, tarballs ...string) (_ *RealNode, err error) {
	if err := RealNodeUnavailable(); err != nil {
		return nil, err
	}
	// Built here, not with the control plane: only a real node runs them.
	// After make e2e's build, nothing is left to do.
	if err := buildTools(c.Root, minor, true); err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	name, bridge, prefix := realNodeLane(minor)
	n := &RealNode{Name: name, IP: prefix + ".1", Dir: dir, cluster: c}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	n.lock, err = os.OpenFile(realNodeLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(n.lock.Fd()), syscall.LOCK_EX); err != nil {
		n.lock.Close()
		return nil, err
	}
	if err := CleanRealNodeLeftovers(dir); err != nil {
		n.lock.Close()
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
		}
	}()
	socket := filepath.Join(dir, "containerd-state", "containerd.sock")
	n.state, err = recordHost(dir, bridge, "sample-controller-e2e-"+name, socket)
	if err != nil {
		return n, err
	}
	if err := n.setUpNetwork(bridge, prefix); err != nil {
		return n, err
	}
	if err := createCgroupTree(n.state.CgroupName); err != nil {
		return n, err
	}
	if err := n.startContainerd(socket, bridge, prefix, pauseImage); err != nil {
		return n, err
	}
	for _, tarball := range tarballs {
		if err := n.ImportImage(tarball); err != nil {
			return n, err
		}
	}
	if err := n.forwardAPIServer(); err != nil {
		return n, err
	}
	if err := n.startKubelet(socket); err != nil {
		return n, err
	}
	if err := n.startKubeProxy(prefix); err != nil {
		return n, err
	}
	return n, n.waitReady()
}

// setUpNetwork creates the node's bridge with its address. The CNI bridge
// plugin attaches the pods to it and routes through it.
func (n *RealNode) setUpNetwork(bridge, prefix string) error {
	if err := run("ip", "link", "add", bridge, "type", "bridge"); err != nil {
		return err
	}
	if err := run("ip", "addr", "add", prefix+".1/24", "dev", bridge); err != nil {
		return err
	}
	return run("ip", "link", "set", bridge, "up")
}

// startContainerd runs containerd with every directory under the node's,
// the CRI plugin's pod sandbox the pause image, and no OOM score below its
// own (root here may lack CAP_SYS_RESOURCE).
func (n *RealNode) startContainerd(socket, bridge, prefix, pauseImage string) error {
	netDir := filepath.Join(n.Dir, "cni", "net.d")
	if err := os.MkdirAll(netDir, 0o755); err != nil {
		return err
	}
	cni := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "%[1]s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "%[1]s",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "%[2]s",
        "ranges": [[{"subnet": "%[3]s.0/24", "rangeStart": "%[3]s.10", "gateway": "%[3]s.1"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "loopback"}
  ]
}
`, bridge, filepath.Join(n.Dir, "cni", "ipam"), prefix)
	if err := os.WriteFile(filepath.Join(netDir, "10-bridge.conflist"), []byte(cni), 0o644); err != nil {
		return err
	}
	// Empty at every start: no registry of an earlier run stays trusted.
	if err := os.RemoveAll(n.registryHostsDir()); err != nil {
		return err
	}
	if err := os.MkdirAll(n.registryHostsDir(), 0o755); err != nil {
		return err
	}
	config := fmt.Sprintf(`version = 2
root = "%[1]s/containerd"
state = "%[1]s/containerd-state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "%[2]s"
[ttrpc]
  address = "%[2]s.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "%[1]s/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[3]s"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "%[4]s"
    conf_dir = "%[5]s"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "%[1]s/containerd-state/runc"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "%[6]s"
`, n.Dir, socket, pauseImage, cniBinDir, netDir, n.registryHostsDir())
	path := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(socket), 0o755); err != nil {
		return err
	}
	var err error
	n.containerd, err = StartProcess("containerd", filepath.Join(n.Dir, "containerd.log"), "containerd", "--config", path)
	if err != nil {
		return err
	}
	return Poll(context.Background(), 50*time.Millisecond, DefaultTimeout, func(context.Context) (bool, error) {
		if n.containerd.Exited() {
			return false, fmt.Errorf("containerd exited: %s", Trim(n.containerd.Log(), 2000))
		}
		return n.ctr("version") == nil, nil
	})
}

func (n *RealNode) ctr(args ...string) error {
	return run("ctr", append([]string{"--address", n.state.Socket, "--namespace", "k8s.io"}, args...)...)
}

// ImportImage imports a docker-style image tarball into the node's
// containerd, where the CRI plugin finds it.
func (n *RealNode) ImportImage(tarball string) error {
	return n.ctr("images", "import", tarball)
}

// ImageRefs are the references of every image the node's containerd holds
// in the CRI's namespace: names, name@digest and the CRI's own sha256:ID
// entries.
func (n *RealNode) ImageRefs() ([]string, error) {
	return n.ctrLines("images", "ls", "--quiet")
}

// HasContent reports whether the node's containerd content store holds a
// blob (a manifest, a config, a layer) of digest ("sha256:...").
func (n *RealNode) HasContent(digest string) (bool, error) {
	digests, err := n.ctrLines("content", "ls", "--quiet")
	if err != nil {
		return false, err
	}
	for _, d := range digests {
		if d == digest {
			return true, nil
		}
	}
	return false, nil
}

func (n *RealNode) ctrLines(args ...string) ([]string, error) {
	args = append([]string{"--address", n.state.Socket, "--namespace", "k8s.io"}, args...)
	out, err := exec.Command("ctr", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("ctr %s: %w", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out)), nil
}

// registryHostsDir is containerd's CRI registry config_path: a directory
// per registry host (HOST:PORT) holding its hosts.toml, read at every pull,
// so that a registry may be trusted after containerd started.
func (n *RealNode) registryHostsDir() string {
	return filepath.Join(n.Dir, "containerd-certs.d")
}

// TrustRegistry makes the node pull images named host/... (host is
// "127.0.0.1:PORT") from https://host, trusting the CA certificates of
// caFile (PEM) for it, and nothing else: no plain HTTP, no skipped
// verification. The CA is copied beside the hosts.toml, so the node's trust
// does not depend on the registry's files. containerd runs in the host's
// network namespace: 127.0.0.1 is the host's loopback.
func (n *RealNode) TrustRegistry(host, caFile string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	dir := filepath.Join(n.registryHostsDir(), host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o644); err != nil {
		return err
	}
	// server is where images of host come from; the [host] entry, tried
	// first, is the same endpoint with its capabilities and CA. It is not
	// optional: containerd 1.6 refuses a hosts.toml with no [host] table
	// ("invalid `host` tree") and falls back to Docker's certs.d layout.
	hosts := fmt.Sprintf(`server = "https://%[1]s"

[host."https://%[1]s"]
  capabilities = ["pull", "resolve"]
  ca = "%[2]s"
`, host, filepath.Join(dir, "ca.crt"))
	return os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(hosts), 0o644)
}

// forwardAPIServer forwards the node's IP, at the port the `kubernetes`
// Service targets, to the API server on loopback, and points the Service's
// EndpointSlice there: the control plane listens on 127.0.0.1 and has no
// endpoint reconciler, and a pod reaches neither.
func (n *RealNode) forwardAPIServer() error {
	ctx := context.Background()
	svc, err := n.cluster.Kube.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if len(svc.Spec.Ports) != 1 {
		return fmt.Errorf("the kubernetes Service has ports %v, want one", svc.Spec.Ports)
	}
	port := svc.Spec.Ports[0]
	target := port.TargetPort.IntValue()
	host := strings.TrimPrefix(n.cluster.Config.Host, "https://")
	n.forward, err = net.Listen("tcp", net.JoinHostPort(n.IP, strconv.Itoa(target)))
	if err != nil {
		return err
	}
	n.forwardWG.Go(func() {
		for {
			in, err := n.forward.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", host)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in); _ = out.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(in, out)
			}()
		}
	})
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Labels: map[string]string{
			discoveryv1.LabelServiceName: "kubernetes",
			discoveryv1.LabelManagedBy:   "sample-controller-e2e",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{n.IP},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(port.Name), Port: ptr.To(int32(target)),
			Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	// One left by an earlier node on this cluster (a test's) is replaced.
	slices := n.cluster.Kube.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	if err := slices.Delete(ctx, slice.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, err = slices.Create(ctx, slice, metav1.CreateOptions{})
	return err
}

// freeLoopbackPort is a port free on 127.0.0.1 now.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startKubelet runs kubelet: cgroupfs on the host's cgroups (v1 here), its
// OOM score left alone, no iptables chains of its own, anonymous requests
// allowed (the local API server has no kubelet client certificate; the node
// IP is on a bridge nothing outside the host reaches), registered tainted.
func (n *RealNode) startKubelet(socket string) error {
	healthz, err := freeLoopbackPort()
	if err != nil {
		return err
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return err
	}
	resolv := filepath.Join(n.Dir, "resolv.conf")
	if err := os.WriteFile(resolv, nil, 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupRoot: /%[4]s
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
makeIPTablesUtilChains: false
containerRuntimeEndpoint: unix://%[5]s
podLogsDir: %[6]s/pod-logs
resolvConf: %[7]s
registerWithTaints:
- key: %[8]s
  effect: NoSchedule
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 1Mi
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
`, n.IP, port, healthz, n.state.CgroupName, socket, n.Dir, resolv, RealNodeTaint)
	path := filepath.Join(n.Dir, "kubelet.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return err
	}
	bin := filepath.Join(n.cluster.Root, "_output", "bin", "k8s-"+n.minor(), "kubelet")
	n.kubelet, err = StartProcess("kubelet", filepath.Join(n.Dir, "kubelet.log"), bin,
		"--config="+path,
		"--kubeconfig="+n.cluster.Kubeconfig,
		"--root-dir="+filepath.Join(n.Dir, "kubelet"),
		"--cert-dir="+filepath.Join(n.Dir, "kubelet", "pki"),
		"--node-ip="+n.IP,
		"--hostname-override="+n.Name,
		"--v=1")
	return err
}

// minor is the cluster's minor, 1.37 of v1.37.2.
func (n *RealNode) minor() string {
	v := strings.TrimPrefix(n.cluster.KubernetesVersion, "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// startKubeProxy runs kube-proxy in nftables mode, on loopback for its own
// endpoints, leaving the host's conntrack sysctls alone (every setting 0).
// It masquerades every Service's traffic, so a pod reaches a Service whose
// endpoint is a pod on the same bridge.
func (n *RealNode) startKubeProxy(prefix string) error {
	healthz, err := freeLoopbackPort()
	if err != nil {
		return err
	}
	metrics, err := freeLoopbackPort()
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: %[1]s
hostnameOverride: %[2]s
bindAddress: %[3]s
healthzBindAddress: 127.0.0.1:%[4]d
metricsBindAddress: 127.0.0.1:%[5]d
clusterCIDR: %[6]s.0/24
nodePortAddresses: ["%[3]s/32"]
nftables:
  masqueradeAll: true
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
`, n.cluster.Kubeconfig, n.Name, n.IP, healthz, metrics, prefix)
	path := filepath.Join(n.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return err
	}
	bin := filepath.Join(n.cluster.Root, "_output", "bin", "k8s-"+n.minor(), "kube-proxy")
	n.kubeProxy, err = StartProcess("kube-proxy", filepath.Join(n.Dir, "kube-proxy.log"), bin, "--config="+path, "--v=1")
	return err
}

// waitReady waits until the node is Ready, carrying its taint.
func (n *RealNode) waitReady() error {
	return Poll(context.Background(), 200*time.Millisecond, DefaultTimeout, func(ctx context.Context) (bool, error) {
		for _, p := range []*Process{n.containerd, n.kubelet, n.kubeProxy} {
			if p.Exited() {
				return false, fmt.Errorf("%s exited: %s", p.Name, Trim(p.Log(), 3000))
			}
		}
		node, err := n.cluster.Kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		tainted := false
		for _, t := range node.Spec.Taints {
			tainted = tainted || t.Key == RealNodeTaint
		}
		return nodeReady(node) && tainted, nil
	})
}

// Stop stops the node's components and puts the host back; the logs stay
// in Dir. Safe to call more than once.
func (n *RealNode) Stop() error {
	n.stopOnce.Do(func() {
		for _, p := range []*Process{n.kubeProxy, n.kubelet, n.containerd} {
			if p != nil {
				p.Kill()
			}
		}
		if n.forward != nil {
			n.forward.Close()
			n.forwardWG.Wait()
			// The node is gone: so is the endpoint it served. (The cluster
			// may be gone too; nothing then to delete.)
			_ = n.cluster.Kube.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Delete(context.Background(),
				"kubernetes", metav1.DeleteOptions{})
			_ = n.cluster.Kube.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{})
		}
		if n.state != nil {
			n.stopErr = n.state.restore()
		}
		if n.lock != nil {
			n.lock.Close()
		}
	})
	return n.stopErr
}
