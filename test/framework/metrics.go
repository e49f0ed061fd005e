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

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of a Prometheus exposition: histograms and summaries
// come as their _bucket (with label le), _sum and _count series, as
// Prometheus stores them.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetrics reads the Prometheus text format with the Prometheus
// ecosystem's own parser (github.com/prometheus/common/expfmt).
func ParseMetrics(r io.Reader) ([]Sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	familyList := make([]*dto.MetricFamily, 0, len(families))
	for _, f := range families {
		familyList = append(familyList, f)
	}
	vector, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, familyList...)
	if err != nil {
		return nil, err
	}
	samples := make([]Sample, 0, len(vector))
	for _, v := range vector {
		s := Sample{Name: string(v.Metric[model.MetricNameLabel]), Labels: map[string]string{}, Value: float64(v.Value)}
		for k, lv := range v.Metric {
			if k != model.MetricNameLabel {
				s.Labels[string(k)] = string(lv)
			}
		}
		samples = append(samples, s)
	}
	return samples, nil
}

// Sum adds up the samples named name whose labels satisfy match (nil: all).
func Sum(samples []Sample, name string, match func(labels map[string]string) bool) float64 {
	total := 0.0
	for _, s := range samples {
		if s.Name == name && (match == nil || match(s.Labels)) {
			total += s.Value
		}
	}
	return total
}

// scrapeClient fetches /metrics. It does not verify the server's
// certificate: it scrapes every controller of the suite, some without the
// webhook and so with a self-signed certificate, the others signed by the CA
// of whichever webhook namespace the test gives. Verification is tested on
// its own (verifiedMetricsCA in test/e2e, and the real Prometheus of
// TestMonitoringOnRealPrometheus).
var scrapeClient = &http.Client{
	Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed, see above
	},
	Timeout: 30 * time.Second,
}

// FetchMetrics GETs a /metrics URL with token as bearer token ("": none) and
// returns the status code and body.
func FetchMetrics(ctx context.Context, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// ScrapeURL fetches and parses a controller's /metrics endpoint (a URL
// from MetricsURL), HTTPS or plain HTTP, as its cluster's metrics scraper:
// with the token of the ServiceAccount bound to the metrics-reader
// ClusterRole, set up by the cluster's first StartController (see
// metrics_scraper.go).
func ScrapeURL(ctx context.Context, url string) ([]Sample, error) {
	token, _ := metricsTokens.Load(url)
	tokenString, _ := token.(string)
	code, body, err := FetchMetrics(ctx, url, tokenString)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", url, code, Trim(body, 500))
	}
	return ParseMetrics(strings.NewReader(body))
}

// ScrapeAPIServer fetches and parses the API server's own /metrics.
func (c *Cluster) ScrapeAPIServer(ctx context.Context) ([]Sample, error) {
	data, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return ParseMetrics(strings.NewReader(string(data)))
}

// IsWriteVerb reports whether an HTTP method or API verb changes state.
func IsWriteVerb(verb string) bool {
	switch strings.ToUpper(verb) {
	case "POST", "PUT", "PATCH", "DELETE", "APPLY", "CREATE", "UPDATE", "DELETECOLLECTION":
		return true
	}
	return false
}
