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

// Package reports tests what make test prints of its failures: a CI log
// keeps the tail of a run, so the tail must name what failed and why
// (hack/summarize-failures.sh, hack/step.sh).
package reports

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's top directory.
const root = "../.."

// summarize runs hack/summarize-failures.sh with prefix over input.
func summarize(t *testing.T, prefix, input string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "hack/summarize-failures.sh"), prefix)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/summarize-failures.sh: %v", err)
	}
	return string(out)
}

// The summary at the end of a go test's output names each failed test with
// what it logged, and the package: without -v a test's lines follow its
// --- FAIL line, with -v they come before it, among other tests' lines; a
// message of several lines keeps its first few further lines.
func TestSummaryNamesEachFailedTestWithWhatItLogged(t *testing.T) {
	for _, tc := range []struct {
		name, prefix, input, summary string
	}{
		{
			name: "without -v",
			input: "ok  \texample.com/a\t0.1s\n" +
				"--- FAIL: TestSync (0.00s)\n" +
				"    sync_test.go:12: got 2 writes\n" +
				"        want 1\n" +
				"--- FAIL: TestQueue (0.00s)\n" +
				"    --- FAIL: TestQueue/fresh (0.00s)\n" +
				"        queue_test.go:40: queued 0\n" +
				"    --- PASS: TestQueue/backlog (0.00s)\n" +
				"FAIL\n" +
				"FAIL\texample.com/b\t0.2s\n" +
				"ok  \texample.com/c\t0.1s\n",
			summary: "Failed:\n" +
				"--- FAIL: TestSync (0.00s)\n" +
				"      sync_test.go:12: got 2 writes\n" +
				"          want 1\n" +
				"--- FAIL: TestQueue (0.00s)\n" +
				"    --- FAIL: TestQueue/fresh (0.00s)\n" +
				"          queue_test.go:40: queued 0\n" +
				"FAIL\texample.com/b\t0.2s\n",
		},
		{
			name:   "with -v",
			prefix: "[1.35] ",
			input: "=== RUN   TestFoo\n" +
				"    foo_test.go:10: creating\n" +
				"=== RUN   TestBar\n" +
				"    bar_test.go:5: fine\n" +
				"--- PASS: TestBar (1.00s)\n" +
				"=== NAME  TestFoo\n" +
				"    foo_test.go:20: 4 Foos not Ready after 5m:\n" +
				"        a\n" +
				"        b\n" +
				"        c\n" +
				"        d\n" +
				"    foo_test.go:30: log of the controller:\n" +
				"I1130 09:31:33.545454 not the message's\n" +
				"        e\n" +
				"--- FAIL: TestFoo (300.00s)\n" +
				"FAIL\n" +
				"FAIL\texample.com/e2e\t301.0s\n",
			summary: "[1.35] Failed:\n" +
				"[1.35] --- FAIL: TestFoo (300.00s)\n" +
				"[1.35]       foo_test.go:10: creating\n" +
				"[1.35]       foo_test.go:20: 4 Foos not Ready after 5m:\n" +
				"[1.35]           a\n" +
				"[1.35]           b\n" +
				"[1.35]           c\n" +
				"[1.35]       foo_test.go:30: log of the controller:\n" +
				"[1.35] FAIL\texample.com/e2e\t301.0s\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := summarize(t, tc.prefix, tc.input)
			passed, summary, found := strings.Cut(out, tc.prefix+"Failed:\n")
			if !found {
				t.Fatalf("no summary in:\n%s", out)
			}
			// Every line passed through first, each after the prefix.
			var want strings.Builder
			for line := range strings.Lines(tc.input) {
				want.WriteString(tc.prefix + line)
			}
			if passed != want.String() {
				t.Errorf("passed through:\n%s\nwant:\n%s", passed, want.String())
			}
			if got := tc.prefix + "Failed:\n" + summary; got != tc.summary {
				t.Errorf("summary:\n%s\nwant:\n%s", got, tc.summary)
			}
		})
	}
}

// A step that fails keeps its output as <step>.failed, one that passes as
// <step>.log, and the report make test prints at its end holds the last
// lines of each failed step alone.
func TestTheReportHoldsTheLastLinesOfEachFailedStep(t *testing.T) {
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(root, "hack/step.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hack/step.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	step := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command("hack/step.sh", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			return string(out), exit.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
		return string(out), 0
	}

	if out, code := step("-report"); code != 0 || out != "make test failed outside its steps (the builds): its first error is above\n" {
		t.Errorf("the report with no step failed: exit %d, %q", code, out)
	}
	if out, code := step("verify", "sh", "-c", "echo linted"); code != 0 || out != "linted\n" {
		t.Errorf("a step that passes: exit %d, %q; want 0, %q", code, out, "linted\n")
	}
	var lines strings.Builder
	for i := 1; i <= 25; i++ {
		lines.WriteString("line " + strings.Repeat("x", i%3) + "\n")
	}
	failing := "for i in $(seq 1 25); do printf 'line %.*s\\n' $((i % 3)) xx; done; exit 3"
	if out, code := step("unit", "bash", "-c", failing); code != 3 || out != lines.String() {
		t.Errorf("a step that fails: exit %d, %q; want 3, %q", code, out, lines.String())
	}
	for name, want := range map[string]bool{"verify.log": true, "verify.failed": false, "unit.log": false, "unit.failed": true} {
		if _, err := os.Stat(filepath.Join(dir, "_output/steps", name)); (err == nil) != want {
			t.Errorf("_output/steps/%s: exists %v, want %v", name, err == nil, want)
		}
	}

	report := "make test: unit failed; its last lines (all of them: _output/steps/unit.failed):\n"
	all := strings.SplitAfter(lines.String(), "\n")
	report += strings.Join(all[25-20:25], "")
	if out, code := step("-report"); code != 0 || out != report {
		t.Errorf("the report: exit %d,\n%s\nwant:\n%s", code, out, report)
	}
}

// trackedFilesCheck commits files (path: content) to a new git repository and
// runs hack/verify-tracked-files.sh on it, returning its output and whether it passed.
func trackedFilesCheck(t *testing.T, files map[string][]byte) (string, bool) {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"},
			args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q")
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", ".")
	git("commit", "-q", "-m", "files")
	out, err := exec.Command(filepath.Join(root, "hack/verify-tracked-files.sh"), dir).CombinedOutput()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("hack/verify-tracked-files.sh: %v", err)
	}
	return string(out), err == nil
}

// make verify fails when a compiled executable or a file over 1 MiB is
// tracked, naming each, and passes sources, scripts and a file of exactly 1 MiB.
func TestVerifyRefusesATrackedBinaryOrLargeFile(t *testing.T) {
	source := map[string][]byte{
		"main.go":        []byte("package main\n"),
		"hack/run.sh":    []byte("#!/usr/bin/env bash\necho hi\n"),
		"docs/limit.txt": []byte(strings.Repeat("x", 1024*1024)),
	}
	if out, ok := trackedFilesCheck(t, source); !ok {
		t.Errorf("sources refused:\n%s", out)
	}

	planted := map[string][]byte{
		"main.go":      []byte("package main\n"),
		"owned-policy": append([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1}, make([]byte, 64)...),
		"bin/tool":     append([]byte{0xcf, 0xfa, 0xed, 0xfe}, make([]byte, 64)...),
		"big.json":     []byte(strings.Repeat("x", 1024*1024+1)),
	}
	out, ok := trackedFilesCheck(t, planted)
	if ok {
		t.Fatalf("passed with a binary and a large file tracked:\n%s", out)
	}
	for _, want := range []string{
		"owned-policy: a compiled ELF executable\n",
		"bin/tool: a compiled Mach-O executable\n",
		"big.json: 1048577 bytes, over the 1048576 a tracked file may have\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "main.go") {
		t.Errorf("output names main.go, a source:\n%s", out)
	}
}
