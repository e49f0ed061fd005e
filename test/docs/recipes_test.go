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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The recipes are patches in docs/recipes, the changes docs/recipes.md walks
// a fork through, under this controller's names (hack/new-controller
// renames them with the rest). The page shows their code: each block
// marked <!-- recipe NAME.patch FILE --> is the lines the patch adds to
// FILE, as they are, so that the page cannot teach other code than the
// patch applies.

// recipeDir is where the recipes are, relative to the repository root.
const recipeDir = "docs/recipes"

// recipePage is the page that shows them.
const recipePage = "docs/recipes.md"

// patchFile is one file a patch changes: its path and the lines each hunk
// adds, without their leading +.
type patchFile struct {
	path  string
	hunks [][]string
}

// parsePatch reads a git patch's files, in order.
func parsePatch(text string) []patchFile {
	var files []patchFile
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git a/"):
			files = append(files, patchFile{path: strings.TrimPrefix(strings.Fields(line)[2], "a/")})
		case len(files) == 0, strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "):
		case strings.HasPrefix(line, "@@ "):
			f := &files[len(files)-1]
			f.hunks = append(f.hunks, nil)
		case strings.HasPrefix(line, "+"):
			f := &files[len(files)-1]
			if len(f.hunks) > 0 {
				f.hunks[len(f.hunks)-1] = append(f.hunks[len(f.hunks)-1], strings.TrimPrefix(line, "+"))
			}
		}
	}
	return files
}

// shown is what a page shows of a file a patch changes: the lines its
// hunks add, blank lines at either end of a hunk dropped, a new file's
// license header too (the first comment, to its blank line), hunks
// separated by a line "...".
func shown(f patchFile) []string {
	var lines []string
	for i, hunk := range f.hunks {
		if len(hunk) > 0 && strings.HasPrefix(hunk[0], "/*") {
			if end := slices.Index(hunk, "*/"); end >= 0 {
				hunk = hunk[end+1:]
			}
		}
		for len(hunk) > 0 && strings.TrimSpace(hunk[0]) == "" {
			hunk = hunk[1:]
		}
		for len(hunk) > 0 && strings.TrimSpace(hunk[len(hunk)-1]) == "" {
			hunk = hunk[:len(hunk)-1]
		}
		if i > 0 {
			lines = append(lines, "...")
		}
		lines = append(lines, hunk...)
	}
	return lines
}

// recipeMarker opens a block that shows a recipe's file.
var recipeMarker = regexp.MustCompile(`^<!-- recipe (\S+\.patch) (\S+) -->$`)

// recipeBlocks returns the blocks a page marks as a recipe's: by patch,
// then file, the lines of the fenced block after the marker.
func recipeBlocks(t *testing.T, name, text string) map[string]map[string][]string {
	t.Helper()
	blocks := map[string]map[string][]string{}
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		m := recipeMarker.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Errorf("%s:%d: the recipe marker is not followed by a fenced block", name, i+1)
			continue
		}
		var block []string
		for _, l := range lines[i+2:] {
			if strings.HasPrefix(l, "```") {
				break
			}
			block = append(block, l)
		}
		if blocks[m[1]] == nil {
			blocks[m[1]] = map[string][]string{}
		}
		blocks[m[1]][m[2]] = block
	}
	return blocks
}

// recipes reads the recipes, by file name.
func recipes(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(recipeDir), "*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no recipes in %s", recipeDir)
	}
	texts := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		texts[filepath.Base(p)] = string(b)
	}
	return texts
}

// isTest reports whether a file a recipe changes is a test, which the
// page names but does not show.
func isTest(path string) bool {
	return strings.HasSuffix(path, "_test.go")
}

// Every file a recipe changes that is not a test is shown on the page as
// the patch adds it, and every test is named there; no block shows what
// the patch does not add.
func TestRecipeCodeOnThePageIsThePatchs(t *testing.T) {
	page := read(t, recipePage)
	blocks := recipeBlocks(t, recipePage, page)
	spans := map[string]bool{}
	for _, s := range code(page) {
		spans[s] = true
	}
	all := recipes(t)
	for name, text := range all {
		files := parsePatch(text)
		if len(files) == 0 {
			t.Errorf("%s: no files parsed", name)
		}
		if !spans[recipeDir+"/"+name] {
			t.Errorf("%s does not name `%s/%s`", recipePage, recipeDir, name)
		}
		for _, f := range files {
			block, ok := blocks[name][f.path]
			switch {
			case isTest(f.path):
				if !spans[f.path] {
					t.Errorf("%s does not name %s's test `%s`", recipePage, name, f.path)
				}
			case !ok:
				t.Errorf("%s shows no block <!-- recipe %s %s -->", recipePage, name, f.path)
			case !slices.Equal(block, shown(f)):
				t.Errorf("%s, <!-- recipe %s %s -->: the block is\n%s\nthe patch adds\n%s", recipePage, name, f.path,
					strings.Join(block, "\n"), strings.Join(shown(f), "\n"))
			}
			delete(blocks[name], f.path)
		}
		for path := range blocks[name] {
			t.Errorf("%s shows a block of %s that %s does not change", recipePage, path, name)
		}
		delete(blocks, name)
	}
	for name := range blocks {
		t.Errorf("%s shows blocks of %s, which is not in %s", recipePage, name, recipeDir)
	}
}

// Each recipe applies to the code as it is, or is applied already (as in
// the copy make new-controller-check tests with its recipes): a change to
// what a recipe touches (a name, a line beside its registration) is a
// change to the recipe too.
func TestRecipesApply(t *testing.T) {
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	gitApply := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", append([]string{"apply", "--check"}, args...)...)
		cmd.Dir = abs
		// git apply in a directory below another repository's work tree
		// (a copy in the template's _output) would take the paths as that
		// repository's: it looks no higher than the root.
		cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(abs))
		return cmd.CombinedOutput()
	}
	for name := range recipes(t) {
		patch := filepath.ToSlash(filepath.Join(recipeDir, name))
		out, err := gitApply(patch)
		if err == nil {
			continue
		}
		if _, errApplied := gitApply("--reverse", patch); errApplied != nil {
			t.Errorf("%s neither applies nor is applied: %v\n%s", patch, err, out)
		}
	}
}

// The comparison finds a block that differs from its patch by a line.
func TestRecipeBlocksAreComparedLineByLine(t *testing.T) {
	patch := "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,2 +1,4 @@\n a\n+\tb := 1\n+\n c\n" +
		"@@ -9,2 +11,3 @@\n d\n-e\n+\tE()\n"
	files := parsePatch(patch)
	if len(files) != 1 || files[0].path != "x.go" {
		t.Fatalf("parsed %+v", files)
	}
	want := []string{"\tb := 1", "...", "\tE()"}
	if got := shown(files[0]); !slices.Equal(got, want) {
		t.Errorf("shown %q, want %q", got, want)
	}
	page := "<!-- recipe x.patch x.go -->\n```go\n\tb := 2\n...\n\tE()\n```\n"
	if got := recipeBlocks(t, "page.md", page)["x.patch"]["x.go"]; slices.Equal(got, want) {
		t.Errorf("a block with b := 2 compares equal to the patch's b := 1")
	}
}
