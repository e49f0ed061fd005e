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
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// goDirective is a go.mod's go line.
var goDirective = regexp.MustCompile(`(?m)^go (1\.\d+(?:\.\d+)?)$`)

// readmeGo is the Go release README's prerequisites ask for.
var readmeGo = regexp.MustCompile(`(?m)^- Go (1\.\d+(?:\.\d+)?) or later`)

// versionParts splits 1.26.7 into its numbers; 1.26 is 1.26.0.
func versionParts(v string) []int {
	parts := make([]int, 3)
	for i, p := range strings.SplitN(v, ".", 3) {
		parts[i], _ = strconv.Atoi(p)
	}
	return parts
}

// README's Go is the newest go directive of the module and its tool
// modules (hack/tools/...): with an older Go, make test stops at the first
// module that needs more (it once said 1.26 where Prometheus' needs 1.26.7).
func TestReadmeAsksForTheGoEveryModuleNeeds(t *testing.T) {
	newest, where := "", ""
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		m := goDirective.FindStringSubmatch(read(t, filepath.ToSlash(rel)))
		if m == nil {
			t.Errorf("%s: no go directive", rel)
			return nil
		}
		if newest == "" || slices.Compare(versionParts(m[1]), versionParts(newest)) > 0 {
			newest, where = m[1], rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := readmeGo.FindStringSubmatch(read(t, "README.md"))
	if m == nil {
		t.Fatal("README.md: no \"- Go 1.N.P or later\" in the prerequisites")
	}
	if m[1] != newest {
		t.Errorf("README.md asks for Go %s; %s needs go %s", m[1], where, newest)
	}
}

// makeTestRuns is README's sentence on the minors make test runs.
var makeTestRuns = regexp.MustCompile("`make test` runs (1\\.\\d+) and (1\\.\\d+), the newest and the oldest")

// README says which minors make test runs: the newest (make e2e) and the
// Makefile's TEST_CONTRACT_MINORS, the oldest (it once said all three).
func TestReadmeNamesTheMinorsMakeTestRuns(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(root, "hack", "tools", "k8s-1.*"))
	if err != nil {
		t.Fatal(err)
	}
	minors := make([]int, 0, len(dirs))
	for _, d := range dirs {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "k8s-1."))
		if err != nil {
			t.Fatalf("%s: not a minor", d)
		}
		minors = append(minors, n)
	}
	if len(minors) < 2 {
		t.Fatalf("minors in hack/tools: %v", minors)
	}
	if !strings.Contains(read(t, "Makefile"), "\nTEST_CONTRACT_MINORS := $(lastword $(K8S_MINORS))\n") {
		t.Fatal("Makefile: TEST_CONTRACT_MINORS is no longer the oldest minor; say here and in README which make test runs")
	}
	m := makeTestRuns.FindStringSubmatch(strings.ReplaceAll(read(t, "README.md"), "\n", " "))
	if m == nil {
		t.Fatalf("README.md: no %q", makeTestRuns)
	}
	want := []string{"1." + strconv.Itoa(slices.Max(minors)), "1." + strconv.Itoa(slices.Min(minors))}
	if got := m[1:]; !slices.Equal(got, want) {
		t.Errorf("README.md says make test runs %v; it runs %v", got, want)
	}
}
