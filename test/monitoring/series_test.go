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

// The alerts and the dashboard name series by their metric names, strings
// Go cannot check. Renaming the controller's metric prefix (metrics.Subsystem)
// or one of its metrics without them leaves them selecting nothing: alerts
// that never fire, panels that stay empty, and nothing fails but the long
// e2e TestMonitoringOnRealPrometheus. These checks run in make unit.

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/tools/cache"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	listers "github.com/kube-samples/sample-controller/pkg/generated/listers/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/metrics"
)

// foreignSeries are the prefixes of the series the alerts and the dashboard
// may name that are not the controller's own: client-go's (its workqueue,
// REST client and leader election metrics, which pkg/metrics registers),
// the Go runtime's and the process's, and Prometheus' own up.
// TestMonitoringOnRealPrometheus proves each on a real scrape.
var foreignSeries = []string{"workqueue_", "rest_client_", "leader_election_", "go_", "process_", "up"}

// ownSeries returns the names of the series the controller's own metrics
// (pkg/metrics) serve, a histogram's _bucket, _sum and _count among them.
func ownSeries(t *testing.T) []string {
	t.Helper()
	// A vector serves nothing until it has a child.
	metrics.ObserveSync(nil, 0)
	metrics.EventsDropped.WithLabelValues("Normal")
	metrics.WebhookRefusedCAs.WithLabelValues("signing", "key")
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(testfixtures.NewFoo("test", 1)); err != nil {
		t.Fatal(err)
	}
	readiness := k8smetrics.NewKubeRegistry()
	readiness.CustomMustRegister(metrics.NewFooReadinessCollector(listers.NewFooLister(indexer).List))

	var names []string
	for _, gatherer := range []interface {
		Gather() ([]*dto.MetricFamily, error)
	}{legacyregistry.DefaultGatherer, readiness} {
		families, err := gatherer.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			name := f.GetName()
			if !strings.HasPrefix(name, metrics.Subsystem+"_") {
				continue
			}
			if f.GetType() == dto.MetricType_HISTOGRAM {
				names = append(names, name+"_bucket", name+"_sum", name+"_count")
			} else {
				names = append(names, name)
			}
		}
	}
	return names
}

var (
	// promqlString, promqlSelector and promqlRange are a string literal,
	// the label matchers of a selector, and a range or subquery.
	promqlString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promqlSelector = regexp.MustCompile(`\{[^}]*\}`)
	promqlRange    = regexp.MustCompile(`\[[^\]]*\]`)
	// promqlGrouping is a clause that lists labels, not series.
	promqlGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlName     = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
)

// metricNames returns the metric names a PromQL expression selects: the
// identifiers left once strings, label matchers, ranges and grouping
// clauses are dropped, other than functions and operators. Enough for the
// expressions of this repository; the e2e suite parses them with Prometheus.
func metricNames(expr string) []string {
	for _, re := range []*regexp.Regexp{promqlString, promqlSelector, promqlRange, promqlGrouping} {
		expr = re.ReplaceAllString(expr, " ")
	}
	var names []string
	for _, loc := range promqlName.FindAllStringIndex(expr, -1) {
		name := expr[loc[0]:loc[1]]
		if strings.HasPrefix(strings.TrimSpace(expr[loc[1]:]), "(") {
			continue // a function or an aggregation
		}
		switch name {
		case "and", "or", "unless", "bool", "offset":
			continue
		}
		names = append(names, name)
	}
	return names
}

func TestMetricNamesOfPromQL(t *testing.T) {
	for expr, want := range map[string][]string{
		`absent(up{job="a"} == 1)`: {"up"},
		`sum by (namespace, le) (rate(a_bucket{job="x", code=~"4.."}[5m])) > 0`:                    {"a_bucket"},
		"max by (name) (\n  a{job=\"x\"}\n  * on (job, instance) group_left ()\n  b{job=\"x\"}\n)": {"a", "b"},
		`histogram_quantile(0.99, sum by (le) (rate(c[$__rate_interval]))) and bool d`:             {"c", "d"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", expr, got, want)
		}
	}
}

// Every series an alert or a dashboard panel names is one the controller
// serves: its own (pkg/metrics, prefix metrics.Subsystem) exactly, or one of
// client-go's, the runtime's or Prometheus'.
func TestAlertsAndDashboardNameOnlyServedSeries(t *testing.T) {
	own := ownSeries(t)
	if len(own) == 0 {
		t.Fatalf("pkg/metrics serves no series with the prefix %s_", metrics.Subsystem)
	}
	check := func(where, expr string) {
		t.Helper()
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: names no series: %s", where, expr)
		}
		for _, name := range names {
			foreign := slices.ContainsFunc(foreignSeries, func(prefix string) bool {
				return strings.HasPrefix(name, prefix) && (strings.HasSuffix(prefix, "_") || name == prefix)
			})
			if !foreign && !slices.Contains(own, name) {
				t.Errorf("%s: names %s, which the controller does not serve; its own series are %v (prefix metrics.Subsystem %q)",
					where, name, own, metrics.Subsystem)
			}
		}
	}
	rule, err := LoadPrometheusRule(root(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range Alerts(rule) {
		check(RuleFile+": alert "+a.Alert, a.Expr.String())
	}
	d, err := LoadDashboard(root(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			check(DashboardFile+": panel "+p.Title, tg.PromQL())
		}
	}
}
