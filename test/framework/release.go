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

package framework

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// CheckoutRelease writes the tree of an earlier commit of the repository at
// root into dir (git archive; no work tree or index is touched), so that a
// test can build and install the release a cluster upgrades from. A shallow
// clone that lacks the commit is deepened from its origin first.
func CheckoutRelease(root, commit, dir string) error {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	if _, err := git("cat-file", "-e", commit+"^{commit}"); err != nil {
		if shallow, _ := git("rev-parse", "--is-shallow-repository"); strings.TrimSpace(shallow) != "true" {
			return fmt.Errorf("commit %s is not in this repository: %w", commit, err)
		}
		if _, err := git("fetch", "--unshallow", "--quiet"); err != nil {
			return fmt.Errorf("commit %s is not in this shallow clone, and deepening it failed: %w", commit, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	extract := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	extract.Stdin = pipe
	var archiveErr strings.Builder
	archive.Stderr = &archiveErr
	if err := archive.Start(); err != nil {
		return err
	}
	out, extractErr := extract.CombinedOutput()
	if err := archive.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", commit, err, archiveErr.String())
	}
	if extractErr != nil {
		return fmt.Errorf("extracting %s: %w: %s", commit, extractErr, out)
	}
	return nil
}
