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
	"bytes"
	"os"
	"path/filepath"

	"github.com/kube-samples/sample-controller/test/bench/curve"
)

// The cost curve: the series' medians per N, written to a CSV and drawn as
// an SVG chart (package curve), so that a reader sees how time and memory
// grow with the number of Foos. A run writes them to _output/bench-logs; only
// BENCH_CURVE_DIR=docs writes them over docs/'s, which docs/performance.md's
// table quotes: a run at fewer sizes or runs than the table's (the default
// make bench is one size) would otherwise replace the curve users see,
// unnoticed until the docs test compares the two.
const curveDefaultDir = "_output/bench-logs"

func (b *bench) writeCurve(series []sizeResult) {
	dir := os.Getenv("BENCH_CURVE_DIR")
	if dir == "" {
		dir = curveDefaultDir
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(b.root, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	points := curvePoints(series)
	var csv bytes.Buffer
	if err := curve.WriteCSV(&csv, points); err != nil {
		b.t.Fatal(err)
	}
	csvPath := filepath.Join(dir, filepath.Base(curve.DocsCSV))
	svgPath := filepath.Join(dir, filepath.Base(curve.DocsSVG))
	if err := os.WriteFile(csvPath, csv.Bytes(), 0o644); err != nil {
		b.t.Fatal(err)
	}
	// Drawn from the CSV as written, three decimals: the chart test/docs
	// draws again from docs/'s CSV is then this one.
	written, err := curve.ReadCSV(bytes.NewReader(csv.Bytes()))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(svgPath, []byte(curve.Chart(written)), 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.report("wrote %s and %s", csvPath, svgPath)
}

// curvePoints are the series' medians per N, and the ratios' spread.
func curvePoints(series []sizeResult) []curve.Point {
	points := make([]curve.Point, 0, len(series))
	for _, r := range series {
		apiLo, apiHi := minMax(r.apiRatios())
		e2eLo, e2eHi := minMax(r.endToEndRatios())
		points = append(points, curve.Point{
			Foos: r.n, Runs: len(r.controls),
			APIFloor: median(r.floorAPI()), Converged: median(r.convergence()),
			ConvergedRatio: median(r.apiRatios()), ConvergedRatioMin: apiLo, ConvergedRatioMax: apiHi,
			EndToEndFloor: median(r.floorEndToEnd()), Ready: median(r.ready()),
			ReadyRatio: median(r.endToEndRatios()), ReadyRatioMin: e2eLo, ReadyRatioMax: e2eHi,
			RequestsPerFoo: median(r.requestsPerFoo()), CPU: median(r.cpuSeconds()), PeakRSS: median(r.peakRSSMiB()),
		})
	}
	return points
}
