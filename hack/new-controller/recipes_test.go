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
	"regexp"
	"slices"
	"strings"
	"testing"
)

// patchStat is a patch's files with the lines each adds and removes, in
// the patch's order, as `git apply --stat` counts them.
func patchStat(t *testing.T, path string) (files []string, changed map[string]int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed = map[string]int{}
	file := ""
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git a/"):
			file = strings.TrimPrefix(strings.Fields(line)[2], "a/")
			files = append(files, file)
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "):
		case strings.HasPrefix(line, "+"), strings.HasPrefix(line, "-"):
			changed[file]++
		}
	}
	return files, changed
}

// docStat is the diff stat a page shows for a recipe: its lines "path | N".
var docStatLine = regexp.MustCompile(`(?m)^ (\S+) +\| +(\d+) `)

// The Service recipe is what docs/make-it-yours.md says it is, file by file,
// and owning a kind stays a registration: besides its tests and what the
// generators write, four files, none of them the controller's own code.
func TestServiceRecipeIsFourFilesBesideTests(t *testing.T) {
	files, changed := patchStat(t, "recipes/own-a-service.patch")
	var notTests []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && !strings.Contains(f, "zz_generated") {
			notTests = append(notTests, f)
		}
	}
	want := []string{"artifacts/deploy/clusterrole.yaml", "hack/update-codegen.sh", "pkg/desired/owned.go",
		"pkg/desired/service.go"}
	if !slices.Equal(notTests, want) {
		t.Errorf("the recipe changes %q besides tests, want %q", notTests, want)
	}

	page, err := os.ReadFile("../../docs/make-it-yours.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := docStatLine.FindAllStringSubmatch(string(page), -1)
	shown := make([]string, 0, len(lines))
	for _, m := range lines {
		shown = append(shown, m[1]+" "+m[2])
	}
	stat := make([]string, 0, len(files))
	for _, f := range files {
		stat = append(stat, fmt.Sprintf("%s %d", f, changed[f]))
	}
	if !slices.Equal(shown, stat) {
		t.Errorf("docs/make-it-yours.md shows the recipe as\n%s\nthe patch is\n%s",
			strings.Join(shown, "\n"), strings.Join(stat, "\n"))
	}
}
