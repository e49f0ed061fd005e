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

// Package monitoring reads the monitoring artifacts of artifacts/monitoring
// (ServiceMonitor, PrometheusRule, Grafana dashboard, plain scrape config)
// the way their consumers do, for the tests that prove them: the unit tests
// beside this file (strict decoding into the Prometheus Operator's types,
// runbooks, the plain rule file) and the e2e suite's TestMonitoring*, which
// runs them on a real Prometheus.
package monitoring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// Paths relative to the repository root.
const (
	// Dir is the kustomization an operator applies: kubectl apply -k.
	Dir = "artifacts/monitoring"
	// RuleFile holds the PrometheusRule, the source of the alerts.
	RuleFile = Dir + "/prometheusrule.yaml"
	// PlainRuleFile is the same groups as a Prometheus rule file, for a
	// Prometheus without the operator; generated from RuleFile (PlainRules).
	PlainRuleFile = Dir + "/prometheus-rules.yaml"
	// ScrapeConfigFile is the scrape job for a Prometheus without the
	// operator.
	ScrapeConfigFile = Dir + "/prometheus-scrape-config.yaml"
	// DashboardFile is the Grafana dashboard.
	DashboardFile = Dir + "/dashboards/sample-controller.json"
	// Job is the job label both scrape configurations give the targets,
	// the controller's name; every alert and dashboard query selects it.
	Job = samplecontroller.ControllerName
)

// Kustomize renders a kustomization directory (relative to root) as kubectl
// apply -k does, with kubectl's built-in kustomize, and returns the YAML
// stream.
func Kustomize(root, dir string) ([]byte, error) {
	cmd := exec.Command("kubectl", "kustomize", dir)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, stderr.String())
	}
	return out, nil
}

// SplitDocuments splits a YAML stream at its "---" lines, dropping empty
// documents.
func SplitDocuments(stream []byte) [][]byte {
	var docs [][]byte
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(stream), -1) {
		if strings.TrimSpace(doc) != "" {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}

// UnmarshalStrict decodes a YAML or JSON document into out as the API server
// would if it knew nothing but out's type, and stricter: a field out does not
// have, a field spelled in another case, or a duplicate field is an error.
func UnmarshalStrict(doc []byte, out any) error {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(data, out,
		sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("strict decoding: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// DecodeObject decodes one document of Dir strictly into the Go type of its
// apiVersion and kind: the Prometheus Operator's for its kinds, client-go's
// for a ConfigMap. A kind that is neither is an error.
func DecodeObject(doc []byte) (metav1.Object, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, err
	}
	var obj interface {
		metav1.Object
	}
	switch meta.GroupVersionKind() {
	case monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.ServiceMonitorsKind):
		obj = &monitoringv1.ServiceMonitor{}
	case monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusRuleKind):
		obj = &monitoringv1.PrometheusRule{}
	case corev1.SchemeGroupVersion.WithKind("ConfigMap"):
		obj = &corev1.ConfigMap{}
	default:
		return nil, fmt.Errorf("unexpected %s %s", meta.APIVersion, meta.Kind)
	}
	if err := UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", meta.Kind, err)
	}
	return obj, nil
}

// LoadPrometheusRule reads RuleFile strictly.
func LoadPrometheusRule(root string) (*monitoringv1.PrometheusRule, error) {
	data, err := os.ReadFile(filepath.Join(root, RuleFile))
	if err != nil {
		return nil, err
	}
	var rule monitoringv1.PrometheusRule
	if err := UnmarshalStrict(data, &rule); err != nil {
		return nil, fmt.Errorf("%s: %w", RuleFile, err)
	}
	return &rule, nil
}

// Alerts returns the alerting rules of every group.
func Alerts(rule *monitoringv1.PrometheusRule) []monitoringv1.Rule {
	var alerts []monitoringv1.Rule
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r)
			}
		}
	}
	return alerts
}

// plainRuleHeader heads PlainRuleFile.
const plainRuleHeader = `# The sample-controller's alerts as a Prometheus rule file, for a Prometheus
# without the Prometheus Operator: list it under rule_files: in prometheus.yml.
# Generated from prometheusrule.yaml, the source: do not edit; after changing
# that file run
#   go test ./test/monitoring -run TestPlainRuleFileIsCurrent -update
`

// PlainRules renders the groups of a PrometheusRule as a Prometheus rule
// file. With maxFor > 0, every alert's "for" longer than maxFor is lowered
// to maxFor, and nothing else changes: the e2e suite's way to see alerts
// fire within a test.
func PlainRules(rule *monitoringv1.PrometheusRule, maxFor time.Duration) ([]byte, error) {
	groups := rule.DeepCopy().Spec.Groups
	if maxFor > 0 {
		lowered := monitoringv1.Duration(maxFor.String())
		for gi := range groups {
			for ri := range groups[gi].Rules {
				r := &groups[gi].Rules[ri]
				if r.For == nil {
					continue
				}
				d, err := time.ParseDuration(string(*r.For))
				if err != nil {
					return nil, fmt.Errorf("alert %s: for: %w", r.Alert, err)
				}
				if d > maxFor {
					r.For = &lowered
				}
			}
		}
	}
	body, err := yaml.Marshal(struct {
		Groups []monitoringv1.RuleGroup `json:"groups"`
	}{groups})
	if err != nil {
		return nil, err
	}
	return append([]byte(plainRuleHeader), body...), nil
}

// Dashboard is the part of a Grafana dashboard the tests read.
type Dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			AllValue string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

// Panel is one panel of a Dashboard.
type Panel struct {
	ID          int      `json:"id"`
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Targets     []Target `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

// Target is one query of a Panel.
type Target struct {
	RefID        string `json:"refId"`
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
}

// LoadDashboard reads DashboardFile.
func LoadDashboard(root string) (*Dashboard, error) {
	data, err := os.ReadFile(filepath.Join(root, DashboardFile))
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", DashboardFile, err)
	}
	return &d, nil
}

// Grafana's variables in the dashboard's queries, and what a query is
// evaluated with outside Grafana: every namespace, and a rate window of one
// minute, which holds several samples at any scrape interval up to 15 s
// ($__rate_interval is at least four scrape intervals).
var dashboardVariables = strings.NewReplacer(
	"$__rate_interval", "1m",
	"$namespace", ".*",
)

// PromQL returns a target's query as Prometheus evaluates it, with
// Grafana's variables replaced.
func (t Target) PromQL() string { return dashboardVariables.Replace(t.Expr) }

// ScrapeJob reads the single job of ScrapeConfigFile.
func ScrapeJob(root string) (map[string]any, error) {
	data, err := os.ReadFile(filepath.Join(root, ScrapeConfigFile))
	if err != nil {
		return nil, err
	}
	var config struct {
		ScrapeConfigs []map[string]any `json:"scrape_configs"`
	}
	if err := UnmarshalStrict(data, &config); err != nil {
		return nil, fmt.Errorf("%s: %w", ScrapeConfigFile, err)
	}
	if len(config.ScrapeConfigs) != 1 {
		return nil, fmt.Errorf("%s: %d jobs, want 1", ScrapeConfigFile, len(config.ScrapeConfigs))
	}
	return config.ScrapeConfigs[0], nil
}

// ThresholdRE matches the comparison with a number that ends an alert
// expression such as `sum(rate(x[5m])) > 0`: what the alert adds to the
// series it watches.
var ThresholdRE = regexp.MustCompile(`\s*(==|!=|>=|<=|>|<)\s*[0-9.]+\s*$`)

// WithoutThreshold returns the expression without a trailing comparison
// with a number, and whether it had one.
func WithoutThreshold(expr string) (string, bool) {
	expr = strings.TrimSpace(expr)
	loc := ThresholdRE.FindStringIndex(expr)
	if loc == nil {
		return expr, false
	}
	return expr[:loc[0]], true
}
