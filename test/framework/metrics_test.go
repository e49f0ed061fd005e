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
	"strings"
	"testing"
)

// The series the tests sum: counters with labels (a quoted comma and an
// escaped quote in a value), a gauge without labels, and a histogram as its
// _bucket, _sum and _count series.
func TestParseMetricsSeries(t *testing.T) {
	const text = `# HELP rest_client_requests_total Requests.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="201",host="a,b",method="POST"} 3
rest_client_requests_total{code="409",host="say \"hi\"",method="PATCH"} 2
# HELP up Up.
# TYPE up gauge
up 1
# HELP d Duration.
# TYPE d histogram
d_bucket{le="0.1"} 4
d_bucket{le="+Inf"} 5
d_sum 0.7
d_count 5
`
	samples, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 7 {
		t.Errorf("%d samples, want 7: %+v", len(samples), samples)
	}
	for _, c := range []struct {
		name  string
		match func(map[string]string) bool
		want  float64
	}{
		{"rest_client_requests_total", nil, 5},
		{"rest_client_requests_total", func(l map[string]string) bool { return l["host"] == "a,b" && l["method"] == "POST" }, 3},
		{"rest_client_requests_total", func(l map[string]string) bool { return l["host"] == `say "hi"` }, 2},
		{"up", func(l map[string]string) bool { return len(l) == 0 }, 1},
		{"d_bucket", func(l map[string]string) bool { return l["le"] == "+Inf" }, 5},
		{"d_sum", nil, 0.7},
		{"d_count", nil, 5},
	} {
		if got := Sum(samples, c.name, c.match); got != c.want {
			t.Errorf("Sum(%s) = %v, want %v", c.name, got, c.want)
		}
	}
	if _, err := ParseMetrics(strings.NewReader("not a metric line\n")); err == nil {
		t.Error("a malformed exposition parsed without error")
	}
}
