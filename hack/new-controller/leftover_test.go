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
	"testing"
)

// TestPlantedLeftoversAreFound plants one of each template name in an
// otherwise renamed tree and checks each is reported, by file and line,
// and that the allowed texts and look-alike words are not.
func TestPlantedLeftoversAreFound(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"main.go": "// Copyright The Sample Controller Authors.\npackage main\n\n" +
			"import policiesv1alpha1 \"example.com/policy-operator/pkg/apis/policies/v1alpha1\"\n" +
			"var food, footer, info = 1, 2, 3\n" +
			"var x = \"github.com/kube-samples/sample-controller\"\n",
		"docs/ops.md": "Policy Operator\n" +
			"#### SampleControllerDown\n" +
			"rate(samplecontroller_reconcile_total[5m])\n" +
			"kubectl get foos\n" +
			"enqueueFoo\n" +
			"SOAK_FOOS=1\n" +
			"shortName=fo,\n" +
			"samplescheme.AddToScheme\n",
		"artifacts/examples/crd.yaml":           "description: foo.example.com/CamelCase\n",
		"artifacts/examples/example-foo.yaml":   "kind: Policy\n",
		"_output/bin/ignored":                   "sample-controller\n",
		"artifacts/examples/kustomization.yaml": "- crd.yaml # foo.example.com/CamelCase is allowed in crd.yaml only\n",
	}
	writeTree(t, root, files)
	found, err := findLeftovers(root)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(found))
	for _, l := range found {
		got = append(got, l.String())
	}
	want := []string{
		"artifacts/examples/example-foo.yaml:0: kind in the file's path: artifacts/examples/example-foo.yaml",
		"artifacts/examples/kustomization.yaml:1: kind: - crd.yaml # foo.example.com/CamelCase is allowed in crd.yaml only",
		"docs/ops.md:2: API group, its package, metric prefix or name: #### SampleControllerDown",
		"docs/ops.md:3: API group, its package, metric prefix or name: rate(samplecontroller_reconcile_total[5m])",
		"docs/ops.md:4: kind: kubectl get foos",
		"docs/ops.md:5: kind: enqueueFoo",
		"docs/ops.md:6: kind: SOAK_FOOS=1",
		"docs/ops.md:7: short name: shortName=fo,",
		"docs/ops.md:8: API client alias: samplescheme.AddToScheme",
		"main.go:6: module path: var x = \"github.com/kube-samples/sample-controller\"",
	}
	if len(got) != len(want) {
		t.Fatalf("found %d leftovers:\n%q\nwant %d:\n%q", len(got), got, len(want), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("leftover %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// writeTree writes files, each a path relative to root (with slashes) and
// its content, creating the directories they need.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
