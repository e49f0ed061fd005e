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
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// leftoverPatterns find the template's names in the copy. They are written
// independently of the rewriter's rules, so that a spelling the rules miss
// is found, not missed twice.
const kindForm = "kind"

var leftoverPatterns = []struct {
	what string
	re   *regexp.Regexp
}{
	{"module path", regexp.MustCompile(`kube-samples`)},
	{"API group, its package, metric prefix or name", regexp.MustCompile(`(?i)sample[-_ ]?controller`)},
	{"API client alias", regexp.MustCompile(`\bsample(` + strings.Join(oldVersions, "|") +
		`|scheme|clientset|Client|InformerFactory|Factory)\b`)},
	{kindForm, regexp.MustCompile(`Foos?([^a-z0-9]|$)`)},
	{kindForm, regexp.MustCompile(`(^|[^A-Za-z])foos?([^a-z]|$)`)},
	{kindForm, regexp.MustCompile(`(^|[^A-Z])FOOS?([^A-Za-z]|$)`)},
	{"short name", regexp.MustCompile("(^|[\\s=\\[(\"'`,])fo([\\s,\\])\"'`]|$)")},
}

// allowed are the template names a copy keeps, each for its reason. An
// entry is a path (matched with filepath.Match; "*" for any) and the text
// the allowed name stands in.
var allowed = []struct {
	path, text, reason string
}{
	{"*", "Copyright The Sample Controller Authors.",
		"the copy derives from the template, whose copyright notices it keeps (Apache-2.0, section 4(c))"},
	{"artifacts/examples/crd.yaml", "foo.example.com/CamelCase",
		"metav1.Condition's doc comment (k8s.io/apimachinery), which controller-gen copies into the CRD"},
	{"artifacts/charts/*/templates/crd.yaml", "foo.example.com/CamelCase",
		"the same doc comment, in the CRD's template that hack/helm-chart makes from artifacts/examples/crd.yaml"},
}

// leftover is one template name found in the copy.
type leftover struct {
	path string
	line int
	what string
	text string
}

func (l leftover) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", l.path, l.line, l.what, strings.TrimSpace(l.text))
}

// findLeftovers reads every file under root but .git and _output and
// returns each line that still holds a name of the template, outside the
// allowed texts. Binary files are skipped: the rewriter does not edit them
// either.
func findLeftovers(root string) ([]leftover, error) {
	var found []leftover
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || rel == "_output" {
				return filepath.SkipDir
			}
			return nil
		}
		for _, pat := range leftoverPatterns {
			if pat.re.MatchString(rel) {
				found = append(found, leftover{rel, 0, pat.what + " in the file's path", rel})
			}
		}
		content, err := os.ReadFile(p)
		if err != nil || !isText(content) {
			return err
		}
		found = append(found, leftoversIn(rel, string(content))...)
		return nil
	})
	sort.SliceStable(found, func(i, j int) bool { return found[i].path < found[j].path })
	return found, err
}

func leftoversIn(rel, text string) []leftover {
	var found []leftover
	for i, line := range strings.Split(text, "\n") {
		checked := line
		for _, a := range allowed {
			if ok, _ := filepath.Match(a.path, rel); ok || a.path == "*" {
				checked = strings.ReplaceAll(checked, a.text, "")
			}
		}
		for _, pat := range leftoverPatterns {
			if pat.re.MatchString(checked) {
				found = append(found, leftover{rel, i + 1, pat.what, line})
				break
			}
		}
	}
	return found
}
