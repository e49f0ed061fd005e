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

// expectStatShown checks that page shows patch's diff stat, file by file,
// and nothing else as a stat.
func expectStatShown(t *testing.T, page, patch string) {
	t.Helper()
	files, changed := patchStat(t, patch)
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	lines := docStatLine.FindAllStringSubmatch(string(text), -1)
	shown := make([]string, 0, len(lines))
	for _, m := range lines {
		shown = append(shown, m[1]+" "+m[2])
	}
	stat := make([]string, 0, len(files))
	for _, f := range files {
		stat = append(stat, fmt.Sprintf("%s %d", f, changed[f]))
	}
	if !slices.Equal(shown, stat) {
		t.Errorf("%s shows the recipe as\n%s\nthe patch is\n%s", page, strings.Join(shown, "\n"),
			strings.Join(stat, "\n"))
	}
}

// The Service recipe is what docs/make-it-yours.md says it is, file by file,
// and owning a kind stays a registration: besides its tests and what the
// generators write, four files, none of them the controller's own code.
func TestServiceRecipeIsFourFilesBesideTests(t *testing.T) {
	files, _ := patchStat(t, "recipes/own-a-service.patch")
	var notTests []string
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") && !strings.Contains(f, "zz_generated") {
			notTests = append(notTests, f)
		}
	}
	want := []string{"artifacts/deploy/clusterrole.yaml", "hack/update-codegen.sh", "pkg/desired/kinds.go",
		"pkg/desired/service.go"}
	if !slices.Equal(notTests, want) {
		t.Errorf("the recipe changes %q besides tests, want %q", notTests, want)
	}
	expectStatShown(t, "../../docs/make-it-yours.md", "recipes/own-a-service.patch")
}

// The field recipe is what docs/controller-client-go.md says it is: the
// type in every served version and its conversion, the mapping and their
// tests, no cache or controller code.
func TestFieldRecipeIsTheTypeAndTheMapping(t *testing.T) {
	files, _ := patchStat(t, "recipes/add-a-field.patch")
	want := []string{"pkg/apis/policies/v1alpha1/types.go", "pkg/apis/policies/v1beta1/types.go",
		"pkg/conversion/v1alpha1.go", "pkg/desired/cache_test.go", "pkg/desired/deployment.go",
		"pkg/desired/deployment_test.go", "test/e2e/container_port_test.go"}
	if !slices.Equal(files, want) {
		t.Errorf("the recipe changes %q, want %q", files, want)
	}
	expectStatShown(t, "../../docs/controller-client-go.md", "recipes/add-a-field.patch")
}

// makeVariable is the value of a Makefile's NAME := value line.
func makeVariable(t *testing.T, makefile, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` := (.*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile sets no %s", name)
	}
	return m[1]
}

// make new-controller-check applies every recipe in recipes/ (RECIPES) and
// runs the end-to-end test each adds (RECIPE_TESTS), and no other.
func TestMakeRunsEveryRecipeAndItsEndToEndTest(t *testing.T) {
	data, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(data)
	applied := strings.Fields(makeVariable(t, makefile, "RECIPES"))
	patches, err := filepath.Glob("recipes/*.patch")
	if err != nil {
		t.Fatal(err)
	}
	listed := make([]string, 0, len(applied))
	var added []string
	for _, p := range applied {
		listed = append(listed, strings.TrimPrefix(p, "hack/new-controller/"))
	}
	testFunc := regexp.MustCompile(`(?m)^\+func (Test\w+)\(t \*testing\.T\)`)
	for _, p := range patches {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range strings.Split(string(text), "diff --git a/")[1:] {
			if strings.HasPrefix(file, "test/e2e/") {
				for _, m := range testFunc.FindAllStringSubmatch(file, -1) {
					added = append(added, m[1])
				}
			}
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, patches) {
		t.Errorf("RECIPES is %q, the recipes are %q", listed, patches)
	}
	run := strings.Split(makeVariable(t, makefile, "RECIPE_TESTS"), "|")
	slices.Sort(run)
	slices.Sort(added)
	if !slices.Equal(run, added) {
		t.Errorf("RECIPE_TESTS runs %q, the recipes add the end-to-end tests %q", run, added)
	}
}
