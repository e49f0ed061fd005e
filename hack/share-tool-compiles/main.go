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

// Command share-tool-compiles makes the controller's module and the tool
// modules make test builds (tools, and the control plane of the
// controller's own minor) select one version of every module two of them
// require: the newest any of them requires. Run from the module root:
//
//	go run ./hack/share-tool-compiles
//
// Go's build cache compiles a package once for every build that asks for it
// only if everything below it is the same version in each build: one
// differing golang.org/x/sys compiles nearly all of them again, silently.
// On a fresh machine that is the difference between compiling client-go,
// the API types, grpc and OpenTelemetry once and compiling them three or
// four times (docs/testing.md, What make test runs).
//
// A module is raised, never lowered (no member can select less than its
// dependencies ask for): when this was written, etcd went from 3.6.8 to
// 3.7.0 and kwok to client-go v0.37.2; controller-gen to the controller's
// Kubernetes modules (v0.36.0 to v0.37.2); the controller, its control plane
// and govulncheck to the golang.org/x, grpc and OpenTelemetry releases
// Prometheus asks for (golang.org/x/sys v0.48.0 to v0.49.0, grpc v1.83.1 to
// v1.84.0, OpenTelemetry v1.45.0 to v1.47.0); and Prometheus to client-go
// v0.37.2. Each go get may raise more, so it repeats until no module is
// behind.
//
// hack/pin-kubernetes.sh runs it; run it after moving any of their pins.
// Its test fails until the modules agree.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Each round raises every member behind; a round's go get can raise what an
// earlier member had agreed on, for the next round to spread. A group that
// has not agreed after this many is a loop to look into, not to wait out.
const maxRounds = 10

func main() {
	if err := share("."); err != nil {
		fmt.Fprintln(os.Stderr, "share-tool-compiles:", err)
		os.Exit(1)
	}
}

func share(root string) error {
	for range maxRounds {
		group, err := members(root)
		if err != nil {
			return err
		}
		want := targets(group)
		raised := false
		for _, m := range group {
			raise := behind(m, want)
			if len(raise) == 0 {
				continue
			}
			fmt.Fprintf(os.Stderr, "%s: go get %s\n", m.dir, strings.Join(raise, " "))
			if err := goIn(root, m.dir, append([]string{"get"}, raise...)...); err != nil {
				return err
			}
			if err := goIn(root, m.dir, "mod", "tidy"); err != nil {
				return err
			}
			raised = true
		}
		if !raised {
			return nil
		}
	}
	return fmt.Errorf("the modules still disagree after %d rounds of raising", maxRounds)
}

// goIn runs the go command in the module at dir, on its own go.mod alone
// (no workspace), free to update it.
func goIn(root, dir string, args ...string) error {
	cmd := exec.Command("go", append([]string{"-C", dir}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: go %s: %w", dir, strings.Join(args, " "), err)
	}
	return nil
}
