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

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestLegend(t *testing.T) {
	labels := map[string]string{"method": "POST", "code": "403"}
	for format, want := range map[string]string{
		"{{method}} {{code}}": "POST 403",
		"p99 {{ method }}":    "p99 POST",
		"{{missing}} x":       "x",
		"":                    "",
	} {
		if got := Legend(format, labels); got != want {
			t.Errorf("Legend(%q) = %q, want %q", format, got, want)
		}
	}
}

// The picture is well-formed SVG with every panel, a gap where a value is
// NaN, and "No data" for a panel without series.
func TestRenderSVG(t *testing.T) {
	from := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	times := []time.Time{from, from.Add(time.Minute), from.Add(2 * time.Minute), from.Add(3 * time.Minute)}
	svg := RenderSVG("T <&>", from, from.Add(3*time.Minute), []PanelData{
		{Title: "Latency", Unit: "s", Lines: []Line{{Label: "p99", Times: times, Values: []float64{0.01, math.NaN(), 0.02, 0.03}}}},
		{Title: "Empty", Unit: "short"},
	})
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
	}
	for _, want := range []string{"T &lt;&amp;&gt;", "Latency", "Empty", "No data", "p99", "30ms"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("no %q in:\n%s", want, svg)
		}
	}
	// The NaN splits the line in two: two moves.
	if n := strings.Count(string(svg), `d="M`) + strings.Count(string(svg), " M"); n != 2 {
		t.Errorf("%d path moves, want 2 (a gap at the NaN):\n%s", n, svg)
	}
}
