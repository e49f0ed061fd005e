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
	"strings"
	"testing"
)

func TestLongLinesAreBrokenWhereGoAllowsIt(t *testing.T) {
	long := strings.Repeat("x", 60)
	src := "package p\n\n" +
		"// " + strings.Repeat("word ", 30) + "end\n" +
		"func f(a" + long + " int, b" + long + " int) {}\n\n" +
		"var s = \"" + strings.Repeat("a, b, ", 25) + "\"\n" +
		"var m = map[string]string{\"" + long + "\": \"" + long + "\"}\n"
	want := "package p\n\n" +
		"// " + strings.Repeat("word ", 22) + "word\n" + // 117 characters
		"// " + strings.Repeat("word ", 7) + "end\n" +
		"func f(a" + long + " int,\n" +
		"\tb" + long + " int) {\n}\n\n" +
		"var s = \"" + strings.Repeat("a, b, ", 25) + "\"\n" +
		"var m = map[string]string{\n" +
		"\t\"" + long + "\": \"" + long + "\"}\n"
	got, err := wrapLongLines([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("wrapped:\n%s\nwant:\n%s", got, want)
	}
}

// A long comment line's last words lead the next line of its paragraph,
// which is broken again in turn; a paragraph's last line, and a line before
// a blank //, a list item, a marker or indented text, keep what they are
// given.
func TestLongCommentLinesReflowTheirParagraph(t *testing.T) {
	words := strings.Repeat("word ", 22) // 110 characters
	src := "package p\n\n" +
		"// " + words + "one two three\n" + // 126 characters
		"// " + words + "four\n" +
		"// five.\n" +
		"//\n" +
		"// " + words + "six seven\n" +
		"//   indented\n" +
		"// " + words + "eight nine\n" +
		"// - item\n" +
		"// " + words + "ten eleven\n" +
		"// +optional\n" +
		"\n" +
		"func f() {\n" +
		"\t// " + words + "a twelve\n" +
		"\t// thirteen.\n" +
		"}\n"
	line := strings.TrimSuffix(words, " ")
	want := "package p\n\n" +
		"// " + words + "one two\n" +
		"// three " + line + "\n" +
		"// four five.\n" +
		"//\n" +
		"// " + words + "six\n" +
		"// seven\n" +
		"//   indented\n" +
		"// " + words + "eight\n" +
		"// nine\n" +
		"// - item\n" +
		"// " + words + "ten\n" +
		"// eleven\n" +
		"// +optional\n" +
		"\n" +
		"func f() {\n" +
		"\t// " + words + "a\n" +
		"\t// twelve thirteen.\n" +
		"}\n"
	got, err := wrapLongLines([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("wrapped:\n%s\nwant:\n%s", got, want)
	}
}

func TestLongMarkdownLinesAreBrokenBetweenWords(t *testing.T) {
	words := strings.Repeat("word ", 23) // 115 characters
	src := "# " + words + "heading stays\n" +
		words + "longer end\n" +
		"- " + words + "item end\n" +
		"\n" +
		words + "- not a list\n" +
		"| " + words + "a | table row |\n" +
		"```sh\n" + words + "code stays\n```\n" +
		strings.Repeat("x", 130) + "\n"
	want := "# " + words + "heading stays\n" +
		strings.TrimSuffix(words, " ") + "\nlonger end\n" +
		"- " + strings.TrimSuffix(words, " ") + "\n  item end\n" +
		"\n" +
		words + "- not\na list\n" + // not "\n- not a list", a list item
		"| " + words + "a | table row |\n" +
		"```sh\n" + words + "code stays\n```\n" +
		strings.Repeat("x", 130) + "\n"
	if got := wrapMarkdown(src); got != want {
		t.Errorf("wrapMarkdown:\n%s\nwant:\n%s", got, want)
	}
}

// The words a break moves lead the next line of the same paragraph, which
// is wrapped again in turn: a paragraph is reflowed, not left with a short
// line after each long one. A paragraph's last line keeps what it is given.
func TestLongMarkdownLinesReflowTheirParagraph(t *testing.T) {
	words := strings.Repeat("word ", 23) // 115 characters
	src := words + "moved on\n" +        // 123 characters
		words + "again\n" +
		"last line\n" +
		"\n" +
		"- " + words + "item\n" +
		"  its next line\n"
	want := words + "moved\n" +
		"on " + strings.TrimSuffix(words, " ") + "\n" +
		"again last line\n" +
		"\n" +
		"- " + strings.TrimSuffix(words, " ") + "\n" +
		"  item its next line\n"
	if got := wrapMarkdown(src); got != want {
		t.Errorf("wrapMarkdown:\n%s\nwant:\n%s", got, want)
	}
}
