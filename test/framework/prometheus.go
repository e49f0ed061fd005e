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

// A real Prometheus server (the binary make tools builds from
// hack/tools/prometheus), run as a Process, and the parts of its HTTP API
// the monitoring tests use.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Prometheus is a Prometheus server started by StartPrometheus.
type Prometheus struct {
	*Process
	// URL is its base URL, http://127.0.0.1:PORT.
	URL string
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for a
// process that must listen on the same port across restarts.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartPrometheus writes config to dir/prometheus.yml and runs the
// Prometheus binary bin with it, its data in dir/data, on a free port of
// 127.0.0.1, its log in logPath; it waits until Prometheus is ready. Kill
// stops it.
func StartPrometheus(bin, dir, logPath, config string) (*Prometheus, error) {
	configFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := StartProcess("prometheus", logPath, bin,
		"--config.file="+configFile,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
	)
	if err != nil {
		return nil, err
	}
	prom := &Prometheus{Process: p, URL: "http://" + addr}
	err = Poll(context.Background(), 100*time.Millisecond, time.Minute, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("prometheus exited: %s", Trim(p.Log(), 2000))
		}
		resp, err := http.Get(prom.URL + "/-/ready")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("prometheus not ready: %w", err)
	}
	return prom, nil
}

// api GETs an /api/v1 path and decodes the "data" of its answer into out.
func (p *Prometheus) api(ctx context.Context, path string, params url.Values, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/"+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var answer struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("GET /api/v1/%s: %d: %s", path, resp.StatusCode, Trim(string(body), 500))
	}
	if answer.Status != "success" {
		return fmt.Errorf("GET /api/v1/%s?%s: %s", path, params.Encode(), answer.Error)
	}
	return json.Unmarshal(answer.Data, out)
}

// Series is one series of a query's answer: its labels and its points
// (one for an instant query).
type Series struct {
	Labels map[string]string
	Points []Point
}

// Point is one value of a Series; NaN where Prometheus answered NaN.
type Point struct {
	T time.Time
	V float64
}

// promSeries is a series as the query API sends it.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
	Values [][]any           `json:"values"`
}

func (s promSeries) series() Series {
	out := Series{Labels: s.Metric}
	values := s.Values
	if s.Value != nil {
		values = [][]any{s.Value}
	}
	for _, v := range values {
		if len(v) != 2 {
			continue
		}
		ts, _ := v[0].(float64)
		str, _ := v[1].(string)
		f, _ := strconv.ParseFloat(str, 64)
		out.Points = append(out.Points, Point{T: time.UnixMilli(int64(ts * 1000)), V: f})
	}
	return out
}

// Query evaluates an instant query now and returns its series (a vector
// query's; a scalar or string answer is an error).
func (p *Prometheus) Query(ctx context.Context, expr string) ([]Series, error) {
	var data struct {
		ResultType string       `json:"resultType"`
		Result     []promSeries `json:"result"`
	}
	if err := p.api(ctx, "query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %s, want vector", expr, data.ResultType)
	}
	out := make([]Series, len(data.Result))
	for i, s := range data.Result {
		out[i] = s.series()
	}
	return out, nil
}

// QueryRange evaluates a range query over [start, end] every step.
func (p *Prometheus) QueryRange(ctx context.Context, expr string, start, end time.Time,
	step time.Duration) ([]Series, error) {
	var data struct {
		Result []promSeries `json:"result"`
	}
	params := url.Values{
		"query": {expr},
		"start": {strconv.FormatFloat(float64(start.UnixMilli())/1000, 'f', 3, 64)},
		"end":   {strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	if err := p.api(ctx, "query_range", params, &data); err != nil {
		return nil, err
	}
	out := make([]Series, len(data.Result))
	for i, s := range data.Result {
		out[i] = s.series()
	}
	return out, nil
}

// Alert is an alert of /api/v1/alerts: pending or firing.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	Value       string            `json:"value"`
}

// Alerts returns the alerts pending or firing now.
func (p *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	err := p.api(ctx, "alerts", nil, &data)
	return data.Alerts, err
}

// Target is an active target of /api/v1/targets.
type Target struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
}

// Targets returns the active targets.
func (p *Prometheus) Targets(ctx context.Context) ([]Target, error) {
	var data struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	err := p.api(ctx, "targets", url.Values{"state": {"active"}}, &data)
	return data.ActiveTargets, err
}

// ParseQuery parses a PromQL expression with Prometheus' own parser
// (/api/v1/parse_query) and returns its syntax tree as JSON objects.
func (p *Prometheus) ParseQuery(ctx context.Context, expr string) (map[string]any, error) {
	var ast map[string]any
	err := p.api(ctx, "parse_query", url.Values{"query": {expr}}, &ast)
	return ast, err
}

// Selectors returns the series selectors of a syntax tree from ParseQuery,
// each as PromQL (`{__name__="up",job="x"}`, without any range), sorted and
// without duplicates.
func Selectors(ast map[string]any) []string {
	seen := map[string]bool{}
	var walk func(node any)
	walk = func(node any) {
		switch n := node.(type) {
		case map[string]any:
			if t, _ := n["type"].(string); t == "vectorSelector" || t == "matrixSelector" {
				all := n["matchers"].([]any)
				matchers := make([]string, 0, len(all))
				for _, m := range all {
					m := m.(map[string]any)
					matchers = append(matchers, fmt.Sprintf("%s%s%s", m["name"], m["type"], strconv.Quote(m["value"].(string))))
				}
				sort.Strings(matchers)
				seen["{"+strings.Join(matchers, ", ")+"}"] = true
				return
			}
			for _, v := range n {
				walk(v)
			}
		case []any:
			for _, v := range n {
				walk(v)
			}
		}
	}
	walk(ast)
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
