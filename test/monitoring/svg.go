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

// A plain SVG picture of the dashboard's panels, drawn from the series a
// real Prometheus answered for their queries: the e2e suite draws it, and
// docs/monitoring.md shows one. It is no Grafana screenshot: one line chart
// per panel, in the dashboard's order and layout of two columns.

import (
	"fmt"
	"html"
	"math"
	"regexp"
	"strings"
	"time"
)

// PanelData is one panel with the lines its queries returned.
type PanelData struct {
	Title string
	Unit  string // Grafana's: s, bytes, ops, reqps, short
	Lines []Line
}

// Line is one series of a panel.
type Line struct {
	Label  string
	Times  []time.Time
	Values []float64 // NaN: no value
}

var legendVar = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

// Legend renders a Grafana legend format ("{{result}}") with a series'
// labels.
func Legend(format string, labels map[string]string) string {
	return strings.TrimSpace(legendVar.ReplaceAllStringFunc(format, func(m string) string {
		return labels[legendVar.FindStringSubmatch(m)[1]]
	}))
}

// palette is Grafana's classic palette.
var palette = []string{
	"#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42",
	"#1f78c1", "#ba43a9", "#705da0", "#508642", "#cca300",
}

// formatValue prints an axis value in a panel's unit.
func formatValue(v float64, unit string) string {
	switch unit {
	case "s":
		switch {
		case v == 0:
			return "0"
		case v < 1e-3:
			return fmt.Sprintf("%.3gµs", v*1e6)
		case v < 1:
			return fmt.Sprintf("%.3gms", v*1e3)
		default:
			return fmt.Sprintf("%.3gs", v)
		}
	case "bytes":
		return fmt.Sprintf("%.3g MiB", v/(1<<20))
	case "ops":
		return fmt.Sprintf("%.3g/s", v)
	case "reqps":
		return fmt.Sprintf("%.3g req/s", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// RenderSVG draws the panels in two columns under a title; from and to
// bound every panel's time axis.
func RenderSVG(title string, from, to time.Time, panels []PanelData) []byte {
	const (
		cols       = 2
		panelW     = 520
		panelH     = 250
		gap        = 16
		top        = 48
		plotLeft   = 70
		plotRight  = 16
		plotTop    = 34
		plotBottom = 86 // x labels and legend
	)
	rows := (len(panels) + cols - 1) / cols
	width := cols*panelW + (cols+1)*gap
	height := top + rows*(panelH+gap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" `+
		`font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#181b1f"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="30" fill="#d8d9da" font-size="18">%s</text>`+"\n", gap, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="30" fill="#8e8e8e" text-anchor="end">%s – %s</text>`+"\n", width-gap,
		from.UTC().Format("2006-01-02 15:04:05"), to.UTC().Format("15:04:05 UTC"))
	span := to.Sub(from).Seconds()
	for i, p := range panels {
		x0 := gap + (i%cols)*(panelW+gap)
		y0 := top + (i/cols)*(panelH+gap)
		fmt.Fprintf(&b, `<g transform="translate(%d,%d)">`+"\n", x0, y0)
		fmt.Fprintf(&b, `<rect width="%d" height="%d" rx="3" fill="#22252b" stroke="#34373d"/>`+"\n", panelW, panelH)
		fmt.Fprintf(&b, `<text x="10" y="20" fill="#d8d9da" font-size="13">%s</text>`+"\n", html.EscapeString(p.Title))
		pw, ph := panelW-plotLeft-plotRight, panelH-plotTop-plotBottom
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, l := range p.Lines {
			for _, v := range l.Values {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if math.IsInf(lo, 1) {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#8e8e8e" text-anchor="middle">No data</text>`+"\n",
				panelW/2, plotTop+ph/2)
			b.WriteString("</g>\n")
			continue
		}
		lo = math.Min(lo, 0)
		if hi <= lo {
			hi = lo + 1
		}
		for k := 0; k <= 4; k++ {
			v := lo + (hi-lo)*float64(k)/4
			y := plotTop + ph - int(float64(ph)*float64(k)/4)
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#34373d"/>`, plotLeft, y, plotLeft+pw, y)
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#8e8e8e" text-anchor="end">%s</text>`+"\n",
				plotLeft-6, y+4, html.EscapeString(formatValue(v, p.Unit)))
		}
		for k := 0; k <= 3; k++ {
			t := from.Add(time.Duration(float64(to.Sub(from)) * float64(k) / 3))
			x := plotLeft + int(float64(pw)*float64(k)/3)
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#8e8e8e" text-anchor="middle">%s</text>`+"\n",
				x, plotTop+ph+16, t.UTC().Format("15:04:05"))
		}
		for li, l := range p.Lines {
			color := palette[li%len(palette)]
			var path strings.Builder
			pen := false
			for j, t := range l.Times {
				v := l.Values[j]
				if math.IsNaN(v) || math.IsInf(v, 0) {
					pen = false
					continue
				}
				x := float64(plotLeft) + float64(pw)*t.Sub(from).Seconds()/span
				y := float64(plotTop+ph) - float64(ph)*(v-lo)/(hi-lo)
				cmd := "L"
				if !pen {
					cmd = "M"
				}
				fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x, y)
				pen = true
			}
			if path.Len() > 0 {
				fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n",
					strings.TrimSpace(path.String()), color)
			}
			// Legend: up to six entries, three to a row.
			if li < 6 {
				lx := 10 + (li%3)*(panelW-20)/3
				ly := plotTop + ph + 38 + (li/3)*16
				label := l.Label
				if len(label) > 34 {
					label = label[:33] + "…"
				}
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="3" fill="%s"/>`+
					`<text x="%d" y="%d" fill="#c7d0d9">%s</text>`+"\n",
					lx, ly-4, color, lx+14, ly, html.EscapeString(label))
			}
		}
		if len(p.Lines) > 6 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#8e8e8e" text-anchor="end">+%d more</text>`+"\n",
				panelW-10, plotTop+ph+70, len(p.Lines)-6)
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
