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
	"strings"
	"testing"
)

// goBlock is a fenced Go block of a page, indented or not.
var goBlock = regexp.MustCompile("(?ms)^[ \t]*```go\n(.*?)^[ \t]*```")

// The steps of the Deployment's sync that docs/controller-client-go.md
// quotes are the code's: the block that starts from the Deployment a Foo
// asks for is a run of lines of controller.go, line for line, as a learner
// maps them to upstream's.
func TestQuotedDeploymentStepsAreControllerGos(t *testing.T) {
	page := read(t, "docs/controller-client-go.md")
	var quoted []string
	for _, m := range goBlock.FindAllStringSubmatch(page, -1) {
		if lines := trimmedLines(m[1]); len(lines) > 0 && lines[0] == "want := desired.DeploymentFor(foo)" {
			quoted = lines
		}
	}
	if quoted == nil {
		t.Fatal("controller-client-go.md quotes no steps from want := desired.DeploymentFor(foo)")
	}
	if !containsRun(trimmedLines(read(t, "controller.go")), quoted) {
		t.Errorf("controller-client-go.md quotes steps controller.go does not have, in this order:\n%s",
			strings.Join(quoted, "\n"))
	}
}

// A quote with a line the code lacks is found.
func TestContainsRunFindsAChangedLine(t *testing.T) {
	code := []string{"a", "b", "c", "d"}
	if !containsRun(code, []string{"b", "c"}) || containsRun(code, []string{"b", "x"}) ||
		containsRun(code, []string{"c", "b"}) {
		t.Error("containsRun does not tell a run of lines from others")
	}
}

// trimmedLines are text's lines without their indentation, blank ones left
// out.
func trimmedLines(text string) []string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// containsRun reports whether run occurs in lines, one line after another.
func containsRun(lines, run []string) bool {
	for i := 0; i+len(run) <= len(lines); i++ {
		if strings.Join(lines[i:i+len(run)], "\n") == strings.Join(run, "\n") {
			return true
		}
	}
	return false
}
