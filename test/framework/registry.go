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

// An OCI registry for the tests (hack/tools/registry): in memory, over
// HTTPS with a CA of its own, on a free port of 127.0.0.1, run as a Process.
// Images are pushed to it by hack/tools/image from the tarballs BuildImages
// writes, and a real node pulls them once told to trust its CA
// (RealNode.TrustRegistry).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Registry is a registry StartRegistry started.
type Registry struct {
	*Process
	// Host is where it listens, 127.0.0.1:PORT: the first element of the
	// names of the images it holds.
	Host string
	// CAFile is the PEM certificate of the CA its serving certificate is
	// signed by: what a client trusts to pull or push.
	CAFile string

	imageTool string
}

// StartRegistry builds hack/tools/registry and hack/tools/image into dir
// and runs the registry, its files (CA, address, log) in dir; ips are more
// addresses its certificate is valid for (a node's IP), beside 127.0.0.1.
// Stop stops it; so does the end of the test binary (KillAll, Pdeathsig).
func StartRegistry(dir string, ips ...string) (*Registry, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, err
	}
	// Built as hack/build-image.sh builds the image tool: from the tools'
	// own module, which pins go-containerregistry. Built per directory
	// (not into the shared _output/bin), so that runs side by side never
	// replace each other's binary; go build's cache makes that cheap.
	build := exec.Command("go", "-C", filepath.Join(root, "hack", "tools"), "build", "-o", bin+"/",
		"./registry", "./image")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building hack/tools/registry and image: %w: %s", err, out)
	}
	caFile, addrFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "address")
	// An address left by an earlier run would be taken for this one's.
	for _, f := range []string{caFile, addrFile} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	p, err := StartProcess("registry", filepath.Join(dir, "registry.log"), filepath.Join(bin, "registry"),
		"-addr=127.0.0.1:0", "-ca-file="+caFile, "-addr-file="+addrFile, "-ip="+strings.Join(ips, ","))
	if err != nil {
		return nil, err
	}
	r := &Registry{Process: p, CAFile: caFile, imageTool: filepath.Join(bin, "image")}
	err = Poll(context.Background(), 50*time.Millisecond, DefaultTimeout, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("the registry exited: %s", Trim(p.Log(), 2000))
		}
		data, err := os.ReadFile(addrFile)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		r.Host = strings.TrimSpace(string(data))
		return err == nil, err
	})
	if err != nil {
		p.Kill()
		return nil, err
	}
	return r, nil
}

// Stop stops the registry, and with it every image it held (in memory).
// Its log stays in its directory. Safe to call more than once.
func (r *Registry) Stop() {
	r.Kill()
}

// PushImage pushes the image of a docker-style tarball (as BuildImages
// writes) to the registry as repo:tag, trusting the registry's CA only for
// it, and returns the reference by digest that names exactly what was
// pushed: HOST/REPO@sha256:....
func (r *Registry) PushImage(tarball, repo, tag string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	ref := r.Host + "/" + repo + ":" + tag
	cmd := exec.CommandContext(ctx, r.imageTool, "-from-tarball", tarball, "-push", ref, "-ca-file", r.CAFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("pushing %s to %s: %w: %s", tarball, ref, err, stderr.String())
	}
	digestRef := strings.TrimSpace(string(out))
	if prefix := r.Host + "/" + repo + "@sha256:"; !strings.HasPrefix(digestRef, prefix) ||
		len(digestRef) != len(prefix)+64 {
		return "", fmt.Errorf("pushing %s to %s: the image tool printed %q, want %s<64 hex digits>", tarball, ref,
			digestRef, prefix)
	}
	return digestRef, nil
}
