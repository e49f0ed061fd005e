//go:build bench

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

package bench

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The cost curve: the series' medians per N, written to a CSV and drawn as
// an SVG chart in docs/, so that a reader sees how time and memory grow with
// the number of Foos. Both files are rewritten by every run of the bench.
const (
	curveCSV = "docs/performance-scale.csv"
	curveSVG = "docs/performance-scale.svg"
)

func (b *bench) writeCurve(series []sizeResult) {
	if err := writeCurveCSV(filepath.Join(b.root, curveCSV), series); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.root, curveSVG), []byte(curveChart(series)), 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.report("wrote %s and %s", curveCSV, curveSVG)
}

func writeCurveCSV(path string, series []sizeResult) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"foos", "runs",
		"api_floor_s", "converged_s", "converged_ratio", "converged_ratio_min", "converged_ratio_max",
		"end_to_end_floor_s", "ready_s", "ready_ratio", "ready_ratio_min", "ready_ratio_max",
		"requests_per_foo", "cpu_s", "peak_rss_mib"})
	format := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	for _, r := range series {
		apiLo, apiHi := minMax(r.apiRatios())
		e2eLo, e2eHi := minMax(r.endToEndRatios())
		_ = w.Write([]string{strconv.Itoa(r.n), strconv.Itoa(len(r.controls)),
			format(median(r.floorAPI())), format(median(r.convergence())), format(median(r.apiRatios())), format(apiLo), format(apiHi),
			format(median(r.floorEndToEnd())), format(median(r.ready())), format(median(r.endToEndRatios())), format(e2eLo), format(e2eHi),
			format(median(r.requestsPerFoo())), format(median(r.cpuSeconds())), format(median(r.peakRSSMiB()))})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// A line of the chart: one point per size.
type curveLine struct {
	label  string
	color  string
	dashed bool
	values []float64
}

// curveChart draws two panels side by side: the times to converge and to
// be Ready against N, each beside its floor, and the controller's peak RSS
// against N.
func curveChart(series []sizeResult) string {
	ns := make([]float64, len(series))
	medians := func(f func(sizeResult) []float64) []float64 {
		xs := make([]float64, len(series))
		for i, r := range series {
			xs[i] = median(f(r))
		}
		return xs
	}
	for i, r := range series {
		ns[i] = float64(r.n)
	}
	var svg strings.Builder
	const width, height = 960, 440
	fmt.Fprintf(&svg, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&svg, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&svg, `<text x="%d" y="22" font-size="15" text-anchor="middle">sample-controller: cold start over N Foos (median of the runs; make bench)</text>`+"\n", width/2)
	panel(&svg, 70, 50, 380, 260, "seconds", ns, []curveLine{
		{label: "controller: every Foo Ready", color: "#d95f02", values: medians(sizeResult.ready)},
		{label: "floor: every Deployment available", color: "#d95f02", dashed: true, values: medians(sizeResult.floorEndToEnd)},
		{label: "controller: converged", color: "#1b65a6", values: medians(sizeResult.convergence)},
		{label: "floor: API writes", color: "#1b65a6", dashed: true, values: medians(sizeResult.floorAPI)},
	})
	panel(&svg, 560, 50, 380, 260, "controller peak RSS, MiB", ns, []curveLine{
		{label: "controller peak RSS", color: "#1b9e77", values: medians(sizeResult.peakRSSMiB)},
	})
	svg.WriteString("</svg>\n")
	return svg.String()
}

// panel draws axes at (x0, y0) of size w×h, the lines, and their legend
// below the x axis.
func panel(svg *strings.Builder, x0, y0, w, h float64, yLabel string, xs []float64, lines []curveLine) {
	xMax := niceCeil(xs[len(xs)-1])
	yMax := 0.0
	for _, l := range lines {
		for _, v := range l.values {
			yMax = math.Max(yMax, v)
		}
	}
	yMax = niceCeil(yMax)
	px := func(x float64) float64 { return x0 + x/xMax*w }
	py := func(y float64) float64 { return y0 + h - y/yMax*h }
	fmt.Fprintf(svg, `<path d="M%.1f %.1f V%.1f H%.1f" fill="none" stroke="black"/>`+"\n", x0, y0, y0+h, x0+w)
	for i := 0; i <= 5; i++ {
		y := yMax * float64(i) / 5
		fmt.Fprintf(svg, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			x0, py(y), x0+w, py(y), x0-6, py(y)+4, strconv.FormatFloat(y, 'f', -1, 64))
	}
	for _, x := range xs {
		fmt.Fprintf(svg, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/><text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n",
			px(x), y0+h, px(x), y0+h+5, px(x), y0+h+18, x)
	}
	fmt.Fprintf(svg, `<text x="%.1f" y="%.1f" text-anchor="middle">Foos (N)</text>`+"\n", x0+w/2, y0+h+34)
	fmt.Fprintf(svg, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", x0-48, y0+h/2, yLabel)
	for i, l := range lines {
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var path strings.Builder
		for j, v := range l.values {
			cmd := "L"
			if j == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, px(xs[j]), py(v))
			fmt.Fprintf(svg, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(xs[j]), py(v), l.color)
		}
		fmt.Fprintf(svg, `<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.TrimSpace(path.String()), l.color, dash)
		ly := y0 + h + 52 + float64(i)*16
		fmt.Fprintf(svg, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			x0, ly, x0+28, ly, l.color, dash, x0+34, ly+4, l.label)
	}
}

// niceCeil rounds x up to 1, 2 or 5 times a power of ten, for an axis end.
func niceCeil(x float64) float64 {
	if x <= 0 {
		return 1
	}
	pow := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if x <= m*pow {
			return m * pow
		}
	}
	return 10 * pow
}
