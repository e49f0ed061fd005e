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

// Command image wraps one static binary in a container image, the way ko
// does: no base image, no daemon, no Dockerfile. The image has one layer
// holding the binary at /<its name>, runs it as its entrypoint, as the
// distroless "nonroot" user (65532), and holds nothing else: no shell, no
// libc, no CA bundle (the controller reaches only its API server, whose CA
// the pod's service account volume carries).
//
//	image -binary _output/image/sample-controller -tag localhost/sample-controller:dev -o out.tar
//	image -binary _output/image/sample-controller -push REGISTRY/sample-controller:TAG
//
// -o writes a docker-style tarball (docker load, ctr images import, kind
// load image-archive); -push writes to a registry with the credentials of
// ~/.docker/config.json (docker login, or a credential helper). The image is
// reproducible: the same binary gives the same digest (no timestamps).
//
// go-containerregistry is what ko and crane build on for exactly this; it
// is in this module already (kwokctl requires it), so it adds no module.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// nonRoot is distroless' "nonroot" user and group, numerically, so that the
// kubelet can check runAsNonRoot without a passwd file.
const nonRoot = "65532:65532"

func main() {
	binary := flag.String("binary", "", "the static binary to wrap (required)")
	tag := flag.String("tag", "", "the image's name in the tarball (with -o)")
	out := flag.String("o", "", "write the image as a docker-style tarball to this file")
	push := flag.String("push", "", "push the image to this reference (REGISTRY/REPO:TAG)")
	flag.Parse()
	if *binary == "" || (*out == "") == (*push == "") || (*out != "" && *tag == "") {
		fmt.Fprintln(os.Stderr, "usage: image -binary FILE (-tag REF -o FILE | -push REF)")
		os.Exit(2)
	}
	if err := run(*binary, *tag, *out, *push); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binary, tag, out, push string) error {
	img, err := build(binary)
	if err != nil {
		return err
	}
	if push != "" {
		ref, err := name.ParseReference(push)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return err
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s@%s\n", ref.Context(), digest)
		return nil
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}

// build is the image: one layer with the binary, its config naming it as
// the entrypoint and the user.
func build(binary string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	path := "/" + filepath.Base(binary)
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	// Owned by root and not writable by the user the image runs as: the
	// process cannot replace its own binary, read-only root or not.
	if err := tw.WriteHeader(&tar.Header{Name: path[1:], Mode: 0o555, Size: int64(len(data)), Typeflag: tar.TypeReg,
		Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar.Bytes())), nil
	}, tarball.WithMediaType(types.DockerLayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.Entrypoint = []string{path}
	cfg.Config.User = nonRoot
	return mutate.ConfigFile(img, cfg)
}
