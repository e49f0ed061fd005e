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
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"debug/elf"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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

// hack/build-image.sh -push, where the build learns the digest, writes
// what deploys exactly the image it pushed: kubectl kustomize of
// _output/image/pushed and helm template with its values.yaml run the
// digest the registry serves for the tag, not the tag, which the registry
// could come to point elsewhere. Pushed to a registry of the test's own,
// trusted through IMAGE_CA_FILE.
func TestPushedImageIsDeployedByDigest(t *testing.T) {
	// Once per run of make test: the newest minor's suite writes
	// _output/image, as the test above.
	if minors, err := framework.KubernetesMinors(cluster.Root); err != nil {
		t.Fatal(err)
	} else if os.Getenv("E2E_KUBECONFIG") == "" && realNodeMinor(t) != minors[0] {
		t.Skipf("the newest minor's suite (%s) pushes the image", minors[0])
	}
	reg, err := framework.StartRegistry(filepath.Join(outDir, "registry-push"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	const tag = "e2e-pushed"
	repo := reg.Host + "/" + samplecontroller.ControllerName
	cmd := exec.Command(filepath.Join(cluster.Root, "hack", "build-image.sh"), "-push", repo+":"+tag)
	cmd.Dir = cluster.Root
	cmd.Env = append(os.Environ(), "IMAGE_CA_FILE="+reg.CAFile)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/build-image.sh -push: %v: %s", err, out)
	}
	pushed := strings.TrimSpace(string(out))
	if served := servedDigest(t, reg, samplecontroller.ControllerName, tag); pushed != repo+"@"+served {
		t.Fatalf("hack/build-image.sh -push printed %q; the registry serves %s:%s as %s", pushed, repo, tag, served)
	}

	dir := filepath.Join(cluster.Root, "_output", "image", "pushed")
	manifests := decodeObjects(t, kubectl(t, "kustomize", dir))
	chart := decodeObjects(t, helm(t, "template", deployName, chartDir, "--namespace", deployNamespace,
		"--values", filepath.Join(dir, "values.yaml")))
	for what, objects := range map[string]map[string]*unstructured.Unstructured{
		"kubectl kustomize " + dir: manifests, "helm template --values " + dir + "/values.yaml": chart,
	} {
		dep := objects[deploymentKey]
		if dep == nil {
			t.Fatalf("%s: no %s", what, deploymentKey)
		}
		containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		if image := containers[0].(map[string]any)["image"]; image != pushed {
			t.Errorf("%s: image %v, want %s", what, image, pushed)
		}
	}
}

// servedDigest is the digest of the manifest the registry serves for
// repo:tag, worked out from the bytes it sends, as a runtime checks them.
func servedDigest(t *testing.T, reg *framework.Registry, repo, tag string) string {
	t.Helper()
	caPEM, err := os.ReadFile(reg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no CA in %s", reg.CAFile)
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequest(http.MethodGet, "https://"+reg.Host+"/v2/"+repo+"/manifests/"+tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, "+
		"application/vnd.oci.image.manifest.v1+json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v: %s", req.URL, resp.Status, err, body)
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(body))
}
