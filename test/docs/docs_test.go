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

// Package docs checks that the README and docs/ stay navigable: every
// relative link reaches a file and a heading that exist, and no document
// grows past what a reader takes in at one sitting.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// maxLines is the longest a document of docs/ may be, in lines of at most
// maxWidth characters: a longer line counts as the lines it wraps into, so
// that a long table row cannot hide a page's length. Past it, a document
// holds more than one reader's concerns: split it by reader.
const maxLines = 500

// maxWidth is the widest a line of prose may be. Code blocks and table rows
// may be wider, as Markdown cannot wrap them, but count in maxLines as the
// lines they wrap into.
const maxWidth = 120

// documents are the Markdown files a reader navigates, relative to the
// repository root.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no documents in docs/")
	}
	return append(docs, filepath.Join("..", "..", "README.md"))
}

// document is a Markdown file a reader navigates, read.
type document struct {
	path string // relative to this package
	name string // the file's name, for messages
	text string
}

// readDocuments reads the documents.
func readDocuments(t *testing.T) []document {
	t.Helper()
	paths := documents(t)
	docs := make([]document, 0, len(paths))
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, document{path, filepath.Base(path), string(text)})
	}
	return docs
}

// link is a Markdown inline link, [text](target); images, ![alt](target),
// match too.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func TestRelativeLinksReachAFileAndHeading(t *testing.T) {
	for _, doc := range readDocuments(t) {
		for _, line := range prose(doc.text) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, fragment, _ := strings.Cut(target, "#")
				file := doc.path
				if path != "" {
					file = filepath.Join(filepath.Dir(doc.path), filepath.FromSlash(path))
				}
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %q: %v", doc.name, target, err)
					continue
				}
				if fragment == "" || !strings.HasSuffix(file, ".md") {
					continue
				}
				linked, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if !anchors(string(linked))[fragment] {
					t.Errorf("%s: link %q: %s has no heading with anchor #%s", doc.name, target, filepath.Base(file), fragment)
				}
			}
		}
	}
}

func TestNoDocumentIsTooLongToNavigate(t *testing.T) {
	for _, doc := range readDocuments(t) {
		if n := wrappedLines(doc.text); n > maxLines {
			t.Errorf("%s: %d lines wrapped at %d characters, more than %d", doc.name, n, maxWidth, maxLines)
		}
	}
}

// wrappedLines counts the lines of text as a reader sees them in a window
// maxWidth characters wide.
func wrappedLines(text string) int {
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n += max(1, (utf8.RuneCountInString(line)+maxWidth-1)/maxWidth)
	}
	return n
}

func TestProseIsWrapped(t *testing.T) {
	for _, doc := range readDocuments(t) {
		for _, line := range markdownLines(doc.text) {
			if line.fenced || strings.HasPrefix(strings.TrimSpace(line.text), "|") {
				continue
			}
			if n := utf8.RuneCountInString(line.text); n > maxWidth {
				t.Errorf("%s:%d: %d characters, more than %d: wrap it", doc.name, line.number, n, maxWidth)
			}
		}
	}
}

func TestWrappedLinesCountLongLines(t *testing.T) {
	long := strings.Repeat("x", 2*maxWidth+1)
	if n := wrappedLines("a\n" + long + "\n\nb\n"); n != 6 {
		t.Errorf("wrappedLines = %d, want 6", n)
	}
}

// markdownLine is a line of a Markdown text, its fences left out.
type markdownLine struct {
	number int    // from 1
	text   string // without its newline
	fenced bool   // inside a fenced code block
}

// markdownLines splits a Markdown text into its lines, the fences of its
// code blocks (```) left out. A fence may be indented, as it is in a list
// item.
func markdownLines(text string) []markdownLine {
	var lines []markdownLine
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			fenced = !fenced
			continue
		}
		lines = append(lines, markdownLine{i + 1, line, fenced})
	}
	return lines
}

// prose returns the lines of a Markdown text outside its fenced code blocks.
func prose(text string) []string {
	var lines []string
	for _, line := range markdownLines(text) {
		if !line.fenced {
			lines = append(lines, line.text)
		}
	}
	return lines
}

// paragraph is a block of prose lines a Markdown renderer reads as one: a
// paragraph, a list item's text, a heading or a table row. Inline Markdown
// (a code span, a link) may break across its lines, never past it.
type paragraph struct {
	line int    // its first line's number, from 1
	text string // its lines, each without its indentation, joined by newlines
}

// lineAt is the number of the line holding the byte at offset of p.text.
func (p paragraph) lineAt(offset int) int {
	return p.line + strings.Count(p.text[:offset], "\n")
}

// blockStart is a line that starts a block of its own, ending the paragraph
// before it: a heading, a table row, a list item, a quote, an HTML comment.
var blockStart = regexp.MustCompile(`^(?:#{1,6} |\||[-*+] |\d+[.)] |>|<!--)`)

// paragraphs splits a Markdown text's prose (its lines outside fenced code
// blocks) into paragraphs: a blank line or a fence ends one, and a heading,
// a table row, a list item or a quote is a block of its own, as are a
// heading's and a table row's line alone.
func paragraphs(text string) []paragraph {
	var result []paragraph
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			result = append(result, paragraph{start, strings.Join(cur, "\n")})
		}
		cur = nil
	}
	prev := 0
	for _, line := range markdownLines(text) {
		trimmed := strings.TrimLeft(line.text, " \t")
		// A fence left out of the lines ends the paragraph too.
		if line.fenced || trimmed == "" || line.number != prev+1 {
			flush()
		}
		prev = line.number
		if line.fenced || trimmed == "" {
			continue
		}
		if blockStart.MatchString(trimmed) {
			flush()
		}
		if len(cur) == 0 {
			start = line.number
		}
		cur = append(cur, trimmed)
		if heading.MatchString(trimmed) || strings.HasPrefix(trimmed, "|") {
			flush()
		}
	}
	flush()
	return result
}

// inlineCode is a code span of a Markdown text.
type inlineCode struct {
	line int    // the number of the line it starts on, from 1
	text string // its content, line breaks as spaces
}

// codeSpans returns the code spans of a Markdown text's prose as CommonMark
// reads them: a run of n backticks opens one, the next run of exactly n
// closes it, on the same line or a later one of the same paragraph, and an
// opening run without its closing one is text; a backslash before a
// backtick outside a span makes it text too. Fenced code blocks are not
// prose.
func codeSpans(text string) []inlineCode {
	var spans []inlineCode
	for _, p := range paragraphs(text) {
		s := p.text
		for i := 0; i < len(s); {
			if s[i] == '\\' && i+1 < len(s) {
				i += 2
				continue
			}
			if s[i] != '`' {
				i++
				continue
			}
			n := backticks(s, i)
			end := -1
			for j := i + n; j < len(s); {
				if s[j] != '`' {
					j++
					continue
				}
				m := backticks(s, j)
				if m == n {
					end = j
					break
				}
				j += m
			}
			if end < 0 {
				i += n // no closing run: the backticks are text
				continue
			}
			content := strings.ReplaceAll(s[i+n:end], "\n", " ")
			// One space each side is stripped, so that a span may show a
			// backtick at its ends: `` `x` ``.
			if len(content) > 2 && content[0] == ' ' && content[len(content)-1] == ' ' &&
				strings.Trim(content, " ") != "" {
				content = content[1 : len(content)-1]
			}
			spans = append(spans, inlineCode{p.lineAt(i), content})
			i = end + n
		}
	}
	return spans
}

// backticks is the length of the run of backticks at s[i].
func backticks(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

var heading = regexp.MustCompile(`^#{1,6} +(.+?) *#* *$`)

// anchors returns the anchors GitHub gives the headings of a Markdown text:
// the heading in lower case, spaces as hyphens, every other character but
// letters, digits, hyphens and underscores dropped; a repeated anchor gets
// -1, -2, ... appended.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	result := map[string]bool{}
	for _, line := range prose(text) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := anchorOf(m[1])
		if n := seen[a]; n > 0 {
			result[a+"-"+strconv.Itoa(n)] = true
		} else {
			result[a] = true
		}
		seen[a]++
	}
	return result
}

// anchorOf is the anchor GitHub gives a heading's text, before a repeat's
// suffix.
func anchorOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestAnchorsAreGitHubs(t *testing.T) {
	text := "# Operating the sample-controller\n" +
		"### 1. Build and push the image\n" +
		"### At rest, 1,000 Foos\n" +
		"### A write refused by the API server (quota, admission policy or webhook, RBAC)\n" +
		"## `-profiling` and `GOMEMLIMIT`\n" +
		"#### SampleControllerDown\n" +
		"## Notes\n" +
		"## Notes\n" +
		"```sh\n# not a heading\n```\n" +
		"#not a heading either\n"
	want := []string{
		"operating-the-sample-controller",
		"1-build-and-push-the-image",
		"at-rest-1000-foos",
		"a-write-refused-by-the-api-server-quota-admission-policy-or-webhook-rbac",
		"-profiling-and-gomemlimit",
		"samplecontrollerdown",
		"notes",
		"notes-1",
	}
	got := anchors(text)
	for _, a := range want {
		if !got[a] {
			t.Errorf("no anchor %q", a)
		}
	}
	if len(got) != len(want) {
		t.Errorf("anchors %v, want exactly %v", got, want)
	}
}

// firstScreen is how many lines of the README a newcomer reads before
// deciding where to go: the two commands, one test alone, and how to deploy
// are within them.
const firstScreen = 80

// maxTestIt is the longest the README's "Test it" may be: the command, what
// it covers, the faster loops and a typical duration. The rest is
// docs/testing.md's.
const maxTestIt = 25

func TestReadmeIsAFirstPage(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	first := strings.Join(lines[:min(firstScreen, len(lines))], "\n")
	for _, want := range []string{"make run", "make test", "go test -run", "make deploy"} {
		if !strings.Contains(first, want) {
			t.Errorf("README: %q is not within its first %d lines", want, firstScreen)
		}
	}
	start := -1
	for i, line := range lines {
		switch {
		case line == "## Test it":
			start = i
		case start >= 0 && strings.HasPrefix(line, "## "):
			if n := i - start; n > maxTestIt {
				t.Errorf("README: Test it is %d lines, more than %d: move the rest to docs/testing.md", n, maxTestIt)
			}
			return
		}
	}
	t.Error(`README: no "## Test it" followed by another section`)
}

// Backticks pair as CommonMark pairs them: across the line breaks of a
// paragraph, never past its end, a fence or a list item; a run of two
// closes only a run of two; an unmatched or escaped backtick is text.
func TestCodeSpansPairBackticksAcrossLines(t *testing.T) {
	text := strings.Join([]string{
		"A span broken `across",         // 1
		"lines`, then `after` it.",      // 2
		"An unmatched `` is text, `x`",  // 3
		"",                              // 4
		"Not `closed past a blank line", // 5
		"",                              // 6
		"`` a `tick` inside `` and \\`escaped\\` `y`", // 7
		"- an item `open",         // 8
		"- the next item `z`",     // 9
		"   ```go",                // 10
		"   `not` a span: fenced", // 11
		"   ```",                  // 12
		"| `cell` | `other",       // 13
		"row` |",                  // 14
	}, "\n")
	spans := codeSpans(text)
	got := make([]string, 0, len(spans))
	for _, s := range spans {
		got = append(got, fmt.Sprintf("%d:%s", s.line, s.text))
	}
	want := []string{"1:across lines", "2:after", "3:x", "7:a `tick` inside", "7:y", "9:z", "13:cell"}
	if !slices.Equal(got, want) {
		t.Errorf("codeSpans = %q, want %q", got, want)
	}
}
