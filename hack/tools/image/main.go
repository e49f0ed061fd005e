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
//	image -from-tarball _output/image/sample-controller.tar -push REGISTRY/sample-controller:TAG [-ca-file CA]
//
// -o writes a docker-style tarball (docker load, ctr images import, kind
// load image-archive); -push writes to a registry with the credentials of
// ~/.docker/config.json (docker login, or a credential helper). The image is
// reproducible: the same binary gives the same digest (no timestamps).
//
// -from-tarball pushes an image already written with -o, unchanged (its
// digest is the tarball's), instead of building one: what the end-to-end
// tests do with the registry they run (hack/tools/registry). -ca-file trusts
// that registry's CA (a PEM file) on top of the system's, for a registry
// whose certificate no public CA signed.
//
// go-containerregistry is what ko and crane build on for exactly this; it
// is in this module already (kwokctl requires it), so it adds no module.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
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
	binary := flag.String("binary", "", "the static binary to wrap (this or -from-tarball)")
	fromTarball := flag.String("from-tarball", "", "push the image of this docker-style tarball, as it is (with -push)")
	tag := flag.String("tag", "", "the image's name in the tarball (with -o)")
	out := flag.String("o", "", "write the image as a docker-style tarball to this file")
	push := flag.String("push", "", "push the image to this reference (REGISTRY/REPO:TAG)")
	caFile := flag.String("ca-file", "", "with -push, trust the registry's CA in this PEM file too")
	flag.Parse()
	if (*binary == "") == (*fromTarball == "") || (*out == "") == (*push == "") || (*out != "" && *tag == "") ||
		(*fromTarball != "" && *push == "") || (*caFile != "" && *push == "") {
		fmt.Fprintln(os.Stderr, "usage: image -binary FILE (-tag REF -o FILE | -push REF)")
		fmt.Fprintln(os.Stderr, "       image -from-tarball FILE -push REF [-ca-file FILE]")
		os.Exit(2)
	}
	if err := run(*binary, *fromTarball, *tag, *out, *push, *caFile); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binary, fromTarball, tag, out, push, caFile string) error {
	var img v1.Image
	var err error
	if fromTarball != "" {
		// nil: the tarball's one image, whatever its tag.
		img, err = tarball.ImageFromPath(fromTarball, nil)
	} else {
		img, err = build(binary)
	}
	if err != nil {
		return err
	}
	if push != "" {
		ref, err := name.ParseReference(push)
		if err != nil {
			return err
		}
		opts := []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
		if caFile != "" {
			transport, err := trusting(caFile)
			if err != nil {
				return err
			}
			opts = append(opts, remote.WithTransport(transport))
		}
		if err := remote.Write(ref, img, opts...); err != nil {
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

// trusting is remote's default transport that also trusts the CA
// certificates of caFile. The system's stay trusted: a registry named by
// -push may be a public one.
func trusting(caFile string) (http.RoundTripper, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-ca-file %s: no PEM certificate in it", caFile)
	}
	transport := remote.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return transport, nil
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
