//go:build e2e

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

package e2e

import (
	"bytes"
	"debug/elf"
	"os"
	"slices"
	"testing"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/test/framework"
)

// hack/build-image.sh builds the image ko would: the static binary alone,
// run as its entrypoint by the distroless nonroot user, no shell. Read back
// from the tarball, with the standard library, as a runtime reads it.
func TestImageIsTheStaticBinaryAloneRunAsNonRoot(t *testing.T) {
	// The image is the same whatever the control plane's minor: the newest
	// minor's suite checks it, and an older one's does not rewrite the
	// tarballs under it.
	if minors, err := framework.KubernetesMinors(cluster.Root); err != nil {
		t.Fatal(err)
	} else if os.Getenv("E2E_KUBECONFIG") == "" && realNodeMinor(t) != minors[0] {
		t.Skipf("the newest minor's suite (%s) checks the image", minors[0])
	}
	controller, pause, err := framework.BuildImages(cluster.Root, samplecontroller.ControllerName)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		image framework.Image
		bin   string
	}{
		{controller, samplecontroller.ControllerName},
		{pause, "pause"},
	} {
		img, err := framework.ReadImageTarball(tc.image.Tarball)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{tc.image.Ref}; !slices.Equal(img.RepoTags, want) {
			t.Errorf("%s: tags %q, want %q", tc.image.Tarball, img.RepoTags, want)
		}
		if want := []string{"/" + tc.bin}; !slices.Equal(img.Entrypoint, want) || len(img.Cmd) != 0 {
			t.Errorf("%s: entrypoint %q cmd %q, want entrypoint %q and no cmd", tc.image.Ref, img.Entrypoint, img.Cmd, want)
		}
		if img.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532 (distroless nonroot, numeric for runAsNonRoot)", tc.image.Ref, img.User)
		}
		if img.OS != "linux" {
			t.Errorf("%s: os %q, want linux", tc.image.Ref, img.OS)
		}
		// One file: no shell, no libc, nothing the process could run but
		// itself; root's, and not writable by the user it runs as.
		if len(img.Files) != 1 {
			var paths []string
			for _, f := range img.Files {
				paths = append(paths, f.Path)
			}
			t.Fatalf("%s holds %q, want only %s", tc.image.Ref, paths, tc.bin)
		}
		f := img.Files[0]
		if f.Path != tc.bin || f.Mode != 0o555 || f.UID != 0 || f.GID != 0 {
			t.Errorf("%s: %s mode %o owner %d:%d, want %s mode 555 owner 0:0", tc.image.Ref, f.Path, f.Mode, f.UID, f.GID, tc.bin)
		}
		exe, err := elf.NewFile(bytes.NewReader(f.Data))
		if err != nil {
			t.Fatalf("%s: %s is not an ELF binary: %v", tc.image.Ref, f.Path, err)
		}
		for _, p := range exe.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s: %s is linked dynamically (%v): the image has no libc", tc.image.Ref, f.Path, p.Type)
			}
		}
	}
}
