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
	"errors"
	"fmt"
	"go/format"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// generators are the template's own, run in the copy on its renamed
// sources: a generated file is made again, never renamed (a rename can
// change how its generator lays it out: the plain rule file's YAML folds
// its long lines where they fall).
var generators = [][]string{
	// clientset, listers, informers, apply configurations, deep copies, CRD
	{"hack/update-codegen.sh"},
	// artifacts/monitoring/prometheus-rules.yaml from prometheusrule.yaml;
	// without go test's vet pass, which would type-check the test's ~800
	// dependencies again for the printf checker's facts, as make's go test
	// does not either (GO_TEST in the Makefile)
	{
		"go", "test", "-vet=off", "-count=1", "-run", "^TestPlainRuleFileIsCurrent$", "./test/monitoring",
		"-args", "-update",
	},
}

// generate makes the copy: in a scratch directory beside dir, so that a
// copy that fails half-way never sits in dir, then moved into place.
func generate(root, oldModule string, n names, dir string, stdout, stderr io.Writer) error {
	files, err := templateFiles(root)
	if err != nil {
		return fmt.Errorf("nothing written: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".new-controller-")
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("%w\n(the unfinished copy is left in %s for inspection; delete it when done)", err, stage)
	}

	fmt.Fprintf(stdout, "copying %d files of %s into %s, renamed\n", len(files), root, dir)
	if err := copyRenamed(root, stage, files, oldModule, n); err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, "generating the clientset, listers, informers, deep copies, CRD and plain rule file")
	// kube_codegen.sh looks for stale files in these before it generates.
	for _, d := range []string{"applyconfiguration", "clientset", "informers", "listers"} {
		if err := os.MkdirAll(filepath.Join(stage, "pkg", "generated", d), 0o755); err != nil {
			return fail(err)
		}
	}
	for _, gen := range generators {
		if err := command(stage, stdout, stderr, gen[0], gen[1:]...); err != nil {
			return fail(fmt.Errorf("generating the copy's files: %w", err))
		}
	}
	// Build output is no part of the copy: update-codegen.sh leaves
	// controller-gen in _output/bin, where the copy's own tools go.
	if err := os.RemoveAll(filepath.Join(stage, "_output")); err != nil {
		return fail(err)
	}
	left, err := findLeftovers(stage)
	if err != nil {
		return fail(err)
	}
	if len(left) > 0 {
		var b strings.Builder
		for _, l := range left {
			b.WriteString("\n  " + l.String())
		}
		return fail(fmt.Errorf("%d names of the template left in the copy:%s", len(left), b.String()))
	}
	// An empty dir (checkTarget allowed it) makes way for the copy.
	if err := os.Remove(abs); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	// os.MkdirTemp made the scratch directory for its owner alone.
	if err := os.Chmod(stage, 0o755); err != nil {
		return fail(err)
	}
	if err := os.Rename(stage, abs); err != nil {
		return fail(err)
	}
	return nil
}

// copyRenamed writes each file into stage under its renamed path, its text
// renamed, Go sources formatted again: a rename can reorder imports (gofmt
// sorts each import block by path), realign columns, or make a line too
// long for the linter.
func copyRenamed(root, stage string, files []string, oldModule string, n names) error {
	contents := make(map[string][]byte, len(files))
	var texts []string
	for _, f := range files {
		content, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return err
		}
		contents[f] = content
		if isText(content) {
			texts = append(texts, string(content))
		}
	}
	rw := newNameRewriter(oldModule, n, texts)
	written := map[string]string{}
	for _, f := range files {
		info, err := os.Stat(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return err
		}
		rel := rw.rewrite(f)
		if other, ok := written[rel]; ok {
			return fmt.Errorf("%s and %s would both be %s in the copy", other, f, rel)
		}
		written[rel] = f
		content := contents[f]
		if isText(content) {
			text, err := dropTemplateOnly(f, string(content))
			if err != nil {
				return err
			}
			content = []byte(rw.rewrite(text))
			if strings.HasSuffix(rel, ".md") {
				content = []byte(wrapMarkdown(markMeasured(rel, string(content))))
			}
			if strings.HasSuffix(rel, ".go") {
				if content, err = format.Source(content); err != nil {
					return fmt.Errorf("formatting %s (from %s) after the rename: %w", rel, f, err)
				}
				// lll checks all but the tests (.golangci.yml).
				if !strings.HasSuffix(rel, "_test.go") {
					if content, err = wrapLongLines(content); err != nil {
						return fmt.Errorf("breaking the long lines of %s (from %s): %w", rel, f, err)
					}
				}
			}
		}
		// The copy is the user's to edit: writable, executable where the
		// template's file is (a module cache's copy is read-only).
		mode := os.FileMode(0o644)
		if info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		dst := filepath.Join(stage, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, content, mode); err != nil {
			return err
		}
	}
	return nil
}

// command runs name in dir, its output passed on. GOWORK=off: a go.work
// around the target is not the copy's.
func command(dir string, stdout, stderr io.Writer, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}
