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
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Sample is one series of a Prometheus text exposition.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetrics reads the Prometheus text format: enough of it for counters
// and gauges (comments skipped, label values without escaped quotes).
func ParseMetrics(r io.Reader) ([]Sample, error) {
	var samples []Sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := Sample{Labels: map[string]string{}}
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				return nil, fmt.Errorf("malformed metric line %q", line)
			}
			s.Name = line[:i]
			for _, pair := range splitLabels(line[i+1 : j]) {
				k, v, ok := strings.Cut(pair, "=")
				if ok {
					s.Labels[k] = strings.Trim(v, "\"")
				}
			}
			rest = line[j+1:]
		} else {
			name, r, _ := strings.Cut(line, " ")
			s.Name, rest = name, r
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("no value in metric line %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		s.Value = v
		samples = append(samples, s)
	}
	return samples, sc.Err()
}

// splitLabels splits a="x",b="y,z" at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	inQuotes, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			inQuotes = !inQuotes
		case ',':
			if !inQuotes {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
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

// ScrapeURL fetches and parses a /metrics endpoint over plain HTTP.
func ScrapeURL(ctx context.Context, url string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return ParseMetrics(resp.Body)
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
