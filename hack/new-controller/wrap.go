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
	"bytes"
	"go/format"
	"go/scanner"
	"go/token"
	"regexp"
	"strings"
	"unicode/utf8"
)

// maxLineLength is the line length golangci-lint's lll allows by default,
// which .golangci.yml keeps. Longer names make longer lines (Foo ->
// Policy), and lll fails a line of code that passed in the template.
const maxLineLength = 120

// wrapLongLines breaks the lines of a Go source that are longer than
// maxLineLength: a comment between words, a line of code after a comma, an
// opening bracket or a dot (where Go takes a line break and inserts no
// semicolon), then formats the source again. A line it cannot break (one long string,
// a kubebuilder marker, which controller-gen reads as one line) stays.
func wrapLongLines(src []byte) ([]byte, error) {
	unbreakable := map[int]bool{}
	for range 1000 { // each pass breaks one line, or moves its last words to the next
		lines := bytes.Split(src, []byte("\n"))
		at := -1
		for i, line := range lines {
			if !unbreakable[i] && utf8.RuneCount(line) > maxLineLength &&
				!bytes.Contains(line, []byte("+kubebuilder:")) {
				at = i
				break
			}
		}
		if at < 0 {
			return src, nil
		}
		line := string(lines[at])
		var broken string
		if trimmed := strings.TrimLeft(line, "\t "); strings.HasPrefix(trimmed, "// ") {
			indent := line[:len(line)-len(trimmed)]
			broken = wrapComment(line, indent)
			if head, moved, ok := strings.Cut(broken, "\n"); ok && at+1 < len(lines) &&
				continuesComment(string(lines[at+1]), indent) {
				// The moved words lead the comment's next line, which is
				// broken again in turn: a paragraph is reflowed, not left
				// with a short line after each long one ("// see").
				lines[at] = []byte(head)
				lines[at+1] = []byte(moved + " " + strings.TrimPrefix(string(lines[at+1]), indent+"// "))
				src = bytes.Join(lines, []byte("\n"))
				continue
			}
		} else {
			broken = breakCode(src, at, line)
		}
		if broken == "" {
			unbreakable[at] = true
			continue
		}
		lines[at] = []byte(broken)
		formatted, err := format.Source(bytes.Join(lines, []byte("\n")))
		if err != nil {
			return nil, err
		}
		src = formatted
		// Lines below moved down by one; what was unbreakable is still.
		moved := map[int]bool{}
		for i := range unbreakable {
			if i > at {
				i++
			}
			moved[i] = true
		}
		unbreakable = moved
	}
	return src, nil
}

// wrapComment breaks a // comment line at its last space that keeps the
// first part within the limit; "" if there is none.
func wrapComment(line, indent string) string {
	cut := strings.LastIndex(line[:maxLineLength+1], " ")
	if cut <= len(indent)+len("//") {
		return ""
	}
	return line[:cut] + "\n" + indent + "// " + strings.TrimLeft(line[cut:], " ")
}

// continuesComment reports whether line goes on the paragraph of the //
// comment line before it, indented by indent: a comment line of the same
// indent with text, not a blank //, an indented line (code, a list item's
// continuation), a list item or a marker (// +kubebuilder:, // +optional).
func continuesComment(line, indent string) bool {
	text, ok := strings.CutPrefix(line, indent+"// ")
	return ok && text != "" && !strings.ContainsAny(text[:1], " \t-+*")
}

// breakRank is how good a place to break a line after a token is: after a
// comma best, an opening bracket next, a selector's dot last; 0 where Go
// would end the statement (automatic semicolons) or where it reads badly.
func breakRank(tok token.Token) int {
	switch tok {
	case token.COMMA:
		return 3
	case token.LPAREN, token.LBRACE, token.LBRACK:
		return 2
	case token.PERIOD:
		return 1
	}
	return 0
}

// breakCode breaks line (the line at index at of src) after its last
// comma token that keeps the first part within the limit, else after its
// last opening bracket, else its last dot; "" if there is none. Commas in
// strings and comments are not tokens.
func breakCode(src []byte, at int, line string) string {
	lineStart := 0
	for range at {
		lineStart += bytes.IndexByte(src[lineStart:], '\n') + 1
	}
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	best, bestRank := -1, 0
	for {
		pos, tok, _ := s.Scan()
		if tok == token.EOF {
			break
		}
		offset := file.Offset(pos) - lineStart
		if offset >= len(line) {
			break
		}
		rank := breakRank(tok)
		if rank >= bestRank && rank > 0 && offset >= 0 && utf8.RuneCountInString(line[:offset+1]) <= maxLineLength &&
			strings.TrimSpace(line[offset+1:]) != "" {
			best, bestRank = offset, rank
		}
	}
	if best < 0 {
		return ""
	}
	return line[:best+1] + "\n" + strings.TrimLeft(line[best+1:], " ")
}

// markdownItem is the start of a Markdown list item: its marker and the
// spaces after it.
var markdownItem = regexp.MustCompile(`^\s*(?:[-*+]|\d+\.)\s+`)

// startsBlock reports whether a line starting with s would start a Markdown
// block of its own (a list item, a heading, a quote, a table row), and so
// must not begin a continuation line.
func startsBlock(s string) bool {
	return markdownItem.MatchString(s) || strings.HasPrefix(s, "#") || strings.HasPrefix(s, ">") ||
		strings.HasPrefix(s, "|") || strings.HasPrefix(s, "<")
}

// wrapMarkdown breaks the prose lines of a Markdown text that are longer
// than maxLineLength between words, as the template's docs are wrapped
// (test/docs holds them to it): longer names make longer lines. The words a
// break moves go to the front of the next line when it goes on the same
// paragraph, so a paragraph is reflowed rather than left with a short line
// after each long one. A continuation line is indented as a list item's
// text is; code blocks, table rows, headings and a line without a space to
// break at stay.
func wrapMarkdown(text string) string {
	var out []string
	fenced := false
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		trimmed := strings.TrimSpace(line)
		if fenced || strings.HasPrefix(line, "```") || strings.HasPrefix(trimmed, "|") ||
			strings.HasPrefix(trimmed, "#") {
			out = append(out, line)
			continue
		}
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		if m := markdownItem.FindString(line); m != "" {
			indent = strings.Repeat(" ", len(m))
		}
		for utf8.RuneCountInString(line) > maxLineLength {
			cut := cutAt(line, indent)
			if cut < 0 {
				break
			}
			out = append(out, strings.TrimRight(line[:cut], " "))
			line = indent + strings.TrimLeft(line[cut:], " ")
			if i+1 < len(lines) && continuesParagraph(lines[i+1]) {
				// The moved words lead the next line of the paragraph.
				lines[i+1] = line + " " + strings.TrimLeft(lines[i+1], " ")
				line = ""
				break
			}
		}
		if line != "" || trimmed == "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// continuesParagraph reports whether line goes on the paragraph of the line
// before it: it has text, and starts no block of its own.
func continuesParagraph(line string) bool {
	trimmed := strings.TrimSpace(line)
	return trimmed != "" && !startsBlock(trimmed) && !strings.HasPrefix(trimmed, "```")
}

// cutAt is where to break a long Markdown line: at the last space that
// keeps the first part within maxLineLength characters and leaves a
// continuation that starts no block of its own; -1 if there is none.
func cutAt(line, indent string) int {
	limit, n := len(line), 0
	for i := range line {
		if n == maxLineLength+1 {
			limit = i
			break
		}
		n++
	}
	for cut := strings.LastIndex(line[:limit], " "); cut > len(indent); cut = strings.LastIndex(line[:cut], " ") {
		head := strings.TrimSpace(line[:cut])
		if head != "" && head != strings.TrimSpace(markdownItem.FindString(line)) &&
			!startsBlock(strings.TrimLeft(line[cut:], " ")) {
			return cut
		}
	}
	return -1
}
