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
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// The tool modules whose builds share compiles with the controller's
// (".": the controller, its unit and end-to-end tests), relative to its
// module root, beside the control plane of the controller's own minor
// (members adds it). What each builds in make test, and why it is here:
//   - hack/tools: etcd, kwok and kwokctl, which build client-go and the API
//     types as the controller does;
//   - hack/tools/prometheus: Prometheus and promtool, whose build compiles
//     client-go, the API types, grpc and OpenTelemetry as the control plane
//     does (half its source);
//   - hack/tools/controller-gen: the CRD generator, on the API types and
//     apiextensions-apiserver's;
//   - hack/tools/govulncheck: on golang.org/x/tools and the x/ modules;
//   - hack/tools/helm: Helm, whose build compiles client-go, the API types,
//     apiextensions and the CLI runtime (v0.37.1 as Helm 4.3.1 pins them,
//     one patch behind the controller's: everything compiled twice).
//
// They raise the controller's and its control plane's golang.org/x, grpc,
// OpenTelemetry and prometheus/common above what Kubernetes 1.37.2 pins
// (x/net v0.60.0 to v0.61.0, grpc v1.83.1 to v1.84.0, ...): the versions the
// controller then ships with, as a controller that takes fixes beyond its
// Kubernetes release does. Without them, a fresh make test takes longer
// (docs/performance.md, make test).
//
// Left out: hack/tools/golangci-lint, whose linters share little of their
// source with the rest, while their hundreds of modules would raise the
// controller's; and the older minors' control planes, whose
// contract is run on the release as it ships, every module at its version.
var tools = []string{
	"hack/tools",
	"hack/tools/prometheus",
	"hack/tools/controller-gen",
	"hack/tools/govulncheck",
	"hack/tools/helm",
}

// A member is one module of the group: its directory, relative to the
// controller's module root, and the version of each module it builds: a
// tidy go.mod requires every module its build needs, at the version it
// selects, unless a replace directive says otherwise.
type member struct {
	dir      string
	requires map[string]string
}

// controlPlaneDir is the module of the control plane of the controller's
// own minor, the minor of its k8s.io/client-go: the control plane that
// compiles client-go and everything below it, as the controller does.
func controlPlaneDir(controller member) (string, error) {
	clientGo := controller.requires["k8s.io/client-go"]
	// k8s.io/client-go v0.37.2 is Kubernetes 1.37.2.
	release := strings.Split(strings.TrimPrefix(clientGo, "v0."), ".")
	if !semver.IsValid(clientGo) || len(release) != 2 || semver.Prerelease(clientGo) != "" {
		return "", fmt.Errorf("go.mod: k8s.io/client-go %q is not a v0.<minor>.<patch> release", clientGo)
	}
	return "hack/tools/k8s-1." + release[0], nil
}

// members reads the group's go.mod files under root: the controller's
// first, then the control plane of its minor, then the other tools.
func members(root string) ([]member, error) {
	controller, err := read(root, ".")
	if err != nil {
		return nil, err
	}
	controlPlane, err := controlPlaneDir(controller)
	if err != nil {
		return nil, err
	}
	group := []member{controller}
	for _, dir := range append([]string{controlPlane}, tools...) {
		m, err := read(root, dir)
		if err != nil {
			return nil, err
		}
		group = append(group, m)
	}
	return group, nil
}

func read(root, dir string) (member, error) {
	path := filepath.Join(root, filepath.FromSlash(dir), "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return member{}, err
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		return member{}, err
	}
	requires := map[string]string{}
	for _, r := range f.Require {
		requires[r.Mod.Path] = r.Mod.Version
	}
	// A replacement is what builds: the control planes' modules replace
	// each Kubernetes staging module with its release (k8s.io/cri-client
	// v0.36.1, required by a dependency, builds as v0.37.2). One by
	// another module or a directory shares nothing by version.
	for _, r := range f.Replace {
		if _, ok := requires[r.Old.Path]; !ok || (r.Old.Version != "" && r.Old.Version != requires[r.Old.Path]) {
			continue
		}
		if r.New.Path == r.Old.Path && r.New.Version != "" {
			requires[r.Old.Path] = r.New.Version
		} else {
			delete(requires, r.Old.Path)
		}
	}
	return member{dir: dir, requires: requires}, nil
}

// targets returns, for each module that two or more members require, the
// newest version any of them requires: the one all must select. Go's
// minimal version selection lets a member raise a requirement, never lower
// one below what its dependencies ask, so the newest is the only version
// every member can agree on.
func targets(group []member) map[string]string {
	newest := map[string]string{}
	requiredBy := map[string]int{}
	for _, m := range group {
		for path, version := range m.requires {
			requiredBy[path]++
			if semver.Compare(version, newest[path]) > 0 {
				newest[path] = version
			}
		}
	}
	for path, n := range requiredBy {
		if n < 2 {
			delete(newest, path)
		}
	}
	return newest
}

// behind returns what m must raise to agree with the group, as go get
// arguments (path@version), sorted.
func behind(m member, targets map[string]string) []string {
	var raise []string
	for _, path := range slices.Sorted(maps.Keys(m.requires)) {
		if target, ok := targets[path]; ok && m.requires[path] != target {
			raise = append(raise, path+"@"+target)
		}
	}
	return raise
}
