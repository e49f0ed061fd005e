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

// The controller's image as hack/build-image.sh builds it, and what a test
// reads back from its tarball: the docker-style layout (manifest.json, the
// config, one tar per layer), read with the standard library so that the
// check does not share the code that wrote it.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Image is a built image: its reference and its tarball.
type Image struct {
	Ref     string
	Tarball string
}

// BuildImages runs hack/build-image.sh: the controller's image
// (localhost/<name>:dev) and the pause image, in _output/image.
func BuildImages(root, name string) (controller, pause Image, err error) {
	cmd := exec.Command(filepath.Join(root, "hack", "build-image.sh"))
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return Image{}, Image{}, fmt.Errorf("hack/build-image.sh: %w: %s", err, out)
	}
	dir := filepath.Join(root, "_output", "image")
	return Image{Ref: "localhost/" + name + ":dev", Tarball: filepath.Join(dir, name+".tar")},
		Image{Ref: "localhost/pause:dev", Tarball: filepath.Join(dir, "pause.tar")}, nil
}

// BuildReleaseImage builds the image of the controller in the tree at
// source (a release CheckoutRelease wrote) as ref, into tarball.
func BuildReleaseImage(root, source, ref, tarball string) (Image, error) {
	cmd := exec.Command(filepath.Join(root, "hack", "build-image.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "IMAGE_SOURCE="+source, "IMAGE_TAG="+ref, "IMAGE_OUT="+tarball)
	if out, err := cmd.CombinedOutput(); err != nil {
		return Image{}, fmt.Errorf("hack/build-image.sh for %s: %w: %s", source, err, out)
	}
	return Image{Ref: ref, Tarball: tarball}, nil
}

// ImageConfig is what a test checks of an image tarball.
type ImageConfig struct {
	RepoTags   []string
	Entrypoint []string
	Cmd        []string
	User       string
	Env        []string
	OS         string
	// Files are the layers' entries, by path, with their mode and owner.
	Files []ImageFile
}

// ImageFile is one entry of a layer.
type ImageFile struct {
	Path     string
	Mode     int64
	UID, GID int
	Size     int64
	Data     []byte
}

// ReadImageTarball reads the one image of a docker-style tarball.
func ReadImageTarball(path string) (*ImageConfig, error) {
	entries := map[string][]byte{}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		entries[h.Name] = data
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(entries["manifest.json"], &manifest); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if len(manifest) != 1 {
		return nil, fmt.Errorf("manifest.json lists %d images, want 1", len(manifest))
	}
	var config struct {
		OS     string `json:"os"`
		Config struct {
			Entrypoint []string
			Cmd        []string
			User       string
			Env        []string
		} `json:"config"`
	}
	if err := json.Unmarshal(entries[manifest[0].Config], &config); err != nil {
		return nil, fmt.Errorf("config %s: %w", manifest[0].Config, err)
	}
	ic := &ImageConfig{RepoTags: manifest[0].RepoTags, Entrypoint: config.Config.Entrypoint, Cmd: config.Config.Cmd,
		User: config.Config.User, Env: config.Config.Env, OS: config.OS}
	for _, layer := range manifest[0].Layers {
		data, ok := entries[layer]
		if !ok {
			return nil, fmt.Errorf("layer %s is not in the tarball", layer)
		}
		files, err := layerFiles(data)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", layer, err)
		}
		ic.Files = append(ic.Files, files...)
	}
	return ic, nil
}

// layerFiles lists a layer's entries; a layer is a tar, gzipped or not.
func layerFiles(data []byte) ([]ImageFile, error) {
	r, err := maybeGunzip(data)
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(r)
	var files []ImageFile
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		files = append(files, ImageFile{Path: h.Name, Mode: h.Mode, UID: h.Uid, GID: h.Gid, Size: h.Size, Data: data})
	}
}

func maybeGunzip(data []byte) (io.Reader, error) {
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		return gzip.NewReader(bytes.NewReader(data))
	}
	return bytes.NewReader(data), nil
}
