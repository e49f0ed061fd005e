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
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository root, relative to this package.
var root = filepath.Join("..", "..")

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// makeTargetRule is a rule of the Makefile: its targets before the colon.
var makeTargetRule = regexp.MustCompile(`(?m)^([A-Za-z0-9_.$()/ -]+?):(?:[^=]|$)`)

// makeTargets are the targets the Makefile defines.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	targets := map[string]bool{}
	for _, m := range makeTargetRule.FindAllStringSubmatch(read(t, "Makefile"), -1) {
		for _, target := range strings.Fields(m[1]) {
			targets[target] = true
		}
	}
	return targets
}

// code returns what a Markdown text shows as code: its inline code spans
// (codeSpans) and the lines of its fenced blocks.
func code(text string) []string {
	var snippets []string
	for _, line := range markdownLines(text) {
		if line.fenced {
			snippets = append(snippets, line.text)
		}
	}
	for _, span := range codeSpans(text) {
		snippets = append(snippets, span.text)
	}
	return snippets
}

// makeCommand is make run as a command: at the start of a snippet or after
// a space, with an optional VAR=value before it.
var makeCommand = regexp.MustCompile(`(?:^|[\s;(])make ([a-z][a-z0-9.-]*)`)

func TestMakeTargetsNamedInDocsExist(t *testing.T) {
	targets := makeTargets(t)
	for _, want := range []string{"run", "test", "unit", "e2e"} {
		if !targets[want] {
			t.Fatalf("the Makefile parsed has no %q target: the parse is wrong (%v)", want, targets)
		}
	}
	for _, doc := range readDocuments(t) {
		for _, snippet := range code(doc.text) {
			for _, m := range makeCommand.FindAllStringSubmatch(snippet, -1) {
				if !targets[m[1]] {
					t.Errorf("%s: `make %s`: the Makefile has no target %q", doc.name, m[1], m[1])
				}
			}
		}
	}
}

// newControllerFlag is a flag hack/new-controller defines.
var newControllerFlag = regexp.MustCompile(`fs\.(?:String|Bool|Int|Duration)(?:Var)?\((?:&[\w.]+, )?"([a-z-]+)"`)

// flagRow is the first cell of a row of make-it-yours.md's flag table.
var flagRow = regexp.MustCompile("(?m)^\\| `-([a-z-]+)` \\|")

func TestEveryNewControllerFlagIsDocumentedAndNoOther(t *testing.T) {
	if _, err := os.Stat(filepath.Join(root, "hack", "new-controller", "main.go")); os.IsNotExist(err) {
		t.Skip("a controller made from the template has neither hack/new-controller nor its page")
	}
	flags := newControllerFlag.FindAllStringSubmatch(read(t, "hack/new-controller/main.go"), -1)
	defined := make([]string, 0, len(flags))
	for _, m := range flags {
		defined = append(defined, m[1])
	}
	if !slices.Contains(defined, "module") || !slices.Contains(defined, "verify") {
		t.Fatalf("flags parsed from hack/new-controller/main.go: %v; the parse is wrong", defined)
	}
	page := read(t, "docs/make-it-yours.md")
	rows := flagRow.FindAllStringSubmatch(page, -1)
	documented := make([]string, 0, len(rows))
	for _, m := range rows {
		documented = append(documented, m[1])
	}
	for _, f := range defined {
		if !slices.Contains(documented, f) {
			t.Errorf("make-it-yours.md: hack/new-controller's flag -%s has no row in the flag table", f)
		}
	}
	// Every flag the page names, in the table or in code, is one the
	// command has.
	named := documented
	for _, snippet := range code(page) {
		// A span of flags (`-kind Policy -group ...`), or the command's
		// arguments: every word starting with a hyphen is a flag.
		args, ok := "", false
		if len(snippet) > 1 && snippet[0] == '-' && snippet[1] >= 'a' && snippet[1] <= 'z' {
			args, ok = snippet, true
		} else {
			_, args, ok = strings.Cut(snippet, "hack/new-controller ")
		}
		if ok {
			for _, arg := range strings.Fields(args) {
				if strings.HasPrefix(arg, "-") {
					name, _, _ := strings.Cut(strings.TrimPrefix(arg, "-"), "=")
					named = append(named, name)
				}
			}
		}
	}
	for _, f := range named {
		if !slices.Contains(defined, f) {
			t.Errorf("make-it-yours.md names -%s, which hack/new-controller does not define", f)
		}
	}
}

// envRead is an environment variable a Go file reads: through os.Getenv or
// os.LookupEnv, or through a test helper named env... given the name.
var envRead = regexp.MustCompile(`(?:os\.Getenv|os\.LookupEnv|\benv\w*)\((?:t, )?"([A-Z][A-Z0-9_]*)"`)

// makeVariable is a variable the Makefile lets the environment set.
var makeVariable = regexp.MustCompile(`(?m)^([A-Z][A-Z0-9_]*) \?=`)

// envVariablesTheTestsRead are the variables of the Makefile that the
// environment may set, and those that test code reads: files under test/,
// and _test.go files anywhere.
func envVariablesTheTestsRead(t *testing.T) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, m := range makeVariable.FindAllStringSubmatch(read(t, "Makefile"), -1) {
		vars[m[1]] = "Makefile"
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "_output" || rel == ".git" || rel == "hack/tools" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || !(strings.HasPrefix(rel, "test/") || strings.HasSuffix(rel, "_test.go")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range envRead.FindAllStringSubmatch(string(b), -1) {
			vars[m[1]] = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return vars
}

func TestEveryEnvironmentVariableTheTestsReadIsDocumented(t *testing.T) {
	vars := envVariablesTheTestsRead(t)
	for _, want := range []string{"E2E_KUBECONFIG", "FUZZTIME", "CHAOS_SEED"} {
		if vars[want] == "" {
			t.Fatalf("no %s among the variables found (%v): the search is wrong", want, vars)
		}
	}
	page := read(t, "docs/testing.md")
	for name, where := range vars {
		if !strings.Contains(page, "`"+name+"`") {
			t.Errorf("docs/testing.md, Environment variables: %s (read by %s) is not documented", name, where)
		}
	}
}

// figure is a measured amount a later run would change: a duration in
// minutes or seconds, in figures or in words (half an hour), a size in
// bytes, a count of CPU time.
var figure = regexp.MustCompile(`\b\d[\d,.]*\s*(?:-\s*\d[\d,.]*\s*)?` +
	`(?:(?:CPU|core)-(?:minutes|seconds|hours)|minutes?|seconds?|s|ms|[KMG]i?B)\b` +
	`|\b(?:half an|a quarter of an|(?:one|two|three|four|five|ten|twenty|thirty)(?: and a half)?) ` +
	`(?:hours?|minutes?)\b`)

// comments returns the comment lines of a Makefile, shell script or YAML
// file: the lines whose first non-blank character is #.
func comments(text string) []string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			lines = append(lines, line)
		}
	}
	return lines
}

// The measured results live in docs/performance.md and docs/failure-modes.md,
// dated there. A comment beside the build says why in words and points
// there: a figure in it would be out of date by the next run.
func TestBuildCommentsHoldNoMeasurements(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(root, "hack", "*.sh"))
	if err != nil {
		t.Fatal(err)
	}
	files := make([]string, 0, 2+len(scripts))
	files = append(files, "Makefile", ".golangci.yml")
	for _, s := range scripts {
		rel, _ := filepath.Rel(root, s)
		files = append(files, filepath.ToSlash(rel))
	}
	for _, f := range files {
		for _, line := range comments(read(t, f)) {
			if m := figure.FindString(line); m != "" {
				t.Errorf("%s: a comment holds a measurement, %q: move it to docs/performance.md and say why in words: %s",
					f, m, strings.TrimSpace(line))
			}
		}
	}
}

func TestFigureFindsMeasurements(t *testing.T) {
	for _, s := range []string{"took 5.3 minutes", "14.6 CPU-minutes", "292 MB", "about 4 s per target",
		"5 to 12 minutes", "13 MiB", "94 core-minutes", "1.4 minutes", "started half an hour in", "took two minutes"} {
		if !figure.MatchString(s) {
			t.Errorf("figure misses %q", s)
		}
	}
	for _, s := range []string{"E2E_TIMEOUT ?= 45m", "Go 1.27", "k8s-1.35", "nice -n 10", "-s -w",
		"minutes of CPU", "the hour it is held to"} {
		if figure.MatchString(s) {
			t.Errorf("figure finds a measurement in %q", s)
		}
	}
}
