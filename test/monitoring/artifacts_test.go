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

package monitoring

// What can be proven about artifacts/monitoring without a cluster or a
// Prometheus: that what kubectl apply -k sends decodes strictly into the
// Prometheus Operator's API types, that it scrapes what artifacts/deploy
// serves, that every alert has its runbook and its promtool tests, and that
// the plain rule file is the PrometheusRule's. make monitoring runs promtool
// on the rules; the e2e suite's TestMonitoring* runs everything on a real
// Prometheus.

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

var update = flag.Bool("update", false, "rewrite "+PlainRuleFile+" from "+RuleFile)

// root is the repository root, two levels above this package.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// rendered returns the objects kubectl apply -k artifacts/monitoring sends,
// each decoded strictly.
func rendered(t *testing.T) []metav1.Object {
	t.Helper()
	stream, err := Kustomize(root(t), Dir)
	if err != nil {
		t.Fatal(err)
	}
	docs := SplitDocuments(stream)
	objs := make([]metav1.Object, 0, len(docs))
	for _, doc := range docs {
		obj, err := DecodeObject(doc)
		if err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		objs = append(objs, obj)
	}
	return objs
}

func TestKustomizationDecodesStrictlyIntoOperatorTypes(t *testing.T) {
	var kinds []string
	for _, obj := range rendered(t) {
		if obj.GetNamespace() != samplecontroller.ControllerName {
			t.Errorf("%T %s: namespace %q, want %s (the Service's)", obj, obj.GetName(), obj.GetNamespace(), samplecontroller.ControllerName)
		}
		switch o := obj.(type) {
		case *monitoringv1.ServiceMonitor:
			kinds = append(kinds, "ServiceMonitor")
		case *monitoringv1.PrometheusRule:
			kinds = append(kinds, "PrometheusRule")
			if len(Alerts(o)) == 0 {
				t.Error("the PrometheusRule has no alerts")
			}
		case *corev1.ConfigMap:
			kinds = append(kinds, "ConfigMap")
			if o.Labels["grafana_dashboard"] != "1" {
				t.Errorf("ConfigMap %s: labels %v lack grafana_dashboard: \"1\", which Grafana's dashboard sidecar looks for", o.Name, o.Labels)
			}
			want, err := os.ReadFile(filepath.Join(root(t), DashboardFile))
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Data[filepath.Base(DashboardFile)]; got != string(want) {
				t.Errorf("ConfigMap %s: %s is not %s", o.Name, filepath.Base(DashboardFile), DashboardFile)
			}
		}
	}
	slices.Sort(kinds)
	if want := []string{"ConfigMap", "PrometheusRule", "ServiceMonitor"}; !slices.Equal(kinds, want) {
		t.Errorf("kubectl kustomize %s: kinds %v, want %v", Dir, kinds, want)
	}
}

// The decoding above would let a misspelt field through if it were lenient.
func TestUnmarshalStrictRefusesWhatTheOperatorWouldDrop(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":     "spec:\n  endpoints:\n  - port: metrics\n    bearerTokenFiles: /token\n",
		"field's case":      "spec:\n  endpoints:\n  - Port: metrics\n",
		"duplicate field":   "spec:\n  jobLabel: a\n  jobLabel: b\n",
		"misplaced field":   "spec:\n  scheme: https\n",
		"wrong value type":  "spec:\n  endpoints: metrics\n",
		"unknown top-level": "specs: {}\n",
	} {
		if err := UnmarshalStrict([]byte(doc), &monitoringv1.ServiceMonitor{}); err == nil {
			t.Errorf("%s: decoded without error:\n%s", name, doc)
		}
	}
	var ok monitoringv1.ServiceMonitor
	if err := UnmarshalStrict([]byte("spec:\n  endpoints:\n  - port: metrics\n"), &ok); err != nil || ok.Spec.Endpoints[0].Port != "metrics" {
		t.Errorf("a valid document: %v, %+v", err, ok.Spec)
	}
}

// metricsService is the name of the Service of artifacts/deploy that serves
// the replicas' /metrics.
const metricsService = samplecontroller.ControllerName + "-metrics"

// deployedMetricsService is the Service of artifacts/deploy that serves the
// replicas' /metrics.
func deployedMetricsService(t *testing.T) *corev1.Service {
	t.Helper()
	out, err := Kustomize(root(t), "artifacts/deploy")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range SplitDocuments(out) {
		var svc corev1.Service
		if err := yaml.Unmarshal(doc, &svc); err != nil {
			t.Fatal(err)
		}
		if svc.Kind == "Service" && svc.Name == metricsService {
			return &svc
		}
	}
	t.Fatalf("artifacts/deploy has no Service %s", metricsService)
	return nil
}

func TestServiceMonitorScrapesTheDeployedMetricsService(t *testing.T) {
	svc := deployedMetricsService(t)
	var monitors []*monitoringv1.ServiceMonitor
	for _, obj := range rendered(t) {
		if sm, ok := obj.(*monitoringv1.ServiceMonitor); ok {
			monitors = append(monitors, sm)
		}
	}
	if len(monitors) != 1 {
		t.Fatalf("%d ServiceMonitors, want 1", len(monitors))
	}
	sm := monitors[0]
	selector, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if !selector.Matches(labels.Set(svc.Labels)) {
		t.Errorf("selector %v does not select Service %s (labels %v)", selector, svc.Name, svc.Labels)
	}
	if !slices.Contains(sm.Spec.NamespaceSelector.MatchNames, svc.Namespace) {
		t.Errorf("namespaceSelector %v leaves out the Service's namespace %s", sm.Spec.NamespaceSelector, svc.Namespace)
	}
	if got := svc.Labels[sm.Spec.JobLabel]; got != Job {
		t.Errorf("jobLabel %q: the Service's value is %q, want %q, the job the alerts and the dashboard select", sm.Spec.JobLabel, got, Job)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints, want 1", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
		t.Errorf("endpoint port %q is not a port of Service %s", ep.Port, svc.Name)
	}
	if ep.Scheme == nil || strings.ToLower(string(*ep.Scheme)) != "https" {
		t.Errorf("endpoint scheme %v, want https: the controller serves /metrics over HTTPS only", ep.Scheme)
	}
	if ep.BearerTokenFile == "" {
		t.Error("endpoint sends no token: the controller answers 401 without one")
	}
}

// The plain scrape job asks for what the ServiceMonitor asks of the operator.
func TestScrapeConfigMatchesServiceMonitor(t *testing.T) {
	svc := deployedMetricsService(t)
	job, err := ScrapeJob(root(t))
	if err != nil {
		t.Fatal(err)
	}
	var sm *monitoringv1.ServiceMonitor
	for _, obj := range rendered(t) {
		if o, ok := obj.(*monitoringv1.ServiceMonitor); ok {
			sm = o
		}
	}
	type scrapeJob struct {
		JobName       string `json:"job_name"`
		Scheme        string `json:"scheme"`
		MetricsPath   string `json:"metrics_path"`
		Authorization struct {
			Type            string `json:"type"`
			CredentialsFile string `json:"credentials_file"`
		} `json:"authorization"`
		TLSConfig struct {
			InsecureSkipVerify bool   `json:"insecure_skip_verify"`
			CAFile             string `json:"ca_file"`
			ServerName         string `json:"server_name"`
		} `json:"tls_config"`
		KubernetesSDConfigs []struct {
			Role       string `json:"role"`
			Namespaces struct {
				Names []string `json:"names"`
			} `json:"namespaces"`
		} `json:"kubernetes_sd_configs"`
		RelabelConfigs []struct {
			SourceLabels []string `json:"source_labels"`
			Regex        string   `json:"regex"`
			Action       string   `json:"action"`
			TargetLabel  string   `json:"target_label"`
		} `json:"relabel_configs"`
	}
	data, err := yaml.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	var j scrapeJob
	if err := UnmarshalStrict(data, &j); err != nil {
		t.Fatalf("%s: %v", ScrapeConfigFile, err)
	}
	ep := sm.Spec.Endpoints[0]
	if j.JobName != Job {
		t.Errorf("job_name %q, want %q", j.JobName, Job)
	}
	if j.Scheme != "https" || j.MetricsPath != ep.Path {
		t.Errorf("scheme %q, metrics_path %q; want https and the ServiceMonitor's %q", j.Scheme, j.MetricsPath, ep.Path)
	}
	if j.Authorization.Type != "Bearer" || j.Authorization.CredentialsFile != ep.BearerTokenFile {
		t.Errorf("authorization %+v, want Bearer from %s as the ServiceMonitor", j.Authorization, ep.BearerTokenFile)
	}
	// Both verify the controller's certificate: the CA bundle it publishes,
	// for the metrics Service's name in the Service's namespace.
	wantServerName := samplecontroller.MetricsServiceName + "." + svc.Namespace + ".svc"
	if j.TLSConfig.InsecureSkipVerify || j.TLSConfig.ServerName != wantServerName ||
		j.TLSConfig.CAFile != "/etc/prometheus/"+samplecontroller.MetricsCAConfigMapName+"/"+samplecontroller.MetricsCAKey {
		t.Errorf("tls_config %+v, want ca_file the ConfigMap %s's %s mounted under /etc/prometheus/%[2]s, server_name %[4]q, verified",
			j.TLSConfig, samplecontroller.MetricsCAConfigMapName, samplecontroller.MetricsCAKey, wantServerName)
	}
	if tls := ep.TLSConfig; tls == nil || tls.InsecureSkipVerify != nil || tls.ServerName == nil ||
		*tls.ServerName != wantServerName || tls.CA.ConfigMap == nil || tls.CA.Secret != nil ||
		tls.CA.ConfigMap.Name != samplecontroller.MetricsCAConfigMapName || tls.CA.ConfigMap.Key != samplecontroller.MetricsCAKey {
		t.Errorf("ServiceMonitor tlsConfig %+v, want ca from ConfigMap %s key %s, serverName %q, verified",
			tls, samplecontroller.MetricsCAConfigMapName, samplecontroller.MetricsCAKey, wantServerName)
	}
	// The token is a projected one for the controller's audience, not the
	// pod's default one, which the controller refuses.
	if ep.BearerTokenFile == "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("bearerTokenFile %s is the pod's default token, for the API server's audience: the controller refuses it", ep.BearerTokenFile)
	}
	if len(j.KubernetesSDConfigs) != 1 || j.KubernetesSDConfigs[0].Role != "endpoints" ||
		!slices.Equal(j.KubernetesSDConfigs[0].Namespaces.Names, []string{svc.Namespace}) {
		t.Errorf("kubernetes_sd_configs %+v, want role endpoints in namespace %s", j.KubernetesSDConfigs, svc.Namespace)
	}
	keep := svc.Name + ";" + ep.Port
	targets := map[string]bool{}
	kept := false
	for _, r := range j.RelabelConfigs {
		if r.Action == "keep" && r.Regex == keep &&
			slices.Equal(r.SourceLabels, []string{"__meta_kubernetes_service_name", "__meta_kubernetes_endpoint_port_name"}) {
			kept = true
		}
		targets[r.TargetLabel] = true
	}
	if !kept {
		t.Errorf("no relabel rule keeps only Service %s, port %s (regex %q)", svc.Name, ep.Port, keep)
	}
	// The labels the operator gives every target, which the alerts
	// aggregate by and the dashboard shows.
	for _, l := range []string{"namespace", "pod", "service"} {
		if !targets[l] {
			t.Errorf("no relabel rule sets the %s label, which the operator sets", l)
		}
	}
}

func TestEveryAlertHasItsRunbookAndSelectsTheJob(t *testing.T) {
	rule, err := LoadPrometheusRule(root(t))
	if err != nil {
		t.Fatal(err)
	}
	// The runbooks are the alerts' sections of the operator's document: each
	// URL names that document on GitHub, and the document has the section.
	const repo = "https://github.com/kube-samples/sample-controller/blob/main/"
	const runbookDoc = "docs/operations.md"
	docs, err := os.ReadFile(filepath.Join(root(t), filepath.FromSlash(runbookDoc)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range Alerts(rule) {
		if seen[a.Alert] {
			t.Errorf("alert %s defined twice", a.Alert)
		}
		seen[a.Alert] = true
		if !strings.HasPrefix(a.Alert, "SampleController") {
			t.Errorf("alert %s: name does not start with SampleController", a.Alert)
		}
		if s := a.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
			t.Errorf("alert %s: severity %q, want critical, warning or info", a.Alert, s)
		}
		for _, k := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(a.Annotations[k]) == "" {
				t.Errorf("alert %s: no %s annotation", a.Alert, k)
			}
		}
		if want := repo + runbookDoc + "#" + strings.ToLower(a.Alert); a.Annotations["runbook_url"] != want {
			t.Errorf("alert %s: runbook_url %q, want %q", a.Alert, a.Annotations["runbook_url"], want)
		}
		// A heading of the alert's name is what GitHub gives the anchor
		// the URL ends in.
		heading := regexp.MustCompile(`(?m)^#{2,4} ` + regexp.QuoteMeta(a.Alert) + `\s*$`)
		if !heading.Match(docs) {
			t.Errorf("alert %s: %s has no runbook section headed %q", a.Alert, runbookDoc, "### "+a.Alert)
		}
		if !strings.Contains(a.Expr.String(), `job="`+Job+`"`) {
			t.Errorf("alert %s: expression does not select job=%q:\n%s", a.Alert, Job, a.Expr.String())
		}
	}
}

func TestPlainRuleFileIsCurrent(t *testing.T) {
	rule, err := LoadPrometheusRule(root(t))
	if err != nil {
		t.Fatal(err)
	}
	want, err := PlainRules(rule, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root(t), PlainRuleFile)
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not generated from the current %s; run\n  go test ./test/monitoring -run TestPlainRuleFileIsCurrent -update", PlainRuleFile, RuleFile)
	}
}

// Lowering "for" changes only "for".
func TestPlainRulesLowersOnlyFor(t *testing.T) {
	rule, err := LoadPrometheusRule(root(t))
	if err != nil {
		t.Fatal(err)
	}
	lowered, err := PlainRules(rule, 10e9)
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := PlainRules(rule, 0)
	if err != nil {
		t.Fatal(err)
	}
	forLine := regexp.MustCompile(`(?m)^(\s*for: ).*$`)
	if !bytes.Equal(forLine.ReplaceAll(lowered, []byte("${1}X")), forLine.ReplaceAll(shipped, []byte("${1}X"))) {
		t.Errorf("lowering for changed more than the for: lines:\n%s", lowered)
	}
	if !regexp.MustCompile(`(?m)^\s*for: 10s$`).Match(lowered) {
		t.Errorf("no for: lowered to 10s:\n%s", lowered)
	}
}

// rulesTests is the promtool unit test file, relative to the root.
const rulesTests = "test/monitoring/rules_test.yaml"

// Every alert has a promtool case where it fires and one where it does not.
func TestPromtoolTestsCoverEveryAlert(t *testing.T) {
	rule, err := LoadPrometheusRule(root(t))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root(t), rulesTests))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			AlertRuleTests []struct {
				Alertname string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if want := []string{"../../" + PlainRuleFile}; !slices.Equal(file.RuleFiles, want) {
		t.Errorf("%s: rule_files %v, want %v", rulesTests, file.RuleFiles, want)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, at := range tc.AlertRuleTests {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				silent[at.Alertname] = true
			}
		}
	}
	for _, a := range Alerts(rule) {
		if !fires[a.Alert] {
			t.Errorf("%s: no case where %s fires", rulesTests, a.Alert)
		}
		if !silent[a.Alert] {
			t.Errorf("%s: no case where %s stays silent", rulesTests, a.Alert)
		}
	}
}

func TestDashboardQueriesSelectTheJob(t *testing.T) {
	d, err := LoadDashboard(root(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Panels) == 0 {
		t.Fatal("no panels")
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, `job="`+Job+`"`) {
				t.Errorf("panel %q: query %s does not select job=%q", p.Title, tg.Expr, Job)
			}
			if strings.Contains(tg.PromQL(), "$") {
				t.Errorf("panel %q: query %s has a variable PromQL() does not replace", p.Title, tg.Expr)
			}
		}
	}
}

func TestWithoutThreshold(t *testing.T) {
	for expr, want := range map[string]string{
		"sum(rate(x[5m])) > 0\n":          "sum(rate(x[5m]))",
		"max by (a) (\n  y\n) > 100":      "max by (a) (\n  y\n)",
		`sum(z{job="a"}) != 1`:            `sum(z{job="a"})`,
		`absent(up{job="a"} == 1)`:        "",
		"histogram_quantile(0.99, h) > 6": "histogram_quantile(0.99, h)",
	} {
		got, ok := WithoutThreshold(expr)
		if want == "" {
			if ok {
				t.Errorf("%q: stripped to %q, want no threshold", expr, got)
			}
			continue
		}
		if !ok || got != want {
			t.Errorf("%q: got %q, %v; want %q", expr, got, ok, want)
		}
	}
}
