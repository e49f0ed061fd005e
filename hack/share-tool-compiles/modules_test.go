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
	"reflect"
	"slices"
	"testing"
)

// The repository's own modules: a go.mod edited alone (a tool's pin moved
// without go run ./hack/share-tool-compiles) fails here, in make unit,
// rather than costing a fresh machine minutes of compiles nobody sees.
func TestMakeTestsModulesSelectOneVersionOfEveryModuleTheyShare(t *testing.T) {
	group, err := members("../..")
	if err != nil {
		t.Fatal(err)
	}
	gotDirs := make([]string, 0, len(group))
	for _, m := range group {
		gotDirs = append(gotDirs, m.dir)
	}
	// The control plane of the controller's minor: go.mod's client-go is
	// v0.37.2, Kubernetes 1.37.2.
	wantDirs := []string{".", "hack/tools/k8s-1.37", "hack/tools", "hack/tools/prometheus",
		"hack/tools/controller-gen", "hack/tools/govulncheck", "hack/tools/helm"}
	if !reflect.DeepEqual(gotDirs, wantDirs) {
		t.Fatalf("members %q, want %q", gotDirs, wantDirs)
	}
	if got, want := group[1].requires["k8s.io/kubernetes"], "v1.37.2"; got != want {
		t.Errorf("hack/tools/k8s-1.37 requires k8s.io/kubernetes %s, want %s, the release of go.mod's k8s.io/client-go %s",
			got, want, group[0].requires["k8s.io/client-go"])
	}
	want := targets(group)
	for _, m := range group {
		if raise := behind(m, want); len(raise) > 0 {
			t.Errorf("%s/go.mod is behind the others' %q: run go run ./hack/share-tool-compiles", m.dir, raise)
		}
	}
	// A member shares modules with the controller, or it would save no
	// compile: at least golang.org/x/sys, below nearly every package.
	for _, m := range group[1:] {
		if got, want := m.requires["golang.org/x/sys"], group[0].requires["golang.org/x/sys"]; got != want {
			t.Errorf("%s requires golang.org/x/sys %q, go.mod %q", m.dir, got, want)
		}
	}
}

func TestTargetsAreTheNewestVersionOfModulesTwoMembersRequire(t *testing.T) {
	group := []member{
		{dir: ".", requires: map[string]string{
			"golang.org/x/sys":           "v0.48.0",
			"google.golang.org/protobuf": "v1.36.12-0.20260120151049-f2248ac996af",
			"k8s.io/client-go":           "v0.37.2",
			"example.com/only-ours":      "v1.0.0",
		}},
		{dir: "hack/tools/prometheus", requires: map[string]string{
			"golang.org/x/sys":           "v0.49.0",
			"google.golang.org/protobuf": "v1.36.12",
			"k8s.io/client-go":           "v0.37.1",
			"example.com/only-theirs":    "v2.0.0",
		}},
		{dir: "hack/tools", requires: map[string]string{
			"golang.org/x/sys": "v0.9.0",
			"k8s.io/client-go": "v0.37.2",
		}},
	}
	// A release is newer than the pseudo-versions before it, and versions
	// compare by number, not as text (v0.49.0 is newer than v0.9.0).
	wantTargets := map[string]string{
		"golang.org/x/sys":           "v0.49.0",
		"google.golang.org/protobuf": "v1.36.12",
		"k8s.io/client-go":           "v0.37.2",
	}
	if got := targets(group); !reflect.DeepEqual(got, wantTargets) {
		t.Errorf("targets %v, want %v", got, wantTargets)
	}
	wantBehind := map[string][]string{
		".":                     {"golang.org/x/sys@v0.49.0", "google.golang.org/protobuf@v1.36.12"},
		"hack/tools/prometheus": {"k8s.io/client-go@v0.37.2"},
		"hack/tools":            {"golang.org/x/sys@v0.49.0"},
	}
	for _, m := range group {
		if got := behind(m, wantTargets); !slices.Equal(got, wantBehind[m.dir]) {
			t.Errorf("behind(%s) %q, want %q", m.dir, got, wantBehind[m.dir])
		}
	}
}

func TestControlPlaneIsTheMinorOfTheControllersClientGo(t *testing.T) {
	for clientGo, want := range map[string]string{
		"v0.37.2": "hack/tools/k8s-1.37",
		"v0.35.0": "hack/tools/k8s-1.35",
	} {
		got, err := controlPlaneDir(member{requires: map[string]string{"k8s.io/client-go": clientGo}})
		if err != nil || got != want {
			t.Errorf("client-go %s: %q, %v; want %q", clientGo, got, err, want)
		}
	}
	for _, clientGo := range []string{"", "v1.5.2", "v0.37.0-alpha.1", "v0.0.0-20260101000000-abcdefabcdef"} {
		if got, err := controlPlaneDir(member{requires: map[string]string{"k8s.io/client-go": clientGo}}); err == nil {
			t.Errorf("client-go %q: %q, want an error", clientGo, got)
		}
	}
}

// What a member builds is what its replace directives select: a release of
// the same module replaces the version required; a fork or a directory
// shares nothing by version, and is left out.
func TestMembersBuildWhatTheirReplaceDirectivesSelect(t *testing.T) {
	root := t.TempDir()
	goMod := `module example.com/tools

go 1.26.0

require (
	k8s.io/cri-client v0.36.1
	k8s.io/cri-api v0.37.2
	example.com/forked v1.0.0
	example.com/local v1.0.0
	example.com/other-version v1.0.0
)

replace (
	k8s.io/cri-client => k8s.io/cri-client v0.37.2
	example.com/forked => example.com/fork v1.2.0
	example.com/local => ../local
	example.com/other-version v0.9.0 => example.com/other-version v1.5.0
)
`
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte(goMod), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := read(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"k8s.io/cri-client":         "v0.37.2",
		"k8s.io/cri-api":            "v0.37.2",
		"example.com/other-version": "v1.0.0",
	}
	if !reflect.DeepEqual(m.requires, want) {
		t.Errorf("requires %v, want %v", m.requires, want)
	}
}
