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

// Package names ties every name that must be spelled out where Go cannot be
// imported (the YAML of artifacts/deploy, the Makefile, the
// scripts of hack/) to its one source in Go: the controller's name
// (samplecontroller.ControllerName), the API group, kind and resource, the
// default Lease. A rename that edits one side and misses the other fails
// here, in make unit, rather than in a cluster: a leader election Role for a
// Lease nobody takes leaves every replica Ready and none leading.
//
// The checks read the files as text or YAML, with no cluster and no kubectl;
// each failure names the file, what it says and what the Go source says.
package names

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// read returns a file of the repository, given its path from the root.
func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// expectEveryMatch checks that pattern, whose first group captures a name,
// matches at least once in the file at path, and that every match captures
// want. what says what the name is, for the message.
func expectEveryMatch(t *testing.T, path, pattern, want, what string) {
	t.Helper()
	text := read(t, path)
	re := regexp.MustCompile(pattern)
	matches := re.FindAllStringSubmatchIndex(text, -1)
	if len(matches) == 0 {
		t.Errorf("%s: nothing matches %s, where %s should be %q", path, pattern, what, want)
		return
	}
	for _, m := range matches {
		if got := text[m[2]:m[3]]; got != want {
			line := strings.Count(text[:m[0]], "\n") + 1
			t.Errorf("%s:%d: %s is %q, want %q", path, line, what, got, want)
		}
	}
}
