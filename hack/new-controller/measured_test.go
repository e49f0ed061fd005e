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

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Figures a run measured on the template are not true of a copy. The copy
// keeps them only on measuredPages, under measuredNote; a figure written on
// any other page it keeps would reach the copy unmarked. The tests below
// find figures that look measured in the prose of the pages a copy gets.
//
// Prose only: a value in inline code or a code block is a flag's default, a
// manifest's field or a command's argument (`-leader-elect-renew-deadline
// 10s`), which a copy keeps as it is. In prose, most durations are design
// values too (a 10 s renew deadline, retries 5 ms doubling, an alert's 15
// minutes), so a plain number of seconds or minutes does not count. What
// counts is what configuration rarely looks like: a fraction, a size in
// bytes, CPU time, a duration in two units, a slope, a time something took,
// a figure in a sentence that says it was measured or gives the day.

const (
	figureNumber = `\d[\d,]*(?:\.\d+)?`
	figureRange  = `(?:\s*(?:-|–|to)\s*` + figureNumber + `)?`
	timeUnit     = `(?:µs|us|ms|s|sec|seconds?|min|minutes?|h|hours?)`
	sizeUnit     = `(?:bytes|[KMGT]i?B)`
)

// measuredLooks are the forms of a measured figure, each with what it is.
var measuredLooks = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a size", regexp.MustCompile(`\b` + figureNumber + figureRange + `\s*` + sizeUnit + `\b`)},
	{"a fraction", regexp.MustCompile(`\b\d[\d,]*\.\d+` + figureRange + `\s*(?:` + timeUnit + `|` + sizeUnit +
		`|per (?:second|minute|hour))\b`)},
	{"CPU time", regexp.MustCompile(`\b` + figureNumber + figureRange + `\s*(?:CPU|core)[- ](?:seconds|minutes|hours)\b`)},
	{"a duration in two units", regexp.MustCompile(`\b\d+\s*(?:h|hours?)\s+(?:and\s+)?\d+\s*(?:min|minutes?)\b|` +
		`\b\d+\s*(?:min|minutes?)\s+(?:and\s+)?\d+(?:\.\d+)?\s*(?:s|seconds?)\b`)},
	{"a slope", regexp.MustCompile(`[+±]` + figureNumber + `(?:\s*` + sizeUnit + `)?/(?:h|min|s)\b`)},
	{"a time something took", regexp.MustCompile(`(?i)\b(?:took|takes|taking|lasted|averaged|measured)\s+` +
		`(?:(?:about|around|nearly|roughly|some|over|under|only|just)\s+)?` + figureNumber + figureRange +
		`\s*` + timeUnit + `\b`)},
}

// duration is a duration or size of any look. One in a sentence that says
// it was measured, or gives the day it was, is a measurement; a link's
// words say nothing of the sentence ("[measured](performance.md)" sends
// the reader to where the measurement is).
var (
	duration     = regexp.MustCompile(`\b` + figureNumber + figureRange + `\s*(?:` + timeUnit + `|` + sizeUnit + `)\b`)
	saysMeasured = regexp.MustCompile(`(?i)\b(?:measured|observed|lasted|averaged|median|p50|p9\d)\b`)
	markdownLink = regexp.MustCompile(`\[[^\]]*\]\([^)]*\)`)
	givesADay    = regexp.MustCompile(`\b20\d\d-[01]\d-[0-3]\d\b`)
)

// inlineCode is a Markdown code span; it may go on over a line break, not
// over a blank line.
var inlineCode = regexp.MustCompile("`(?:[^`\n]|\n[^`\n])*`")

// proseOf returns a Markdown text with its code blocks and code spans
// blanked out, every other byte and line where it was.
func proseOf(text string) string {
	b := []byte(text)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	fenced := false
	at := 0
	for _, line := range strings.SplitAfter(text, "\n") {
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		if fenced || fence {
			blank(at, at+len(line))
		}
		if fence {
			fenced = !fenced
		}
		at += len(line)
	}
	for _, span := range inlineCode.FindAllStringIndex(string(b), -1) {
		blank(span[0], span[1])
	}
	return string(b)
}

// measuredFigure is a figure of a page that looks measured.
type measuredFigure struct {
	line   int
	figure string
	what   string
}

func (f measuredFigure) String() string {
	return fmt.Sprintf("%d: %q (%s)", f.line, f.figure, f.what)
}

// measuredFigures returns the figures in the prose of a Markdown text that
// look measured, in the order they come; where looks overlap, as "took
// 12.3 s" is a time something took and a fraction, one figure covers both.
func measuredFigures(text string) []measuredFigure {
	prose := proseOf(text)
	type span struct {
		from, to int
		what     string
	}
	var spans []span
	for _, look := range measuredLooks {
		for _, m := range look.re.FindAllStringIndex(prose, -1) {
			spans = append(spans, span{m[0], m[1], look.what})
		}
	}
	for _, m := range duration.FindAllStringIndex(prose, -1) {
		switch sentence := markdownLink.ReplaceAllString(sentenceAround(prose, m[0], m[1]), ""); {
		case givesADay.MatchString(sentence):
			spans = append(spans, span{m[0], m[1], "in a sentence that gives a day"})
		case saysMeasured.MatchString(sentence):
			spans = append(spans, span{m[0], m[1], "in a sentence that says it was measured"})
		}
	}
	// By start, the longest first: it is the one kept when others overlap it.
	slices.SortStableFunc(spans, func(a, b span) int {
		if a.from != b.from {
			return a.from - b.from
		}
		return b.to - a.to
	})
	var merged []span
	for _, s := range spans {
		if n := len(merged); n > 0 && s.from < merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, s.to)
			continue
		}
		merged = append(merged, s)
	}
	found := make([]measuredFigure, 0, len(merged))
	for _, s := range merged {
		found = append(found, measuredFigure{1 + strings.Count(prose[:s.from], "\n"), oneLine(prose[s.from:s.to]), s.what})
	}
	return found
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// sentenceAround is the sentence of text that holds text[from:to]: from
// the end of the one before (a full stop and a space, or a blank line) to
// its own end.
func sentenceAround(text string, from, to int) string {
	start := max(strings.LastIndex(text[:from], ". "), strings.LastIndex(text[:from], ".\n"),
		strings.LastIndex(text[:from], "\n\n"))
	end := len(text)
	for _, stop := range []string{". ", ".\n", "\n\n"} {
		if i := strings.Index(text[to:], stop); i >= 0 {
			end = min(end, to+i)
		}
	}
	return text[max(start, 0):end]
}

// notMeasuredFigure is a figure on a page outside measuredPages that looks
// measured and is not: the page, the figure as reported, and why it is
// true of a copy as well.
type notMeasuredFigure struct{ page, figure, why string }

// notMeasured are the figures that look measured and are not.
var notMeasured = []notMeasuredFigure{}

// unmarkedMeasurements returns, for the pages of the template under root
// that a copy keeps (README.md and docs/*.md) and that are not
// measuredPages, the figures that look measured, as "page:line: figure".
// The page is read as the copy gets it: template-only blocks left out.
func unmarkedMeasurements(root string) ([]string, error) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	var found []string
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, err
		}
		rel = filepath.ToSlash(rel)
		if isTemplateOnly(rel) || slices.Contains(measuredPages, rel) {
			continue
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		text, err := dropTemplateOnly(rel, string(content))
		if err != nil {
			return nil, err
		}
		for _, f := range measuredFigures(text) {
			if slices.ContainsFunc(notMeasured, func(n notMeasuredFigure) bool {
				return n.page == rel && n.figure == f.figure
			}) {
				continue
			}
			found = append(found, rel+":"+f.String())
		}
	}
	return found, nil
}

// TestMeasuredFiguresAreFoundAndConfiguredValuesAreNot holds the looks to
// figures a run reports, and to values the template sets, which are not.
func TestMeasuredFiguresAreFoundAndConfiguredValuesAreNot(t *testing.T) {
	for _, s := range []string{
		"The cold start took 12.3 s.",
		"a sync in 0.7 ms",
		"RSS 72.6 MiB at the end",
		"a cached Deployment is 856 bytes",
		"the image is 54 MB",
		"94 core-minutes",
		"it took 54 minutes",
		"make test takes about 5 to 15 minutes",
		"converged 3 min 13 s after the start",
		"It ran 1 hour 17 minutes.",
		"the slope was +39 MiB/h",
		"a rate of 15.2 per second",
		"Run on 2026-11-24 (2 cores): the floor at 1,000 Foos was 8 s.",
		"took 12 to\n47 s, depending on the load",
		"Observed: 317 failed syncs over the 31 s until the namespace was gone.",
		"Measured: 16 to 19 s.",
	} {
		if got := measuredFigures(s); len(got) == 0 {
			t.Errorf("nothing found in %q", s)
		}
	}
	for _, s := range []string{
		"The renew deadline (10 s) and the lease duration (15 s).",
		"retried every 30 s",
		"per key with exponential backoff (5 ms doubling to 1000 s), at most 50 per second",
		"The alert fires after 15 minutes.",
		"Start it with `-leader-elect-renew-deadline=10s` or `GOMEMLIMIT=256MiB`.",
		"`took 12.3 s` is in code",
		"```sh\nsleep 12.5s # took 856 bytes\n```\n",
		"A standby takes over once the Lease has expired (15 s).",
		"Kubernetes 1.37.2, Go 1.27, etcd 3.6.8",
		"2 to 4.4 retry periods",
		"It aims to finish within 60 minutes ([measured](performance.md#make-test)).",
		"waited 10 s or more in a queue before a worker took them",
		"Fixed 2026-11-24: a status write answered 404 marks the Foo.\n\nIt retries every 2 s.",
	} {
		if got := measuredFigures(s); len(got) != 0 {
			t.Errorf("in %q, found %v", s, got)
		}
	}
}

// TestAMeasuredFigureOnAPageNotMarkedMeasuredIsReported plants a figure on a
// page outside measuredPages, and the same on a measured page, and in a
// template-only block, and in a page the copy does not get.
func TestAMeasuredFigureOnAPageNotMarkedMeasuredIsReported(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"README.md": "# Title\n\nRun it.\n",
		"docs/operations.md": "# Operations\n\nRetries every 30 s.\n\nA cold start took 12.3 s.\n" +
			"<!-- " + templateOnlyBegin + " -->\nThe template's suite took 54 minutes.\n<!-- " + templateOnlyEnd + " -->\n",
		"docs/performance.md":   "# Performance\n\nA cold start took 12.3 s.\n",
		"docs/make-it-yours.md": "# Make it yours\n\nThe copy took 4.2 s.\n",
	}
	writeTree(t, root, files)
	got, err := unmarkedMeasurements(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`docs/operations.md:5: "took 12.3 s" (a time something took)`}
	if !slices.Equal(got, want) {
		t.Errorf("unmarkedMeasurements = %q, want %q", got, want)
	}
}

// TestEveryPageHoldingAMeasuredFigureIsAMeasuredPage scans the template's
// own pages: a measured figure on a page outside measuredPages would reach
// every copy without the note that it is the template's.
func TestEveryPageHoldingAMeasuredFigureIsAMeasuredPage(t *testing.T) {
	root := filepath.Join("..", "..")
	found, err := unmarkedMeasurements(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: a figure that looks measured on a page the copy keeps unmarked: move it to a page of "+
			"measuredPages and link to it, put a configured value in backticks, or list it in notMeasured "+
			"with why", f)
	}
	// The looks still find what the measured pages hold, or the scan above
	// proves nothing.
	for _, page := range measuredPages {
		if len(measuredFigures(readPage(t, root, page))) == 0 {
			t.Errorf("%s is in measuredPages, yet no figure on it looks measured", page)
		}
	}
	for _, n := range notMeasured {
		if strings.TrimSpace(n.why) == "" {
			t.Errorf("notMeasured lists %q on %s without saying why it is not a measurement", n.figure, n.page)
		}
		if !slices.ContainsFunc(measuredFigures(readPage(t, root, n.page)), func(f measuredFigure) bool {
			return f.figure == n.figure
		}) {
			t.Errorf("notMeasured lists %q on %s, which no longer holds it", n.figure, n.page)
		}
	}
}

func readPage(t *testing.T, root, rel string) string {
	t.Helper()
	content, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(content)
}
