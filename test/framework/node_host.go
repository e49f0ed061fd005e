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

// What the real node (node.go) changes on the host, and how it is put back.
// Every change is written to a state file under the node's directory before
// it is made, so that a run killed half-way leaves a record the next run's
// cleanup reads: the bridge, the cgroup tree, the sysctls kubelet and the CNI
// bridge plugin set, the kube-proxy nft tables, /run/containerd (the shims'
// sockets), the mounts under the node's directory (containerd's snapshots,
// the pods' network namespaces and volumes) and the shims left running.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hostSysctls are the sysctls the node's components set: the CNI bridge
// plugin turns on forwarding (isGateway), kubelet sets its kernel tunables
// (protectKernelDefaults false: it would refuse to start otherwise) and
// bridge netfilter is read by kube-proxy. Each is put back to what it was.
var hostSysctls = []string{
	"net.ipv4.ip_forward",
	"net.ipv4.conf.all.route_localnet",
	"net.bridge.bridge-nf-call-iptables",
	"net.bridge.bridge-nf-call-ip6tables",
	"vm.overcommit_memory",
	"vm.panic_on_oom",
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
}

// kubeProxyTables are the nft tables kube-proxy's nftables mode creates.
var kubeProxyTables = [][2]string{{"ip", "kube-proxy"}, {"ip6", "kube-proxy"}}

// shimStateDir is where containerd 1.6's shims put their sockets, whatever
// containerd's own state directory.
const shimStateDir = "/run/containerd"

// hostState is the record of the host's changes, in the state file.
type hostState struct {
	Dir        string            `json:"dir"`
	Bridge     string            `json:"bridge"`
	CgroupName string            `json:"cgroupName"`
	Sysctls    map[string]string `json:"sysctls"`
	// NftTables are the tables that did not exist before (family name).
	NftTables [][2]string `json:"nftTables"`
	// RemoveShimDir is whether /run/containerd did not exist before.
	RemoveShimDir bool   `json:"removeShimDir"`
	Socket        string `json:"socket"`
}

func stateFile(dir string) string { return filepath.Join(dir, "host-state.json") }

func (s *hostState) save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := stateFile(s.Dir) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, stateFile(s.Dir))
}

// recordHost reads what the node will change, before it changes anything,
// and saves it.
func recordHost(dir, bridge, cgroupName, socket string) (*hostState, error) {
	s := &hostState{Dir: dir, Bridge: bridge, CgroupName: cgroupName, Socket: socket, Sysctls: map[string]string{}}
	for _, name := range hostSysctls {
		if v, err := readSysctl(name); err == nil {
			s.Sysctls[name] = v
		}
	}
	for _, t := range kubeProxyTables {
		if nftTableExists(t) {
			return nil, fmt.Errorf("nft table %s %s exists already: another kube-proxy runs on this host "+
				"(delete it with \"nft delete table %s %s\" if it is a leftover)", t[0], t[1], t[0], t[1])
		}
		s.NftTables = append(s.NftTables, t)
	}
	if _, err := os.Stat(shimStateDir); errors.Is(err, fs.ErrNotExist) {
		s.RemoveShimDir = true
	}
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		return nil, fmt.Errorf("network interface %s exists already, and no state file of this node says it is "+
			"this node's", bridge)
	}
	return s, s.save()
}

// CleanRealNodeLeftovers puts back what a node whose state file is in dir
// changed, if there is one: a run killed before its cleanup. No state file
// is no error.
func CleanRealNodeLeftovers(dir string) error {
	data, err := os.ReadFile(stateFile(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var s hostState
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s: %w", stateFile(dir), err)
	}
	return s.restore()
}

// restore puts the host back, every step whatever the others did, and
// removes the state file once all succeeded.
func (s *hostState) restore() error {
	var errs []error
	// The pods' processes (in the node's cgroup tree) and containerd's
	// shims (named by their containerd's socket) outlive kubelet and
	// containerd when those are killed.
	errs = append(errs, killCgroupTree(s.CgroupName), killShims(s.Socket))
	errs = append(errs, unmountUnder(s.Dir))
	errs = append(errs, removeCgroupTree(s.CgroupName))
	for _, t := range s.NftTables {
		if nftTableExists(t) {
			errs = append(errs, run("nft", "delete", "table", t[0], t[1]))
		}
	}
	if _, err := os.Stat("/sys/class/net/" + s.Bridge); err == nil {
		// The veths of pods whose network namespace is gone go with their
		// namespace; any left on the bridge go first.
		out, _ := exec.Command("ip", "-o", "link", "show", "master", s.Bridge).Output()
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				_ = run("ip", "link", "delete", strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0])
			}
		}
		errs = append(errs, run("ip", "link", "delete", s.Bridge))
	}
	for name, v := range s.Sysctls {
		if cur, err := readSysctl(name); err == nil && cur != v {
			errs = append(errs, writeSysctl(name, v))
		}
	}
	if s.RemoveShimDir {
		errs = append(errs, removeShimDir())
	}
	// What is left under the directory is the node's own (logs, configs);
	// the data directories are removed so the next run starts empty.
	for _, sub := range []string{"containerd", "containerd-state", "kubelet", "cni", "pod-logs"} {
		errs = append(errs, os.RemoveAll(filepath.Join(s.Dir, sub)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("putting the host back (state in %s): %w", stateFile(s.Dir), err)
	}
	return os.Remove(stateFile(s.Dir))
}

// removeShimDir removes /run/containerd once no shim socket is left in it.
func removeShimDir() error {
	entries, _ := os.ReadDir(filepath.Join(shimStateDir, "s"))
	for _, e := range entries {
		_ = os.Remove(filepath.Join(shimStateDir, "s", e.Name()))
	}
	return os.RemoveAll(shimStateDir)
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

func readSysctl(name string) (string, error) {
	data, err := os.ReadFile(sysctlPath(name))
	return strings.TrimSpace(string(data)), err
}

func writeSysctl(name, value string) error {
	return os.WriteFile(sysctlPath(name), []byte(value+"\n"), 0o644)
}

func nftTableExists(t [2]string) bool {
	return exec.Command("nft", "list", "table", t[0], t[1]).Run() == nil
}

// cgroupMounts are the mount points of the host's cgroup hierarchies (v1
// controllers, and the v2 one if mounted).
func cgroupMounts() ([]string, error) {
	var mounts []string
	err := eachMount(func(mountPoint, fsType string) {
		if (fsType == "cgroup" || fsType == "cgroup2") && strings.HasPrefix(mountPoint, "/sys/fs/cgroup") {
			mounts = append(mounts, mountPoint)
		}
	})
	return mounts, err
}

// eachMount calls fn for every mount of this process's mount namespace.
func eachMount(fn func(mountPoint, fsType string)) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		fn(unescapeMount(fields[4]), fields[sep+1])
	}
	return sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// createCgroupTree makes the node's cgroup (kubelet's cgroupRoot) in every
// hierarchy: kubelet refuses a root that does not exist. A v1 cpuset
// starts empty, and no task can join it until it has the parent's CPUs and
// memory nodes.
func createCgroupTree(name string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		dir := filepath.Join(m, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(m, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("%s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}

// killCgroupTree kills every process in the node's cgroup tree, and waits
// for them to be gone.
func killCgroupTree(name string) error {
	if name == "" {
		return nil
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		pids := map[int]bool{}
		for _, m := range mounts {
			_ = filepath.WalkDir(filepath.Join(m, name), func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
					return nil
				}
				data, _ := os.ReadFile(path)
				for _, f := range strings.Fields(string(data)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids[pid] = true
					}
				}
				return nil
			})
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still in cgroup %s after 30s: %v", name, pids)
		}
		for pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeCgroupTree removes the node's cgroups, the deepest first.
func removeCgroupTree(name string) error {
	if name == "" {
		return nil
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(m, name), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// killShims kills the containerd shims serving the containerd at socket:
// they run detached from it, and survive it.
func killShims(socket string) error {
	if socket == "" {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") &&
			slices.Contains(args, socket) {
			pids = append(pids, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, pid := range pids {
		if err := waitGone(pid, 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// unmountUnder unmounts every mount below dir, the deepest (the latest)
// first: containerd's rootfs overlays and shm, the pods' network namespaces
// (kept under containerd's state dir) and kubelet's volumes.
func unmountUnder(dir string) error {
	var errs []error
	for range 5 {
		var under []string
		if err := eachMount(func(mountPoint, _ string) {
			if strings.HasPrefix(mountPoint, dir+"/") {
				under = append(under, mountPoint)
			}
		}); err != nil {
			return err
		}
		if len(under) == 0 {
			return nil
		}
		errs = nil
		for i := len(under) - 1; i >= 0; i-- {
			if err := syscall.Unmount(under[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) &&
				!errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", under[i], err))
			}
		}
	}
	return errors.Join(errs...)
}
