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

package docs

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kube-samples/sample-controller/test/bench/curve"
)

// The curve a reader sees (docs/performance-scale.svg), the CSV beside it
// and the table of docs/performance.md that quotes them are one bench run's:
// once a run at fewer sizes replaced the CSV and the chart, and the table
// went on quoting a point the chart no longer had.

// curveSection is the heading of performance.md's table of the curve.
const curveSection = "### The cost curve: a cold start over N Foos"

// tableNumber is a number of a table cell: 1,000, 8.13, 1.06.
var tableNumber = regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`)

// curveTable reads performance.md's table of the curve: per N, the
// numbers of each cell after the first, as written.
func curveTable(t *testing.T, page string) map[int][][]string {
	t.Helper()
	_, section, ok := strings.Cut(page, "\n"+curveSection+"\n")
	if !ok {
		t.Fatalf("performance.md: no %q", curveSection)
	}
	section, _, _ = strings.Cut(section, "\n#")
	rows := map[int][][]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "| ") || len(cells) < 2 {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(strings.TrimSpace(cells[0]), ",", ""))
		if err != nil {
			continue // the header
		}
		for _, c := range cells[1:] {
			rows[n] = append(rows[n], tableNumber.FindAllString(c, -1))
		}
	}
	if len(rows) == 0 {
		t.Fatalf("performance.md, %s: no row", curveSection)
	}
	return rows
}

// agrees says whether a figure as a table writes it (8.13) is the CSV's
// (8.130) rounded: within half its last digit, and the CSV's own rounding.
func agrees(quoted string, value float64) bool {
	q, err := strconv.ParseFloat(quoted, 64)
	if err != nil {
		return false
	}
	decimals := 0
	if _, frac, ok := strings.Cut(quoted, "."); ok {
		decimals = len(frac)
	}
	return math.Abs(q-value) <= 0.5*math.Pow(10, -float64(decimals))+0.0005+1e-9
}

// curveProblems compares the table's rows with the CSV's points: the same
// sizes, and each quoted figure the CSV's.
func curveProblems(rows map[int][][]string, points []curve.Point) []string {
	var problems []string
	seen := map[int]bool{}
	for _, p := range points {
		seen[p.Foos] = true
		row, ok := rows[p.Foos]
		if !ok {
			problems = append(problems, fmt.Sprintf("the CSV has %d Foos, which the table does not quote", p.Foos))
			continue
		}
		// The table's columns, each with the CSV's figures it quotes.
		columns := []struct {
			name    string
			figures []float64
		}{
			{"API floor", []float64{p.APIFloor}},
			{"converged", []float64{p.Converged}},
			{"ratio", []float64{p.ConvergedRatio, p.ConvergedRatioMin, p.ConvergedRatioMax}},
			{"end-to-end floor", []float64{p.EndToEndFloor}},
			{"every Foo Ready", []float64{p.Ready}},
			{"ratio", []float64{p.ReadyRatio, p.ReadyRatioMin, p.ReadyRatioMax}},
			{"requests per Foo", []float64{p.RequestsPerFoo}},
			{"CPU", []float64{p.CPU}},
			{"peak RSS", []float64{p.PeakRSS}},
		}
		if len(row) != len(columns) {
			problems = append(problems, fmt.Sprintf("%d Foos: the table has %d columns of figures, want %d",
				p.Foos, len(row), len(columns)))
			continue
		}
		for i, c := range columns {
			if len(row[i]) != len(c.figures) {
				problems = append(problems, fmt.Sprintf("%d Foos, %s: the table quotes %v, the CSV has %v",
					p.Foos, c.name, row[i], c.figures))
				continue
			}
			for j, quoted := range row[i] {
				if !agrees(quoted, c.figures[j]) {
					problems = append(problems, fmt.Sprintf("%d Foos, %s: the table says %s, the CSV %.3f",
						p.Foos, c.name, quoted, c.figures[j]))
				}
			}
		}
	}
	for n := range rows {
		if !seen[n] {
			problems = append(problems, fmt.Sprintf("the table quotes %d Foos, which the CSV does not have", n))
		}
	}
	return problems
}

func TestCurveCSVIsTheTablesAndTheChartIsDrawnFromIt(t *testing.T) {
	points, err := curve.ReadFile(filepath.Join(root, filepath.FromSlash(curve.DocsCSV)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range curveProblems(curveTable(t, read(t, "docs/performance.md")), points) {
		t.Errorf("%s against docs/performance.md, %s: %s", curve.DocsCSV, curveSection, p)
	}
	if got, want := read(t, curve.DocsSVG), curve.Chart(points); got != want {
		t.Errorf("%s is not the chart of %s: draw it again from the CSV (make bench BENCH_CURVE_DIR=docs writes both)",
			curve.DocsSVG, curve.DocsCSV)
	}
}

// The comparison finds a point the CSV lost, a figure it changed and a
// point the table does not quote, and passes the table's own figures.
func TestCurveCheckFindsPlantedMistakes(t *testing.T) {
	page := strings.Join([]string{
		curveSection,
		"",
		"| N | API floor | converged | ratio | end-to-end floor | every Foo Ready | ratio | requests per Foo | CPU | peak RSS |",
		"|---|---|---|---|---|---|---|---|---|---|",
		"| 1,000 | 8.13 s | 9.36 s | **1.16** (1.06–1.17) | 20.50 s | 23.77 s | **1.16** (1.14–1.16) | 4.00 | 2.6 s | 67.6 MiB |",
		"| 10,000 | 86.85 s | 101.83 s | **1.17** (1.16–1.19) | 251.11 s | 294.11 s | **1.16** (1.14–1.17) | 3.37 | 26.8 s | 127.2 MiB |",
		"",
		"## Next",
	}, "\n")
	rows := curveTable(t, "\n"+page)
	right := []curve.Point{
		{Foos: 1000, Runs: 3, APIFloor: 8.130, Converged: 9.358, ConvergedRatio: 1.160, ConvergedRatioMin: 1.062,
			ConvergedRatioMax: 1.175, EndToEndFloor: 20.505, Ready: 23.773, ReadyRatio: 1.159, ReadyRatioMin: 1.144,
			ReadyRatioMax: 1.159, RequestsPerFoo: 4.005, CPU: 2.560, PeakRSS: 67.648},
		{Foos: 10000, Runs: 3, APIFloor: 86.855, Converged: 101.833, ConvergedRatio: 1.172, ConvergedRatioMin: 1.159,
			ConvergedRatioMax: 1.191, EndToEndFloor: 251.105, Ready: 294.108, ReadyRatio: 1.162, ReadyRatioMin: 1.143,
			ReadyRatioMax: 1.171, RequestsPerFoo: 3.370, CPU: 26.790, PeakRSS: 127.199},
	}
	if got := curveProblems(rows, right); len(got) != 0 {
		t.Errorf("problems found in the right curve: %q", got)
	}
	wrong := []curve.Point{right[0], {Foos: 3000, Runs: 1}}
	wrong[0].Ready = 61.299
	got := curveProblems(rows, wrong)
	want := []string{
		"1000 Foos, every Foo Ready: the table says 23.77, the CSV 61.299",
		"the CSV has 3000 Foos, which the table does not quote",
		"the table quotes 10000 Foos, which the CSV does not have",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
