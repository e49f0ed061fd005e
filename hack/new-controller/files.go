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
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// templateOnly are the paths (a file, or a directory with its trailing
// slash) that are the template's, not the copy's: what makes new
// controllers, and the upgrade from the template's release that served
// v1alpha1 alone, which a copy never ran.
var templateOnly = []string{"hack/new-controller/", "docs/make-it-yours.md", "test/e2e/upgrade_test.go",
	"test/e2e/real_node_upgrade_test.go", "test/e2e/real_node_helm_test.go"}

// Lines from a begin marker to its end marker (both included) are the
// template's alone and left out of the copy: the Makefile's
// new-controller-check, README's pointer to this command.
const (
	templateOnlyBegin = "new-controller:template-only:begin"
	templateOnlyEnd   = "new-controller:template-only:end"
)

// isGenerated reports whether hack/update-codegen.sh writes the file:
// those are not copied but generated again in the copy from its own types.
// The Helm chart's templates/*.yaml are hack/helm-chart's (its hand-written
// templates are not .yaml).
func isGenerated(rel string) bool {
	chartTemplate, _ := filepath.Match("artifacts/charts/*/templates/*.yaml", rel)
	return strings.HasPrefix(rel, "pkg/generated/") || strings.HasPrefix(filepath.Base(rel), "zz_generated.") ||
		rel == "artifacts/examples/crd.yaml" || rel == "artifacts/deploy/owned-policy.yaml" || chartTemplate
}

// templateFiles lists the template's files to copy, relative to root, with
// slashes. In a git work tree they are the tracked files (git ls-files):
// what a clone has, without build output, local clusters or a developer's
// scratch files. Anywhere else (an unpacked tarball) a walk, without .git
// and _output. A module cache's copy of the template will not do: a module
// zip leaves out every directory with a go.mod of its own, so hack/tools,
// which pins the generators, the linter and the control plane, is missing.
func templateFiles(root string) ([]string, error) {
	var files []string
	if top, err := exec.Command("git", "-C", root, "rev-parse", "--show-toplevel").Output(); err == nil &&
		sameDir(strings.TrimSpace(string(top)), root) {
		out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
		if err != nil {
			return nil, fmt.Errorf("listing the template's files: git ls-files: %w", err)
		}
		for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			// A file deleted in the work tree but not yet in the index is gone.
			if info, err := os.Lstat(filepath.Join(root, f)); err == nil && info.Mode().IsRegular() {
				files = append(files, f)
			}
		}
	} else {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() && (rel == ".git" || rel == "_output") {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() && rel != oldName { // the binary go build leaves (.gitignore)
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if !contains(files, "hack/tools/controller-gen/go.mod") {
		return nil, fmt.Errorf("template %s has no hack/tools/controller-gen/go.mod: a module cache's copy "+
			"leaves out the nested modules the copy's generators need; use a git clone or a release tarball", root)
	}
	var kept []string
	for _, f := range files {
		if !isTemplateOnly(f) && !isGenerated(f) {
			kept = append(kept, f)
		}
	}
	return kept, nil
}

func isTemplateOnly(rel string) bool {
	for _, p := range templateOnly {
		if rel == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p)) {
			return true
		}
	}
	return false
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func sameDir(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

// isText reports whether a file's content is text the rewriter may edit:
// valid UTF-8 without NUL bytes.
func isText(content []byte) bool {
	return utf8.Valid(content) && !bytes.Contains(content, []byte{0})
}

// dropTemplateOnly removes the template-only blocks of a text.
func dropTemplateOnly(rel, text string) (string, error) {
	if !strings.Contains(text, templateOnlyBegin) {
		return text, nil
	}
	var b strings.Builder
	in := false
	for _, line := range strings.SplitAfter(text, "\n") {
		switch {
		case strings.Contains(line, templateOnlyBegin):
			if in {
				return "", fmt.Errorf("%s: %s inside another template-only block", rel, templateOnlyBegin)
			}
			in = true
		case strings.Contains(line, templateOnlyEnd):
			if !in {
				return "", fmt.Errorf("%s: %s without its begin", rel, templateOnlyEnd)
			}
			in = false
		case !in:
			b.WriteString(line)
		}
	}
	if in {
		return "", errors.New(rel + ": " + templateOnlyBegin + " without its end")
	}
	return b.String(), nil
}

// measuredPages are the pages that hold figures measured on the template:
// the copy keeps them, dated as they are, as a reference, and says whose
// they are. None is the copy's until it measures its own.
var measuredPages = []string{"docs/performance.md", "docs/failure-modes.md"}

// measuredNote opens a measured page in the copy. It names no name of the
// template, which the leftover check would find.
const measuredNote = "> The figures on this page were measured on the template this controller was made from, on " +
	"the\n> dates given with them, not on this controller; `make bench`, `make soak` and the end-to-end tests " +
	"measure\n> this one.\n"

// markMeasured puts measuredNote under the first heading of a measured page.
func markMeasured(rel, text string) string {
	if !slices.Contains(measuredPages, rel) {
		return text
	}
	heading, rest, _ := strings.Cut(text, "\n")
	return heading + "\n\n" + measuredNote + rest
}
