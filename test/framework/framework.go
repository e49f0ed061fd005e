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

// Package framework runs the project on real Kubernetes components for the
// end-to-end tests and the benchmark: a local control plane run by kwokctl
// (cluster.go), and the controller built and run as a separate process,
// exactly as a user runs it.
package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
)

// RepoRoot returns the repository root: the nearest directory above the
// working directory that holds hack/kwokctl.yaml.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "kwokctl.yaml")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found above the working directory")
		}
		dir = parent
	}
}

// Cluster is a control plane to test against, with clients for it.
type Cluster struct {
	Root       string
	Dir        string // kwokctl's work dir, set when this process started the cluster
	Kubeconfig string
	// KubernetesVersion is kube-apiserver's release (v1.37.2), set when
	// this process started the cluster.
	KubernetesVersion string
	Config            *rest.Config
	Kube              kubernetes.Interface
	Sample            clientset.Interface

	// kwok drives the cluster this process started (cluster.go).
	kwok *kwokctl

	// scraperToken is the metrics scraper's token once set up
	// (metrics_scraper.go).
	scraperMu    sync.Mutex
	scraperToken string

	// webhook stands in for the conversion webhook's Service
	// (webhook_service.go), once WebhookURL has been asked for.
	webhookMu sync.Mutex
	webhook   *webhookService
}

// startedClusters holds the clusters StartCluster started and Stop has not
// stopped yet, for CleanupOnInterrupt.
var (
	startedClustersMu sync.Mutex
	startedClusters   = map[*Cluster]struct{}{}
)

// ConnectCluster uses the cluster a kubeconfig points at.
func ConnectCluster(root, kubeconfig string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// Tests create many objects quickly; the client-side limit would only
	// slow them down.
	cfg.QPS, cfg.Burst = 500, 1000
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	sample, err := clientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Root: root, Kubeconfig: kubeconfig, Config: cfg, Kube: kube, Sample: sample}, nil
}

// Kubectl runs kubectl against the cluster and returns its combined output.
func (c *Cluster) Kubectl(stdin string, args ...string) (string, error) {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Dir = c.Root
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Make runs a target of the repository's Makefile against the cluster, as
// a user would with KUBECONFIG set, and returns its output. It is a make of
// its own: the variables of a make that runs the tests (its jobserver among
// them) are left out.
func (c *Cluster) Make(target string) (string, error) {
	// A deletion that waits for what will never come (a finalizer, a
	// webhook) would hold the suite until its own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", c.Root, target)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // kubectl and all
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "KUBECONFIG="+c.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("make %s: %w: %s", target, err, out)
	}
	return string(out), nil
}

// Run runs a program of the repository (a script of hack/, named from the
// root) against the cluster, as a user would with KUBECONFIG set, and
// returns its output.
func (c *Cluster) Run(program string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.Root, program), args...)
	cmd.Dir = c.Root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// BuildController builds the controller of the module at root into bin.
// Suites that run side by side give each its own bin: go build replaces
// the file, and a suite may be starting the binary just then.
func BuildController(root, bin string) error {
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w: %s", err, out)
	}
	return nil
}

// Process is a program started by a test. It is killed if the test binary
// dies first (Pdeathsig), so no run leaves one behind.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// processes holds every Process started and not yet reaped, for KillAll.
var (
	processesMu sync.Mutex
	processes   = map[*Process]struct{}{}
)

// StartProcess starts bin with args, its output going to logPath.
func StartProcess(name, logPath, bin string, args ...string) (*Process, error) {
	return StartProcessWithEnv(name, logPath, bin, nil, args...)
}

// StartProcessWithEnv starts bin with args, and with env ("KEY=value")
// added to this process's environment.
func StartProcessWithEnv(name, logPath, bin string, env []string, args ...string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	processesMu.Lock()
	processes[p] = struct{}{}
	processesMu.Unlock()
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		processesMu.Lock()
		delete(processes, p)
		processesMu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// KillAll kills every process still running; for interrupt handlers.
func KillAll() {
	processesMu.Lock()
	defer processesMu.Unlock()
	for p := range processes {
		_ = p.cmd.Process.Kill()
	}
}

// CleanupOnInterrupt makes SIGINT or SIGTERM of the test binary kill every
// Process and stop the cluster c (none if nil), and every other cluster
// StartCluster started and nobody stopped yet, before exiting, so that
// Ctrl-C on "go test" leaves nothing running.
func CleanupOnInterrupt(c *Cluster) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		KillAll()
		startedClustersMu.Lock()
		var clusters []*Cluster
		if c != nil {
			clusters = append(clusters, c)
		}
		for other := range startedClusters {
			if other != c {
				clusters = append(clusters, other)
			}
		}
		startedClustersMu.Unlock()
		for _, cl := range clusters {
			_ = cl.Stop()
		}
		os.Exit(130)
	}()
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits up to timeout for the process to exit and returns its exit
// code; an error if it is still running then.
func (p *Process) Wait(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
		var exitErr *exec.ExitError
		if errors.As(p.waitErr, &exitErr) {
			return exitErr.ExitCode(), nil
		}
		if p.waitErr != nil {
			return -1, p.waitErr
		}
		return 0, nil
	case <-time.After(timeout):
		return -1, fmt.Errorf("%s (pid %d) still running after %v", p.Name, p.Pid(), timeout)
	}
}

// Kill kills the process if it still runs and waits for it.
func (p *Process) Kill() {
	if !p.Exited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// Log returns what the process has written so far.
func (p *Process) Log() string {
	data, _ := os.ReadFile(p.LogPath)
	return string(data)
}

// Controller is a running sample-controller with its HTTP endpoints.
type Controller struct {
	*Process
	// scrapeToken is the token of its cluster's metrics scraper.
	scrapeToken string
	// servesWebhook is whether it was started with a webhook server.
	servesWebhook bool
}

// StartController runs the controller binary against the cluster. Its
// metrics, probe and webhook servers listen on 127.0.0.1 with a port the kernel picks
// (port 0), so that concurrent processes never race for a port; MetricsURL
// and ProbeURL read the actual addresses from its log, as the cluster's
// stand-in for the webhook's Service does (WebhookURL). args come after the
// defaults, so they can override them (e.g. -leader-elect=false).
//
// Metrics are served as by default, over HTTPS to authorized callers only;
// the cluster's first call sets up its scraper, whose token ScrapeURL sends.
func (c *Cluster) StartController(bin, logDir, name string, args ...string) (*Controller, error) {
	return c.StartControllerWithEnv(bin, logDir, name, nil, args...)
}

// StartControllerWithEnv is StartController with env ("KEY=value") added to
// the controller's environment: client-go reads its feature gates from
// there (KUBE_FEATURE_<name>).
func (c *Cluster) StartControllerWithEnv(bin, logDir, name string, env []string, args ...string) (*Controller, error) {
	return c.startController(bin, logDir, name, env, append([]string{"-webhook-bind-address=127.0.0.1:0"}, args...))
}

// StartReleaseController is StartController for the binary of a release
// before the conversion webhook, whose command line has no -webhook-*
// flags.
func (c *Cluster) StartReleaseController(bin, logDir, name string, args ...string) (*Controller, error) {
	return c.startController(bin, logDir, name, nil, args)
}

func (c *Cluster) startController(bin, logDir, name string, env, args []string) (*Controller, error) {
	token, err := c.ensureMetricsScraper(context.Background())
	if err != nil {
		return nil, fmt.Errorf("setting up the metrics scraper: %w", err)
	}
	all := append([]string{
		"-kubeconfig=" + c.Kubeconfig,
		"-metrics-bind-address=127.0.0.1:0",
		"-health-probe-bind-address=127.0.0.1:0",
		"-v=2",
	}, args...)
	p, err := StartProcessWithEnv(name, filepath.Join(logDir, name+".log"), bin, env, all...)
	if err != nil {
		return nil, err
	}
	ctrl := &Controller{Process: p, scrapeToken: token, servesWebhook: webhookFlag(all) != ""}
	c.addController(ctrl)
	return ctrl, nil
}

// webhookFlag is the webhook's bind address in args, the last given wins;
// "" when there is none or it is disabled ("0").
func webhookFlag(args []string) string {
	addr := ""
	for _, arg := range args {
		if v, ok := strings.CutPrefix(arg, "-webhook-bind-address="); ok {
			addr = v
		}
	}
	if addr == "0" {
		return ""
	}
	return addr
}

// MetricsURL is the controller's /metrics URL, https:// unless it runs
// with -metrics-secure=false ("" if it never served).
func (c *Controller) MetricsURL() string {
	base := c.servingURL("metrics")
	if base == "" {
		return ""
	}
	url := base + "/metrics"
	metricsTokens.Store(url, c.scrapeToken)
	return url
}

// ScrapeToken is the bearer token ScrapeURL sends to this controller: that
// of its cluster's metrics scraper.
func (c *Controller) ScrapeToken() string { return c.scrapeToken }

// WebhookURL is the base URL of the controller's conversion webhook server
// ("" if it never served).
func (c *Controller) WebhookURL() string {
	return c.servingURL("webhook")
}

// ProbeURL is the base URL of the controller's probe server; append /healthz
// or /readyz ("" if it never served).
func (c *Controller) ProbeURL() string {
	return c.servingURL("probes")
}

// servingURL waits (up to a minute, or until the process exits) for the
// controller's log line
// `"Serving" server="NAME" address="HOST:PORT" scheme="SCHEME"` and returns
// SCHEME://HOST:PORT.
func (c *Controller) servingURL(server string) string {
	re := regexp.MustCompile(`"Serving" server="` + regexp.QuoteMeta(server) + `" address="([^"]+)" scheme="([^"]+)"`)
	deadline := time.Now().Add(time.Minute)
	for {
		if m := re.FindStringSubmatch(c.Log()); m != nil {
			return m[2] + "://" + m[1]
		}
		if c.Exited() || time.Now().After(deadline) {
			return ""
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Probe GETs one of the controller's probe paths (/healthz, /readyz) and
// returns the status code and body.
func (c *Controller) Probe(ctx context.Context, path string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.ProbeURL()+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// Poll calls cond every interval until it returns true or the timeout
// passes; then it returns the last error cond returned, if any. An error
// of the attempt the timeout cut short ("context deadline exceeded") says
// nothing of why the condition did not hold: the one before it is kept.
func Poll(ctx context.Context, interval, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if err == nil && ok {
			return nil
		}
		if err != nil && (last == nil || ctx.Err() == nil) {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("timed out after %v: %w", timeout, last)
			}
			return fmt.Errorf("timed out after %v", timeout)
		case <-time.After(interval):
		}
	}
}

// PollProgress polls observe every interval until it reports done, and
// returns how long that took. It waits for the work to move, not for a
// total a slow machine misses: it fails only when what observe reports as
// progress (a count of what is done, say) stays the same for stall, with
// the last progress and error seen.
func PollProgress(ctx context.Context, interval, stall time.Duration,
	observe func(context.Context) (done bool, progress string, err error)) (time.Duration, error) {
	began := time.Now()
	moved := began
	last, lastErr := "", error(nil)
	for {
		done, progress, err := observe(ctx)
		if err == nil && done {
			return time.Since(began), nil
		}
		lastErr = err
		if progress != last {
			last, moved = progress, time.Now()
		}
		if time.Since(moved) > stall {
			return time.Since(began), fmt.Errorf("no progress for %v (after %v): %s (last error: %v)",
				stall, time.Since(began).Round(time.Second), last, lastErr)
		}
		select {
		case <-ctx.Done():
			return time.Since(began), ctx.Err()
		case <-time.After(interval):
		}
	}
}

// Trim shortens a long text to its last n bytes, for failure messages.
func Trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// RunningProcesses returns the names of the processes started with
// StartProcess that have not exited yet, so a test can make sure it is alone
// with the process it starts.
func RunningProcesses() []string {
	processesMu.Lock()
	defer processesMu.Unlock()
	var names []string
	for p := range processes {
		if !p.Exited() {
			names = append(names, p.Name)
		}
	}
	return names
}

// Parallel calls fn(i) for every i in [0, n) from at most workers goroutines,
// for tests that create many objects at once. After the first error no new
// call starts; that error is returned.
func Parallel(n, workers int, fn func(i int) error) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil
	}
	indices := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range indices {
				if err := fn(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := 0; i < n && !failed(); i++ {
		indices <- i
	}
	close(indices)
	wg.Wait()
	return firstErr
}
