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
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// recipeDir holds the recipes, under the template's names: the copy gets
// them rewritten with its other files (docs/recipes.md shows them, and
// test/docs holds that page to them).
const recipeDir = "../../docs/recipes"

// patchFiles are the files a patch changes, in the patch's order.
func patchFiles(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "diff --git a/") {
			files = append(files, strings.TrimPrefix(strings.Fields(line)[2], "a/"))
		}
	}
	return files
}

// Owning a kind is a second typed sync function beside the Deployment's,
// with its informer: besides its tests and what the generators write, the
// Service recipe is its desired state and cache, its entry among the kinds
// the tools read, its sync, its informer built, its schema, its RBAC rule
// and the linter told its steps are the Deployment's; nothing of
// pkg/owned, which every kind shares.
func TestServiceRecipeIsASecondSyncBesideTheFirst(t *testing.T) {
	var notTests []string
	for _, f := range patchFiles(t, recipeDir+"/own-a-service.patch") {
		if !strings.HasSuffix(f, "_test.go") && !strings.Contains(f, "zz_generated") {
			notTests = append(notTests, f)
		}
	}
	want := []string{".golangci.yml", "artifacts/deploy/clusterrole.yaml", "controller.go", "hack/update-codegen.sh",
		"main.go", "pkg/desired/kinds.go", "pkg/desired/service.go"}
	if !slices.Equal(notTests, want) {
		t.Errorf("the recipe changes %q besides tests, want %q", notTests, want)
	}
}

// A field is the type in every served version and its conversion, the
// mapping and their tests (the admission policy's bounds among them), no
// cache or controller code.
func TestFieldRecipeIsTheTypeAndTheMapping(t *testing.T) {
	want := []string{"hack/owned-policy/policy_test.go", "pkg/apis/samplecontroller/v1alpha1/types.go",
		"pkg/apis/samplecontroller/v1beta1/types.go", "pkg/conversion/v1alpha1.go", "pkg/desired/cache_test.go",
		"pkg/desired/deployment.go", "pkg/desired/deployment_test.go", "test/e2e/container_port_test.go"}
	if files := patchFiles(t, recipeDir+"/add-a-field.patch"); !slices.Equal(files, want) {
		t.Errorf("the recipe changes %q, want %q", files, want)
	}
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

// make new-controller-check applies every recipe of docs/recipes (RECIPES)
// to the Policy copy and runs the end-to-end test each adds (RECIPE_TESTS,
// under the copy's names), and no other.
func TestMakeRunsEveryRecipeAndItsEndToEndTest(t *testing.T) {
	data, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(data)
	applied := strings.Fields(makeVariable(t, makefile, "RECIPES"))
	patches, err := filepath.Glob(recipeDir + "/*.patch")
	if err != nil {
		t.Fatal(err)
	}
	listed := make([]string, 0, len(applied))
	var added []string
	for _, p := range applied {
		listed = append(listed, "../../"+p)
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
					added = append(added, policyRewriter.rewrite(m[1]))
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

// policyRewriter renames the template's names as make new-controller-check's
// copy has them.
var policyRewriter = func() *rewriter {
	n, err := derive(options{Module: "example.com/policy-operator", Group: "policies.example.com", Kind: "Policy"},
		"github.com/kube-samples/sample-controller")
	if err != nil {
		panic(err)
	}
	return newNameRewriter("github.com/kube-samples/sample-controller", n, nil)
}()
