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
	"regexp"
	"slices"
	"strings"
	"testing"
)

// kubernetesCommand is a Kubernetes binary hack/build-tools.sh builds.
var kubernetesCommand = regexp.MustCompile(`k8s\.io/kubernetes/cmd/([a-z-]+)`)

// braces is a list of names in a path, {kube-apiserver,kube-scheduler}.
var braces = regexp.MustCompile(`\{([a-z,-]+)\}`)

// local-control-plane.md's table of modules says what each minor's module
// builds: every Kubernetes binary hack/build-tools.sh builds, and no other
// (it once said three where the newest minor builds five).
func TestLocalControlPlanePageListsTheKubernetesBinariesBuilt(t *testing.T) {
	commands := kubernetesCommand.FindAllStringSubmatch(read(t, "hack/build-tools.sh"), -1)
	built := make([]string, 0, len(commands))
	for _, m := range commands {
		built = append(built, m[1])
	}
	var listed []string
	for _, line := range strings.Split(read(t, "docs/local-control-plane.md"), "\n") {
		if !strings.HasPrefix(line, "| `hack/tools/k8s-<minor>` |") {
			continue
		}
		for _, m := range braces.FindAllStringSubmatch(line, -1) {
			listed = append(listed, strings.Split(m[1], ",")...)
		}
	}
	slices.Sort(built)
	slices.Sort(listed)
	if len(built) < 3 || !slices.Equal(built, listed) {
		t.Errorf("local-control-plane.md lists %v as built from hack/tools/k8s-<minor>; hack/build-tools.sh builds %v",
			listed, built)
	}
}
