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
	"strings"
	"testing"

	"github.com/kube-samples/sample-controller/test/framework"
)

// The real node's packages and its variable, as the framework names them
// in its skip message: .ci/run installs them and sets the variable to
// required, docs/testing.md tells a user.
func TestRealNodePackagesAndVariable(t *testing.T) {
	ci, docs := read(t, ".ci/run"), read(t, "docs/testing.md")
	// The command's words, its line continuations left out.
	words := strings.ReplaceAll(strings.Join(strings.Fields(ci), " "), " \\ ", " ")
	if !strings.Contains(words, framework.RealNodePackages) {
		t.Errorf(".ci/run does not install %q", framework.RealNodePackages)
	}
	if !strings.Contains(ci, "export "+framework.RealNodeEnv+"=required") {
		t.Errorf(".ci/run does not set %s=required", framework.RealNodeEnv)
	}
	if !strings.Contains(docs, "apt-get install "+framework.RealNodePackages) {
		t.Errorf("docs/testing.md does not say apt-get install %s", framework.RealNodePackages)
	}
	if !strings.Contains(docs, "`"+framework.RealNodeEnv+"=required`") {
		t.Errorf("docs/testing.md does not name %s=required", framework.RealNodeEnv)
	}
}
