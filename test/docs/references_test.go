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
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A link reaches a file and a heading (docs_test.go), but a reader also
// trusts what the link says: the file its text names, the steps of the
// section it names. Those are checked here.

// namedLink is a Markdown inline link with its text.
var namedLink = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)

// fileName is link text that names a Markdown file.
var fileName = regexp.MustCompile(`^[\w./-]+\.md$`)

// linkFileProblems returns the links of a document whose text names a
// Markdown file while the target is another one.
func linkFileProblems(name, text string) []string {
	var problems []string
	for _, p := range paragraphs(text) {
		flat := strings.ReplaceAll(p.text, "\n", " ")
		for _, idx := range namedLink.FindAllStringSubmatchIndex(flat, -1) {
			label, target := flat[idx[2]:idx[3]], flat[idx[4]:idx[5]]
			if !fileName.MatchString(label) || strings.Contains(target, "://") {
				continue
			}
			file, _, _ := strings.Cut(target, "#")
			if file == "" {
				file = name
			}
			if path.Base(file) != path.Base(label) {
				problems = append(problems, fmt.Sprintf("%s:%d: link [%s](%s) says %s and leads to %s",
					name, p.lineAt(idx[0]), label, target, path.Base(label), path.Base(file)))
			}
		}
	}
	return problems
}

func TestLinksNamingAFileLeadToIt(t *testing.T) {
	for _, doc := range readDocuments(t) {
		for _, p := range linkFileProblems(doc.name, doc.text) {
			t.Error(p)
		}
	}
}

// stepReference is a link to a section followed by the steps of it meant,
// "[syncHandler](controller-client-go.md#8-synchandler), steps 3 and 4", or
// a reference to a numbered section of the same page, "§8, step 4".
var stepReference = regexp.MustCompile(
	`(?:\]\(([^)\s]*)#([^)\s]+)\)|§(\d+)),? steps? (\d+)(?:(?: and | to |-)(\d+))?`)

// numberedItem is an item of a top-level ordered list.
var numberedItem = regexp.MustCompile(`^(\d+)\. `)

// sectionSteps returns the numbers of the top-level ordered list items of
// the section of text under the heading with the anchor, up to the next
// heading of its level or above; nil when no heading has the anchor.
func sectionSteps(text, anchor string) []int {
	var steps []int
	level := 0
	seen := map[string]int{}
	for _, line := range markdownLines(text) {
		if line.fenced {
			continue
		}
		if m := heading.FindStringSubmatch(line.text); m != nil {
			hashes := len(line.text) - len(strings.TrimLeft(line.text, "#"))
			if level > 0 && hashes <= level {
				break
			}
			a := anchorOf(m[1])
			if n := seen[a]; n > 0 {
				seen[a] = n + 1
				a += "-" + strconv.Itoa(n)
			} else {
				seen[a] = 1
			}
			if level == 0 && a == anchor {
				level = hashes
				steps = []int{}
			}
			continue
		}
		if level == 0 {
			continue
		}
		if m := numberedItem.FindStringSubmatch(line.text); m != nil {
			n, _ := strconv.Atoi(m[1])
			steps = append(steps, n)
		}
	}
	return steps
}

// stepProblems returns the step references of a document that name a step
// the section does not have. read returns the text of another document by
// its path relative to this one.
func stepProblems(name, text string, read func(string) (string, bool)) []string {
	var problems []string
	for _, p := range paragraphs(text) {
		flat := strings.ReplaceAll(p.text, "\n", " ")
		for _, idx := range stepReference.FindAllStringSubmatchIndex(flat, -1) {
			m := make([]string, len(idx)/2)
			for i := range m {
				if idx[2*i] >= 0 {
					m[i] = flat[idx[2*i]:idx[2*i+1]]
				}
			}
			line := p.lineAt(idx[0])
			file, anchor, section := m[1], m[2], m[3]
			target := text
			if file != "" {
				var ok bool
				if target, ok = read(file); !ok {
					continue // TestRelativeLinksReachAFileAndHeading reports it
				}
			}
			if section != "" {
				anchor = sectionAnchor(text, section)
			}
			steps := sectionSteps(target, anchor)
			if steps == nil {
				if section != "" {
					problems = append(problems, fmt.Sprintf("%s:%d: %q: no section %s", name, line, m[0], section))
				}
				continue // a missing anchor is TestRelativeLinksReachAFileAndHeading's
			}
			for _, s := range m[4:] {
				if s == "" {
					continue
				}
				if n, _ := strconv.Atoi(s); !slices.Contains(steps, n) {
					problems = append(problems, fmt.Sprintf("%s:%d: %q: the section has no step %d (it has %v)",
						name, line, m[0], n, steps))
				}
			}
		}
	}
	return problems
}

// sectionAnchor is the anchor of the heading numbered n ("## 8. syncHandler")
// in text, "" when there is none.
func sectionAnchor(text, n string) string {
	for _, line := range prose(text) {
		if m := heading.FindStringSubmatch(line); m != nil && strings.HasPrefix(m[1], n+". ") {
			return anchorOf(m[1])
		}
	}
	return ""
}

func TestStepReferencesNameStepsThatExist(t *testing.T) {
	docs := readDocuments(t)
	byName := map[string]string{}
	for _, doc := range docs {
		byName[doc.name] = doc.text
	}
	for _, doc := range docs {
		read := func(file string) (string, bool) {
			text, ok := byName[path.Base(file)]
			return text, ok
		}
		for _, p := range stepProblems(doc.name, doc.text, read) {
			t.Error(p)
		}
	}
}

// The checks find a link that names another file than it leads to, and a
// step a section does not have, across a line break, and pass the right
// forms.
func TestReferenceChecksFindPlantedMistakes(t *testing.T) {
	other := strings.Join([]string{
		"# Other",
		"## 8. syncHandler",
		"1. one",
		"   ```",
		"   4. not a step: in a code block",
		"   ```",
		"2. two",
		"3. three",
		"## 9. Next",
		"4. not syncHandler's",
	}, "\n")
	page := strings.Join([]string{
		"# A page",
		"Right: [other.md](other.md#8-synchandler), [testing.md](testing.md), [page.md](#a-page),",
		"[syncHandler](other.md#8-synchandler), steps 2 and 3; [the",
		"section](other.md#8-synchandler),",
		"step 1.",
		"",
		"Wrong: [failure-modes.md](testing.md#the-soak),",
		"[syncHandler](other.md#8-synchandler), steps 3 and 4, [syncHandler](other.md#8-synchandler),",
		"step",
		"4, §9, step 1, §7, step 1.",
		"",
		"## 9. Its own",
		"1. one",
	}, "\n")
	read := func(file string) (string, bool) { return other, file == "other.md" }
	got := append(linkFileProblems("page.md", page), stepProblems("page.md", page, read)...)
	want := []string{
		"page.md:7: link [failure-modes.md](testing.md#the-soak) says failure-modes.md and leads to testing.md",
		`page.md:8: "](other.md#8-synchandler), steps 3 and 4": the section has no step 4 (it has [1 2 3])`,
		`page.md:8: "](other.md#8-synchandler), step 4": the section has no step 4 (it has [1 2 3])`,
		`page.md:10: "§7, step 1": no section 7`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
