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

package names

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/conversionwebhook"
)

// The binary and the image are named for the controller: the Makefile and
// hack/run.sh build _output/bin/<name>, which the e2e and bench suites run.
// The image (hack/build-image.sh) takes its name from the module path, and
// TestImageIsTheStaticBinaryAloneRunAsNonRoot (test/e2e) reads it back.
func TestBuildNamesTheBinaryAndImageForTheController(t *testing.T) {
	name := samplecontroller.ControllerName
	expectEveryMatch(t, "Makefile", `(?m)^BIN := _output/bin/(\S+)$`, name, "the binary make build writes")
	expectEveryMatch(t, "hack/run.sh", `(?m)^BIN="\$\{ROOT\}/_output/bin/([^"]+)"$`, name, "the binary make run runs")
}

// make run's local control plane is the kwokctl cluster the e2e framework
// also names for the controller, and it waits for the CRD the controller
// looks up.
func TestRunScriptNamesTheClusterAndCRD(t *testing.T) {
	expectEveryMatch(t, "hack/run.sh", `--name=([^)\s]+)`, samplecontroller.ControllerName, "the kwokctl cluster")
	expectEveryMatch(t, "hack/run.sh", `kubectl wait --for=condition=Established .* crd/(\S+) `, samplecontroller.FooCRDName,
		"the CRD make run waits for")
	expectEveryMatch(t, "hack/run.sh", `kubectl patch crd/(\S+) `, samplecontroller.FooCRDName, "the CRD make run points at its webhook")
	expectEveryMatch(t, "hack/run.sh", `"\$\{WEBHOOK_ADDRESS\}"'(/[a-z]+)"`, conversionwebhook.Path, "the webhook's path")
}

// controller-gen names the CRD file it writes <group>_<plural>.yaml, and
// hack/update-codegen.sh moves that file to artifacts/examples/crd.yaml.
func TestCodegenScriptNamesTheCRDFileControllerGenWrites(t *testing.T) {
	expectEveryMatch(t, "hack/update-codegen.sh", `(?m)^CRD_FILE="\$\{CRD_OUT\}/([^"]+)"$`,
		samplecontroller.GroupName+"_"+samplecontroller.FooResource+".yaml", "the file controller-gen writes")
}

// Each Kubernetes minor's tools are a module nested in this one, named
// <module>/hack/tools/k8s-<minor>: hack/pin-kubernetes.sh writes that module
// line when it pins a minor, so it must name this module as go.mod does.
func TestPinScriptNamesTheToolModulesUnderThisModule(t *testing.T) {
	module := regexp.MustCompile(`(?m)^module (\S+)$`).FindStringSubmatch(read(t, "go.mod"))
	if module == nil {
		t.Fatal("go.mod: no module line")
	}
	expectEveryMatch(t, "hack/pin-kubernetes.sh", `echo "module (\S+)/hack/tools/k8s-\$\{MINOR\}"`, module[1],
		"the module a pinned minor's tools are nested in")
}

// make compiles everything as hack/build-image.sh compiles the image's
// controller, static and with -trimpath: the Go cache keys a compile by
// both, so a make test compiling any other way would leave the image's
// build every dependency to compile again.
func TestMakeCompilesAsTheImageIsBuilt(t *testing.T) {
	expectEveryMatch(t, "hack/build-image.sh", `CGO_ENABLED=(\d) go (?:-C \S+ )?build -trimpath `, "0",
		"cgo in the image's builds")
	expectEveryMatch(t, "Makefile", `(?m)^export CGO_ENABLED := (\d)$`, "0", "cgo in make's builds")
	expectEveryMatch(t, "Makefile", `(?m)^export GOFLAGS := .* (-\S+)\)$`, "-trimpath", "the flag make adds to every build")
}

// The Makefile's lists of end-to-end tests (E2E_OWN_CONTROL_PLANE_TESTS, the
// tests make e2e runs beside the others; E2E_MINORS_SKIP, those the older
// minors leave out) name tests of test/e2e: go test's -run and -skip match
// nothing for a name that is not, and say nothing of it.
func TestMakefileNamesEndToEndTestsThatExist(t *testing.T) {
	declared := map[string]bool{}
	files, err := filepath.Glob(filepath.Join("..", "e2e", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllStringSubmatch(string(data), -1) {
			declared[m[1]] = true
		}
	}
	// A list may go on over lines: each ends in $\ (no space joins them).
	makefile := strings.ReplaceAll(read(t, "Makefile"), "$\\\n", "")
	lists := regexp.MustCompile(`(?m)^E2E_\w+ := (.*)$`).FindAllStringSubmatch(makefile, -1)
	named := 0
	for _, list := range lists {
		for _, name := range regexp.MustCompile(`Test\w+`).FindAllString(list[1], -1) {
			named++
			if !declared[name] {
				t.Errorf("Makefile: %s names %s, which test/e2e does not declare", list[0], name)
			}
		}
	}
	// E2E_OWN_CONTROL_PLANE_TESTS (6) and E2E_MINORS_SKIP's own eight.
	if named != 14 {
		t.Errorf("Makefile: %d test names in its E2E_ lists, want 14", named)
	}
}
