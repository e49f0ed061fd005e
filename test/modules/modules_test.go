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

// Package modules checks what the project's Go modules select, where that
// matters beyond one module.
package modules

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// The tool modules the local control plane is built from compile many of the
// packages the controller's builds compile: kwok and kwokctl client-go and
// the API types, the control plane of the controller's own minor (the minor
// of its client-go) client-go and all below it. Go's build cache serves
// both from one compile only if the modules select the same version of every
// module they share; one differing version (golang.org/x/sys, say) compiles
// nearly all of them twice on a fresh machine, silently.
// hack/share-tool-compiles.sh makes them agree; this catches a go.mod
// edited alone.
func TestToolModulesSelectTheControllersVersionOfEveryModuleTheyShare(t *testing.T) {
	ours := required(parse(t, "go.mod"))
	clientGo := ours["k8s.io/client-go"]
	// k8s.io/client-go v0.37.2 is Kubernetes 1.37.2.
	release := strings.Split(strings.TrimPrefix(clientGo, "v0."), ".")
	if len(release) != 2 {
		t.Fatalf("go.mod: k8s.io/client-go %q is not a v0.<minor>.<patch> release", clientGo)
	}
	controlPlane := "hack/tools/k8s-1." + release[0] + "/go.mod"
	if got, want := required(parse(t, controlPlane))["k8s.io/kubernetes"], "v1."+release[0]+"."+release[1]; got != want {
		t.Errorf("%s: k8s.io/kubernetes %s, want %s, the release of go.mod's k8s.io/client-go %s",
			controlPlane, got, want, clientGo)
	}
	for _, tools := range []string{"hack/tools/go.mod", controlPlane} {
		theirs := required(parse(t, tools))
		shared := 0
		for _, path := range slices.Sorted(maps.Keys(ours)) {
			other, ok := theirs[path]
			if !ok {
				continue
			}
			shared++
			if other != ours[path] {
				t.Errorf("%s requires %s %s, go.mod %s: run hack/share-tool-compiles.sh", tools, path, other, ours[path])
			}
		}
		// client-go and the API types at least.
		if shared < 20 {
			t.Errorf("%s shares %d of go.mod's %d modules; expected client-go, the API types and what they need",
				tools, shared, len(ours))
		}
	}
}

func parse(t *testing.T, path string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// required maps each module a go.mod requires to its version: in a tidy
// go.mod, the version selected of every module the build needs.
func required(f *modfile.File) map[string]string {
	versions := map[string]string{}
	for _, r := range f.Require {
		versions[r.Mod.Path] = r.Mod.Version
	}
	return versions
}
