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

// Package curve writes and reads the cost curve of make bench: the medians
// per number of Foos, as a CSV, and the chart drawn from them, as an SVG.
// The bench writes both; test/docs reads the CSV docs/ holds, draws the
// chart again from it and compares it with the SVG beside it, so that the
// chart a reader sees is the CSV's, and the CSV the table's that quotes it.
package curve

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// The files of the curve docs/performance.md shows, from the repository's
// root.
const (
	DocsCSV = "docs/performance-scale.csv"
	DocsSVG = "docs/performance-scale.svg"
)

// Point is the curve at one number of Foos: the medians of its runs, the
// ratios' spread, as the CSV holds them.
type Point struct {
	Foos, Runs                                           int
	APIFloor, Converged                                  float64 // seconds
	ConvergedRatio, ConvergedRatioMin, ConvergedRatioMax float64
	EndToEndFloor, Ready                                 float64 // seconds
	ReadyRatio, ReadyRatioMin, ReadyRatioMax             float64
	RequestsPerFoo                                       float64
	CPU                                                  float64 // seconds
	PeakRSS                                              float64 // MiB
}

// header is the CSV's first row.
var header = []string{"foos", "runs",
	"api_floor_s", "converged_s", "converged_ratio", "converged_ratio_min", "converged_ratio_max",
	"end_to_end_floor_s", "ready_s", "ready_ratio", "ready_ratio_min", "ready_ratio_max",
	"requests_per_foo", "cpu_s", "peak_rss_mib"}

// figures are a point's measured figures, in the CSV's order after foos and
// runs.
func (p *Point) figures() []*float64 {
	return []*float64{&p.APIFloor, &p.Converged, &p.ConvergedRatio, &p.ConvergedRatioMin, &p.ConvergedRatioMax,
		&p.EndToEndFloor, &p.Ready, &p.ReadyRatio, &p.ReadyRatioMin, &p.ReadyRatioMax,
		&p.RequestsPerFoo, &p.CPU, &p.PeakRSS}
}

// WriteCSV writes the points, each figure with three decimals.
func WriteCSV(w io.Writer, points []Point) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(header)
	for _, p := range points {
		row := []string{strconv.Itoa(p.Foos), strconv.Itoa(p.Runs)}
		for _, f := range p.figures() {
			row = append(row, strconv.FormatFloat(*f, 'f', 3, 64))
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// ReadCSV reads what WriteCSV wrote.
func ReadCSV(r io.Reader) ([]Point, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(header, ",") {
		return nil, fmt.Errorf("not the curve's header: %v", rows)
	}
	var points []Point
	for i, row := range rows[1:] {
		var p Point
		if p.Foos, err = strconv.Atoi(row[0]); err != nil {
			return nil, fmt.Errorf("row %d: %w", i+2, err)
		}
		if p.Runs, err = strconv.Atoi(row[1]); err != nil {
			return nil, fmt.Errorf("row %d: %w", i+2, err)
		}
		for j, f := range p.figures() {
			if *f, err = strconv.ParseFloat(row[2+j], 64); err != nil {
				return nil, fmt.Errorf("row %d, %s: %w", i+2, header[2+j], err)
			}
		}
		points = append(points, p)
	}
	return points, nil
}

// ReadFile reads the curve's CSV at path.
func ReadFile(path string) ([]Point, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	points, err := ReadCSV(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return points, nil
}

// A line of the chart: one point per size.
type curveLine struct {
	label  string
	color  string
	dashed bool
	values []float64
}

// Chart draws two panels side by side: the times to converge and to be
// Ready against N, each beside its floor, and the controller's peak RSS
// against N.
func Chart(points []Point) string {
	ns := make([]float64, len(points))
	medians := func(f func(Point) float64) []float64 {
		xs := make([]float64, len(points))
		for i, p := range points {
			xs[i] = f(p)
		}
		return xs
	}
	for i, p := range points {
		ns[i] = float64(p.Foos)
	}
	var svg strings.Builder
	const width, height = 960, 440
	fmt.Fprintf(&svg, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" `+
		`font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&svg, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&svg, `<text x="%d" y="22" font-size="15" text-anchor="middle">`+
		`sample-controller: cold start over N Foos (median of the runs; make bench)</text>`+"\n", width/2)
	panel(&svg, 70, 50, 380, 260, "seconds", ns, []curveLine{
		{label: "controller: every Foo Ready", color: "#d95f02", values: medians(func(p Point) float64 { return p.Ready })},
		{label: "floor: every Deployment available", color: "#d95f02", dashed: true,
			values: medians(func(p Point) float64 { return p.EndToEndFloor })},
		{label: "controller: converged", color: "#1b65a6", values: medians(func(p Point) float64 { return p.Converged })},
		{label: "floor: API writes", color: "#1b65a6", dashed: true,
			values: medians(func(p Point) float64 { return p.APIFloor })},
	})
	panel(&svg, 560, 50, 380, 260, "controller peak RSS, MiB", ns, []curveLine{
		{label: "controller peak RSS", color: "#1b9e77", values: medians(func(p Point) float64 { return p.PeakRSS })},
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
		fmt.Fprintf(svg, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+
			`<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			x0, py(y), x0+w, py(y), x0-6, py(y)+4, strconv.FormatFloat(y, 'f', -1, 64))
	}
	for _, x := range xs {
		fmt.Fprintf(svg, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+
			`<text x="%.1f" y="%.1f" text-anchor="middle">%.0f</text>`+"\n",
			px(x), y0+h, px(x), y0+h+5, px(x), y0+h+18, x)
	}
	fmt.Fprintf(svg, `<text x="%.1f" y="%.1f" text-anchor="middle">Foos (N)</text>`+"\n", x0+w/2, y0+h+34)
	fmt.Fprintf(svg, `<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n",
		x0-48, y0+h/2, yLabel)
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
		fmt.Fprintf(svg, `<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n",
			strings.TrimSpace(path.String()), l.color, dash)
		ly := y0 + h + 52 + float64(i)*16
		fmt.Fprintf(svg, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+
			`<text x="%.1f" y="%.1f">%s</text>`+"\n",
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
