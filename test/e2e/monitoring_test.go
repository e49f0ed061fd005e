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

// The monitoring of artifacts/monitoring on a real Prometheus: the shipped
// scrape job scrapes the controller over HTTPS with the token of a
// ServiceAccount bound to the shipped metrics-reader ClusterRole; every
// alert and every dashboard query is evaluated; alerts fire when their cause
// is provoked and resolve when it is lifted.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/test/framework"
	"github.com/kube-samples/sample-controller/test/monitoring"
)

const (
	// monitoringInterval is the e2e Prometheus' scrape and rule evaluation
	// interval (its global config, not the shipped job's, which sets
	// neither), so that alerts move within seconds.
	monitoringInterval = 2 * time.Second
	// alertFor is what the e2e rule file lowers every alert's "for" to.
	alertFor = 10 * time.Second
	// alertTimeout bounds a wait for an alert to fire or resolve: a scrape,
	// an evaluation, alertFor and a margin for a loaded machine.
	alertTimeout = 90 * time.Second
	// metricsServiceName and metricsPortName are the Service and port of
	// artifacts/deploy that the shipped job keeps.
	metricsServiceName = samplecontroller.ControllerName + "-metrics"
	metricsPortName    = "metrics"
	// e2ePod is the pod name the static target claims to be.
	e2ePod = "sample-controller-e2e"
)

// allowedLintProblems are the series promtool check metrics may complain
// about, with why they are served all the same (docs/monitoring.md,
// "promtool and the served series"). None is the project's own.
var allowedLintProblems = map[string]string{
	"authentication_token_cache_active_fetch_count": "k8s.io/apiserver's token cache: a gauge whose name ends in _count",
}

// monitoringScrapeConfig returns a prometheus.yml running the shipped job of
// artifacts/monitoring/prometheus-scrape-config.yaml on the controller at
// addr. The job is taken as shipped (scheme, TLS, authorization, metrics
// path, relabelling) except for two things a local run cannot have:
//   - kubernetes_sd_configs becomes a static target, addr, carrying the
//     __meta_kubernetes_* labels endpoints discovery would give the
//     controller's pod (namespace, Service, port name, pod), so the shipped
//     relabel_configs run unchanged on it: keep the Service's metrics port,
//     set namespace, pod and service;
//   - credentials_file becomes tokenFile: the metrics scraper's token (for
//     the metrics audience) instead of a projected token mounted in a pod;
//   - ca_file becomes caFile: the controller's ConfigMap's CA bundle
//     instead of that ConfigMap mounted in a pod. server_name stays as
//     shipped, and verification on: the test's controller keeps its CA in
//     the namespace of artifacts/deploy, so its certificate is for the
//     shipped Service's name.
func monitoringScrapeConfig(t *testing.T, addr, namespace, tokenFile, caFile, ruleFile string) string {
	t.Helper()
	job, err := monitoring.ScrapeJob(cluster.Root)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := job["kubernetes_sd_configs"]; !ok {
		t.Fatalf("%s: the job has no kubernetes_sd_configs to replace", monitoring.ScrapeConfigFile)
	}
	delete(job, "kubernetes_sd_configs")
	job["static_configs"] = []any{map[string]any{
		"targets": []string{addr},
		"labels": map[string]string{
			"__meta_kubernetes_namespace":          namespace,
			"__meta_kubernetes_service_name":       metricsServiceName,
			"__meta_kubernetes_endpoint_port_name": metricsPortName,
			"__meta_kubernetes_pod_name":           e2ePod,
		},
	}}
	auth, ok := job["authorization"].(map[string]any)
	if !ok || auth["credentials_file"] == nil {
		t.Fatalf("%s: the job has no authorization.credentials_file to replace", monitoring.ScrapeConfigFile)
	}
	auth["credentials_file"] = tokenFile
	tlsConfig, ok := job["tls_config"].(map[string]any)
	if !ok || tlsConfig["ca_file"] == nil || tlsConfig["server_name"] == nil {
		t.Fatalf("%s: the job has no tls_config with ca_file and server_name: %v", monitoring.ScrapeConfigFile, job["tls_config"])
	}
	if skip, set := tlsConfig["insecure_skip_verify"]; set {
		t.Fatalf("%s: tls_config sets insecure_skip_verify: %v; the scrape must verify", monitoring.ScrapeConfigFile, skip)
	}
	tlsConfig["ca_file"] = caFile
	config := map[string]any{
		"global": map[string]string{
			"scrape_interval":     monitoringInterval.String(),
			"evaluation_interval": monitoringInterval.String(),
		},
		"rule_files":     []string{ruleFile},
		"scrape_configs": []any{job},
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// startMonitoredController runs a leader-electing controller confined to ns
// with its HTTPS metrics on port.
// Its webhook CA, and so the metrics CA bundle, is kept in the namespace of
// artifacts/deploy, so that its metrics certificate is for the shipped
// Service's name (sample-controller-metrics.sample-controller.svc).
func startMonitoredController(t *testing.T, name, ns string, port int) *framework.Controller {
	t.Helper()
	ensureNamespace(t, deployNamespace)
	c := startController(t, name, controllerArgs(ns,
		"-leader-elect=true", "-leader-elect-namespace="+ns, "-webhook-namespace="+deployNamespace,
		fmt.Sprintf("-metrics-bind-address=127.0.0.1:%d", port))...)
	waitControllerReady(t, c)
	eventually(t, convergeTimeout, c.Name+" leading", func(ctx context.Context) (bool, error) {
		samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
		if err != nil {
			return false, err
		}
		v, _ := leaderGauge(samples, samplecontroller.ControllerName)
		return v == 1, nil
	})
	return c
}

// startShippedPrometheus starts a Prometheus that scrapes the controller c,
// its metrics on addr, with the shipped job as a target of namespace ns,
// and evaluates the shipped rules, every "for" lowered to alertFor:
// nothing else changes (TestPlainRulesLowersOnlyFor in test/monitoring). It
// waits until the target is up, with the labels the shipped relabelling
// sets, and returns Prometheus and the rules.
func startShippedPrometheus(t *testing.T, c *framework.Controller, addr, ns string) (
	*framework.Prometheus, *monitoringv1.PrometheusRule) {
	t.Helper()
	promBin := filepath.Join(cluster.Root, "_output", "bin", "prometheus")
	dir := t.TempDir()
	rule, err := monitoring.LoadPrometheusRule(cluster.Root)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := monitoring.PlainRules(rule, alertFor)
	if err != nil {
		t.Fatal(err)
	}
	ruleFile := filepath.Join(dir, "rules.yaml")
	tokenFile := filepath.Join(dir, "token")
	// The CA bundle as a scraper's pod would mount it from the ConfigMap.
	caFile := filepath.Join(dir, samplecontroller.MetricsCAKey)
	bundle := verifiedMetricsCA(t, c.MetricsURL(), deployNamespace)
	for file, data := range map[string][]byte{ruleFile: rules, tokenFile: []byte(c.ScrapeToken()), caFile: bundle} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config := monitoringScrapeConfig(t, addr, ns, tokenFile, caFile, ruleFile)
	prom, err := framework.StartPrometheus(promBin, dir, filepath.Join(logDir, strings.ReplaceAll(t.Name(), "/", "_")+"-prometheus.log"), config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		prom.Kill()
		if t.Failed() {
			t.Logf("prometheus.yml:\n%s\nlog of Prometheus:\n%s", config, framework.Trim(prom.Log(), 4000))
		}
	})
	eventually(t, alertTimeout, "the controller's target up", func(ctx context.Context) (bool, error) {
		targets, err := prom.Targets(ctx)
		if err != nil {
			return false, err
		}
		if len(targets) != 1 {
			return false, fmt.Errorf("%d targets, want 1", len(targets))
		}
		tg := targets[0]
		if tg.Health != "up" {
			return false, fmt.Errorf("target %s: %s %s", tg.ScrapeURL, tg.Health, tg.LastError)
		}
		want := map[string]string{"job": monitoring.Job, "namespace": ns, "pod": e2ePod, "service": metricsServiceName, "instance": addr}
		if !labelsInclude(tg.Labels, want) {
			return false, fmt.Errorf("target labels %v, want %v", tg.Labels, want)
		}
		return true, nil
	})
	return prom, rule
}

// waitAlert waits until an alert whose labels include want is in state
// ("pending", "firing"), or, with state "", until there is none.
func waitAlert(t *testing.T, prom *framework.Prometheus, name string, want map[string]string, state string) framework.Alert {
	t.Helper()
	var found framework.Alert
	what := fmt.Sprintf("alert %s %v %s", name, want, state)
	if state == "" {
		what = fmt.Sprintf("alert %s %v resolved", name, want)
	}
	err := framework.Poll(context.Background(), monitoringInterval/2, alertTimeout, func(ctx context.Context) (bool, error) {
		alerts, err := prom.Alerts(ctx)
		if err != nil {
			return false, err
		}
		var states []string
		for _, a := range alerts {
			if a.Labels["alertname"] != name || !labelsInclude(a.Labels, want) {
				continue
			}
			states = append(states, a.State)
			if a.State == state {
				found = a
				return true, nil
			}
		}
		if state == "" {
			return len(states) == 0, nil
		}
		return false, fmt.Errorf("states now: %v", states)
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	t.Logf("%s (value %s)", what, found.Value)
	return found
}

func labelsInclude(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// expectSeries checks that expr returns at least one series over
// [from, now] and returns them.
func expectSeries(t *testing.T, prom *framework.Prometheus, expr string, from time.Time) []framework.Series {
	t.Helper()
	series, err := prom.QueryRange(context.Background(), expr, from, time.Now(), monitoringInterval)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	if len(series) == 0 {
		t.Errorf("returned no series over the test's %v:\n%s", time.Since(from).Round(time.Second), expr)
	}
	return series
}

// expectSelectorsMatch checks that every series selector in expr matched at
// least one series during the test: a misspelt metric or label, or a series
// the controller does not serve, matches none.
func expectSelectorsMatch(t *testing.T, prom *framework.Prometheus, expr string, from time.Time) {
	t.Helper()
	ast, err := prom.ParseQuery(context.Background(), expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	window := time.Since(from).Round(time.Second) + time.Second
	selectors := framework.Selectors(ast)
	if len(selectors) == 0 {
		t.Errorf("no series selector in %s", expr)
	}
	for _, sel := range selectors {
		series, err := prom.Query(context.Background(), fmt.Sprintf("last_over_time(%s[%s])", sel, promDuration(window)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		if len(series) == 0 {
			t.Errorf("selector %s matched no series during the test", sel)
		}
	}
}

// promDuration prints a duration as PromQL takes it: whole seconds.
func promDuration(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) + "s" }

// TestMonitoringOnRealPrometheus proves artifacts/monitoring on the
// Prometheus make tools builds. Run alone with
//
//	go test -tags e2e -count=1 -v -timeout 30m -run TestMonitoring ./test/e2e/
func TestMonitoringOnRealPrometheus(t *testing.T) {
	promBin := filepath.Join(cluster.Root, "_output", "bin", "prometheus")
	promtool := filepath.Join(cluster.Root, "_output", "bin", "promtool")
	for _, bin := range []string{promBin, promtool} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%v: run make tools (it builds Prometheus and promtool from hack/tools/prometheus)", err)
		}
	}
	ensureStandardCRD(t)
	ns := newNamespace(t, "monitoring")
	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := startMonitoredController(t, "controller", ns, port)
	if !strings.HasPrefix(c.MetricsURL(), "https://") {
		t.Fatalf("metrics at %s, want HTTPS", c.MetricsURL())
	}

	start := time.Now()
	prom, rule := startShippedPrometheus(t, c, addr, ns)
	healthy := createFoo(t, newFoo(ns, "healthy", "healthy", int32p(1)))
	waitFooReady(t, ns, healthy.Name)

	// A ResourceQuota refuses the next Deployment: the Foo is Ready=False,
	// FailedCreate; its syncs fail; the POSTs are answered 403.
	quotas := cluster.Kube.CoreV1().ResourceQuotas(ns)
	quota := limitDeployments(t, ns, "one-deployment", 1)
	refused := createFoo(t, newFoo(ns, "refused", "refused", int32p(1)))
	waitFooNotReady(t, ns, refused.Name, samplecontroller.ReasonFailedCreate)

	t.Run("SyncErrors and RequestsRefused fire", func(t *testing.T) {
		waitAlert(t, prom, "SampleControllerSyncErrors", map[string]string{"namespace": ns}, "firing")
		waitAlert(t, prom, "SampleControllerRequestsRefused", map[string]string{"namespace": ns, "method": "POST", "code": "403"}, "firing")
	})
	foosServed := func(t *testing.T) {
		t.Helper()
		series, err := prom.Query(context.Background(), metrics.Subsystem+`_foos{job="`+samplecontroller.ControllerName+`"}`)
		if err != nil {
			t.Fatal(err)
		}
		if len(series) == 0 {
			t.Fatal("the controller serves no samplecontroller_foos")
		}
	}
	notReady := map[string]string{"namespace": ns, "ready": "False", "reason": samplecontroller.ReasonFailedCreate}
	t.Run("FoosNotReady fires", func(t *testing.T) {
		foosServed(t)
		a := waitAlert(t, prom, "SampleControllerFoosNotReady", notReady, "firing")
		if a.Value != "1e+00" && a.Value != "1" {
			t.Errorf("value %s, want 1: one Foo is refused", a.Value)
		}
	})

	// The quota is lifted: the Foo converges, and its alert resolves. (The
	// rate alerts resolve once their 5-minute window has no failure.)
	if err := quotas.Delete(context.Background(), quota.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFooReady(t, ns, refused.Name)
	t.Run("FoosNotReady resolves", func(t *testing.T) {
		foosServed(t)
		waitAlert(t, prom, "SampleControllerFoosNotReady", notReady, "")
	})

	// E2E_MONITORING_HOLD (a duration, e.g. 3m) keeps the run going that
	// long, rescaling a Foo every 10 s, so the dashboard picture drawn
	// below has more than a minute to show (how the one in
	// docs/monitoring.md was drawn).
	if hold := os.Getenv("E2E_MONITORING_HOLD"); hold != "" {
		d, err := time.ParseDuration(hold)
		if err != nil {
			t.Fatalf("E2E_MONITORING_HOLD: %v", err)
		}
		for i, end := 0, time.Now().Add(d); time.Now().Before(end); i++ {
			updateFoo(t, ns, healthy.Name, func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(int32(1 + i%3)) })
			time.Sleep(10 * time.Second)
		}
	}

	// Every alert and every dashboard query, against what was scraped
	// during the test (a quota refusal included, so that the error and 403
	// series exist).
	t.Run("alerts return series", func(t *testing.T) {
		for _, a := range monitoring.Alerts(rule) {
			t.Run(a.Alert, func(t *testing.T) {
				expr := a.Expr.String()
				expectSelectorsMatch(t, prom, expr, start)
				watched, ok := monitoring.WithoutThreshold(expr)
				if !ok {
					// absent(...): it returns a series only when its
					// selector returns none, which the check above
					// rules out for the run.
					return
				}
				// What is stripped is the comparison at the top of the
				// expression, nothing more.
				whole, err := prom.ParseQuery(context.Background(), expr)
				if err != nil {
					t.Fatal(err)
				}
				lhs, err := prom.ParseQuery(context.Background(), watched)
				if err != nil {
					t.Fatal(err)
				}
				if whole["type"] != "binaryExpr" || !reflect.DeepEqual(unparen(whole["lhs"]), unparen(lhs)) {
					t.Fatalf("%q is not the left-hand side of the comparison at the top of %q", watched, expr)
				}
				expectSeries(t, prom, watched, start)
			})
		}
	})

	dashboard, err := monitoring.LoadDashboard(cluster.Root)
	if err != nil {
		t.Fatal(err)
	}
	var panels []monitoring.PanelData
	t.Run("dashboard queries return series", func(t *testing.T) {
		for _, p := range dashboard.Panels {
			data := monitoring.PanelData{Title: p.Title, Unit: p.FieldConfig.Defaults.Unit}
			t.Run(p.Title, func(t *testing.T) {
				for _, tg := range p.Targets {
					expr := tg.PromQL()
					expectSelectorsMatch(t, prom, expr, start)
					for _, s := range expectSeries(t, prom, expr, start) {
						line := monitoring.Line{Label: monitoring.Legend(tg.LegendFormat, s.Labels)}
						for _, pt := range s.Points {
							line.Times = append(line.Times, pt.T)
							line.Values = append(line.Values, pt.V)
						}
						data.Lines = append(data.Lines, line)
					}
				}
			})
			panels = append(panels, data)
		}
	})
	// A picture of the dashboard over the run, for docs/monitoring.md.
	svg := monitoring.RenderSVG(dashboard.Title+" (e2e run, TestMonitoringOnRealPrometheus)", start, time.Now(), panels)
	svgPath := filepath.Join(outDir, "dashboard.svg")
	if err := os.WriteFile(svgPath, svg, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard drawn from this run: %s", svgPath)

	t.Run("promtool check metrics", func(t *testing.T) {
		code, body, err := framework.FetchMetrics(context.Background(), c.MetricsURL(), c.ScrapeToken())
		if err != nil || code != 200 {
			t.Fatalf("GET %s: %d %v", c.MetricsURL(), code, err)
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(body)
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line == "" {
				continue
			}
			name, _, _ := strings.Cut(line, " ")
			if why, ok := allowedLintProblems[name]; ok {
				t.Logf("allowed: %s (%s)", line, why)
				continue
			}
			t.Errorf("promtool check metrics: %s", line)
		}
	})

	// The controller goes away: SampleControllerDown fires; it comes back
	// on the same address: the alert resolves.
	t.Run("Down fires and resolves", func(t *testing.T) {
		c.Kill()
		waitAlert(t, prom, "SampleControllerDown", nil, "firing")
		startMonitoredController(t, "restarted", ns, port)
		waitAlert(t, prom, "SampleControllerDown", nil, "")
	})
}

// unparen drops the parentheses around a syntax tree from ParseQuery.
func unparen(node any) any {
	for {
		n, ok := node.(map[string]any)
		if !ok || n["type"] != "parenExpr" {
			return node
		}
		node = n["expr"]
	}
}
