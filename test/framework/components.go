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

// Faults in single components of a cluster StartCluster started: kwokctl
// records each component's pid in <cluster dir>/pids/<component>.pid; the
// process is killed, paused or resumed by that pid, and `kwokctl start
// cluster` starts again whatever is not running.

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Control plane components, as kwokctl names them.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok-controller"
)

// components are every component of a cluster.
var components = []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok}

// Component states, as ComponentState reports them.
const (
	StateRunning = "running"
	StatePaused  = "paused"
	StateDown    = "down"
)

// KillComponent SIGKILLs one component of a cluster this process started and
// waits until the process is gone; its data (etcd's) stays for
// StartComponent.
func (c *Cluster) KillComponent(name string) error {
	pid, state, err := c.component(name)
	if err != nil {
		return err
	}
	if state == StateDown {
		return fmt.Errorf("cannot kill %s: it is down", name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing %s (pid %d): %w", name, pid, err)
	}
	return waitGone(pid, c.kwok.timeout)
}

// StartComponent starts a killed component again with `kwokctl start
// cluster`, which starts every component that is not running and leaves
// the others alone, and waits until it serves (kube-apiserver: /readyz).
// The log of its earlier run is kept as logs/<component>.log.<n>.
func (c *Cluster) StartComponent(name string) error {
	pid, state, err := c.component(name)
	if err != nil {
		return err
	}
	if state != StateDown {
		return fmt.Errorf("cannot start %s: it is %s (pid %d)", name, state, pid)
	}
	// kwokctl counts a process that exists at all as running, a zombie
	// too: it must be reaped first.
	if err := waitGone(pid, c.kwok.timeout); err != nil {
		return err
	}
	if err := c.keepLogsOfDown(); err != nil {
		return err
	}
	if err := c.kwok.run("start", "cluster", "--timeout="+c.kwok.timeout.String()); err != nil {
		return err
	}
	return c.waitServing(name)
}

// keepLogsOfDown renames the log of every component that is down, which
// `kwokctl start cluster` would truncate when it starts the component again,
// to <component>.log.<n>, the first n free from 1.
func (c *Cluster) keepLogsOfDown() error {
	for _, name := range components {
		_, state, err := c.component(name)
		if err != nil {
			return err
		}
		if state != StateDown {
			continue
		}
		log := filepath.Join(c.kwok.clusterDir(), "logs", name+".log")
		for n := 1; ; n++ {
			kept := log + "." + strconv.Itoa(n)
			if _, err := os.Stat(kept); errors.Is(err, fs.ErrNotExist) {
				if err := os.Rename(log, kept); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				break
			}
		}
	}
	return nil
}

// PauseComponent SIGSTOPs a component: its sockets stay open and nothing
// answers, as when a process hangs or the network drops its packets.
func (c *Cluster) PauseComponent(name string) error {
	return c.signal(name, StateRunning, syscall.SIGSTOP, StatePaused)
}

// ResumeComponent SIGCONTs a paused component.
func (c *Cluster) ResumeComponent(name string) error {
	return c.signal(name, StatePaused, syscall.SIGCONT, StateRunning)
}

// EnsureComponent makes a component run again, whatever fault was injected:
// it resumes it if paused, starts it if down. For test clean-ups.
func (c *Cluster) EnsureComponent(name string) error {
	_, state, err := c.component(name)
	if err != nil {
		return err
	}
	switch state {
	case StatePaused:
		return c.ResumeComponent(name)
	case StateDown:
		return c.StartComponent(name)
	}
	return nil
}

// ComponentState is StateRunning, StatePaused or StateDown.
func (c *Cluster) ComponentState(name string) (string, error) {
	_, state, err := c.component(name)
	return state, err
}

// signal sends sig to the component, which must be in state from, and waits
// until it is in state to.
func (c *Cluster) signal(name, from string, sig syscall.Signal, to string) error {
	pid, state, err := c.component(name)
	if err != nil {
		return err
	}
	if state != from {
		return fmt.Errorf("cannot send %v to %s: it is %s, not %s", sig, name, state, from)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("sending %v to %s (pid %d): %w", sig, name, pid, err)
	}
	err = Poll(context.Background(), 20*time.Millisecond, c.kwok.timeout, func(context.Context) (bool, error) {
		_, state, err := c.component(name)
		return state == to, err
	})
	if err != nil {
		return fmt.Errorf("waiting for %s (pid %d) to be %s: %w", name, pid, to, err)
	}
	return nil
}

// ComponentPid returns the process id of a running component.
func (c *Cluster) ComponentPid(name string) (int, error) {
	pid, state, err := c.component(name)
	if err != nil {
		return 0, err
	}
	if state != StateRunning {
		return 0, fmt.Errorf("%s is %s", name, state)
	}
	return pid, nil
}

// component returns the pid kwokctl recorded for the component (0 if none)
// and its state.
func (c *Cluster) component(name string) (int, string, error) {
	if c.kwok == nil {
		return 0, "", fmt.Errorf("%s: the cluster was not started by this process", name)
	}
	pid, err := c.kwok.pid(name)
	if err != nil || pid == 0 {
		return pid, StateDown, err
	}
	state, err := procState(pid)
	switch {
	case err != nil:
		return pid, "", err
	// A zombie has exited; a pid that is not the component's was recycled.
	case state == "" || state == "Z" || !c.kwok.runs(pid, name):
		return pid, StateDown, nil
	case state == "T" || state == "t":
		return pid, StatePaused, nil
	}
	return pid, StateRunning, nil
}

// pid reads the component's pid file; 0 if there is none (kwokctl removes
// it when it stops the component).
func (k *kwokctl) pid(name string) (int, error) {
	data, err := os.ReadFile(filepath.Join(k.clusterDir(), "pids", name+".pid"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("pid file of %s: %w", name, err)
	}
	return pid, nil
}

// pids returns the recorded pids of every component.
func (k *kwokctl) pids() []int {
	var pids []int
	for _, name := range components {
		if pid, err := k.pid(name); err == nil && pid != 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// runs reports whether pid is the component kwokctl started: it runs the
// component's binary as kwokctl linked it into the cluster's bin/.
func (k *kwokctl) runs(pid int, name string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return string(argv0) == filepath.Join(k.clusterDir(), "bin", name)
}

// procState is the process's state letter in /proc/<pid>/stat (R, S, T, Z,
// ...), "" if there is no such process.
func procState(pid int) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	// The state follows the command name, in parentheses that may hold
	// anything: look after the last ')'.
	_, rest, ok := strings.Cut(string(data[bytes.LastIndexByte(data, ')')+1:]), " ")
	if !ok || rest == "" {
		return "", fmt.Errorf("/proc/%d/stat: unexpected %q", pid, data)
	}
	return rest[:1], nil
}

// waitGone waits until no process has the pid any more: exited and reaped.
// Components kwokctl started are not this process's children: init reaps
// them, in a second or two.
func waitGone(pid int, timeout time.Duration) error {
	err := Poll(context.Background(), 20*time.Millisecond, timeout, func(context.Context) (bool, error) {
		state, err := procState(pid)
		return state == "", err
	})
	if err != nil {
		return fmt.Errorf("waiting for pid %d to be gone: %w", pid, err)
	}
	return nil
}

// waitServing waits until the component runs and answers its health
// endpoint; it fails at once if the component exits.
func (c *Cluster) waitServing(name string) error {
	ports, err := c.kwok.ports()
	if err != nil {
		return err
	}
	exited := false
	err = Poll(context.Background(), 100*time.Millisecond, c.kwok.timeout, func(ctx context.Context) (bool, error) {
		_, state, err := c.component(name)
		if err != nil {
			return false, err
		}
		// Poll goes on after errors: this one ends it.
		exited = state == StateDown
		return exited || c.serving(ctx, name, ports) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to serve: %w", name, err)
	}
	if exited {
		return fmt.Errorf("%s exited while starting; end of its log:\n%s", name, c.kwok.logTail(name, 3000))
	}
	return nil
}

// serving asks the component's health endpoint.
func (c *Cluster) serving(ctx context.Context, name string, p kwokctlPorts) error {
	switch name {
	case Etcd:
		return healthy(ctx, fmt.Sprintf("http://127.0.0.1:%d/health", p.EtcdPort), `"health":"true"`)
	case KubeAPIServer:
		body, err := c.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) != "ok" {
			err = fmt.Errorf("/readyz: %s", body)
		}
		return err
	case KubeControllerManager:
		return healthy(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", p.KubeControllerManagerPort), "ok")
	case KubeScheduler:
		return healthy(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", p.KubeSchedulerPort), "ok")
	case Kwok:
		return healthy(ctx, fmt.Sprintf("http://127.0.0.1:%d/healthz", p.KwokControllerPort), "ok")
	}
	return fmt.Errorf("unknown component %q", name)
}

// insecureClient asks the components' self-signed health endpoints on
// loopback: their certificates are not what is tested.
var insecureClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

// healthy GETs url and checks that the body holds want.
func healthy(ctx context.Context, url, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := insecureClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("%s: %s %s", url, resp.Status, body)
	}
	return nil
}

// kwokctlPorts are the ports kwokctl picked for the cluster.
type kwokctlPorts struct {
	EtcdPort                  int `json:"etcdPort"`
	KubeControllerManagerPort int `json:"kubeControllerManagerPort"`
	KubeSchedulerPort         int `json:"kubeSchedulerPort"`
	KwokControllerPort        int `json:"kwokControllerPort"`
}

// ports reads the ports from the cluster's kwok.yaml, where kwokctl saved
// its KwokctlConfiguration among other documents.
func (k *kwokctl) ports() (kwokctlPorts, error) {
	f, err := os.Open(filepath.Join(k.clusterDir(), "kwok.yaml"))
	if err != nil {
		return kwokctlPorts{}, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var doc struct {
			Kind    string       `json:"kind"`
			Options kwokctlPorts `json:"options"`
		}
		if err := dec.Decode(&doc); err != nil {
			return kwokctlPorts{}, fmt.Errorf("no KwokctlConfiguration in %s: %w", f.Name(), err)
		}
		if doc.Kind == "KwokctlConfiguration" {
			return doc.Options, nil
		}
	}
}

// ComponentLogPath is the log of a component of a cluster this process
// started; the logs of its earlier runs, if it was started again, are
// <path>.1, <path>.2, ...
func (c *Cluster) ComponentLogPath(name string) string {
	return c.kwok.logPath(name)
}

func (k *kwokctl) logPath(name string) string {
	return filepath.Join(k.clusterDir(), "logs", name+".log")
}

// logTail is the last n bytes of a component's log.
func (k *kwokctl) logTail(name string, n int) string {
	data, err := os.ReadFile(k.logPath(name))
	if err != nil {
		return err.Error()
	}
	return Trim(string(data), n)
}
