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

package docs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// deployObject is an object of artifacts/deploy, as kubectl delete names it.
type deployObject struct {
	resource  string // the kind in lower case, as kubectl takes it
	name      string
	namespace string // "" for one of the cluster's scope
	label     string // its app.kubernetes.io/name
}

// deployLabel is the label every object of artifacts/deploy carries, which
// kubectl delete -l may select them by.
const deployLabel = "app.kubernetes.io/name"

// deployObjects reads the objects of artifacts/deploy (a file holds one, or
// several apart by ---, as the generated owned-policy.yaml), the CRD it
// takes from artifacts/examples left out.
func deployObjects(t *testing.T) []deployObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "artifacts", "deploy", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var objects []deployObject
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split("\n"+string(data), "\n---\n") {
			var o struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name      string            `json:"name"`
					Namespace string            `json:"namespace"`
					Labels    map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if onlyComments(doc) {
				continue // the comments that open a file of several
			}
			if o.Kind == "" || o.Metadata.Name == "" {
				t.Fatalf("%s: no kind or name", f)
			}
			objects = append(objects, deployObject{strings.ToLower(o.Kind), o.Metadata.Name, o.Metadata.Namespace,
				o.Metadata.Labels[deployLabel]})
		}
	}
	return objects
}

// onlyComments reports whether a YAML document holds comments alone.
func onlyComments(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// deletedObjects returns the objects the kubectl delete commands of a shell
// block delete: each resource of a comma-separated list with each name, or
// those of objects that carry the label -l app.kubernetes.io/name=VALUE
// selects (a resource and a label, no name).
func deletedObjects(block string) []deployObject {
	var deleted []deployObject
	for _, line := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		line, _, _ = strings.Cut(line, "#")
		args := strings.Fields(line)
		if len(args) < 3 || args[0] != "kubectl" || args[1] != "delete" {
			continue
		}
		var names []string
		label := ""
		for i, a := range args[3:] {
			if a == "-l" && i+4 < len(args) {
				label, _ = strings.CutPrefix(args[i+4], deployLabel+"=")
			} else if !strings.HasPrefix(a, "-") && (i == 0 || args[i+2] != "-l") {
				names = append(names, a)
			}
		}
		for _, resource := range strings.Split(args[2], ",") {
			for _, name := range names {
				deleted = append(deleted, deployObject{resource: resource, name: name})
			}
			if label != "" {
				deleted = append(deleted, deployObject{resource: resource, label: label})
			}
		}
	}
	return deleted
}

// deploying.md's commands that remove only the controller delete every
// object of artifacts/deploy but the CRD (the namespaced ones with their
// namespace) and nothing else: they once left the FlowSchema behind.
func TestRemovingOnlyTheControllerDeletesEverythingButTheCRD(t *testing.T) {
	page := read(t, "docs/deploying.md")
	_, after, ok := strings.Cut(page, "To remove only the controller")
	if !ok {
		t.Fatal("deploying.md: no \"To remove only the controller\"")
	}
	_, block, ok := strings.Cut(after, "```sh\n")
	if !ok {
		t.Fatal("deploying.md: no shell block after \"To remove only the controller\"")
	}
	block, _, _ = strings.Cut(block, "```")
	deleted := deletedObjects(block)
	objects := deployObjects(t)
	deletedNamespaces := map[string]bool{}
	for _, d := range deleted {
		if d.resource == "namespace" {
			deletedNamespaces[d.name] = true
		}
	}
	for _, o := range objects {
		if o.namespace != "" {
			if !deletedNamespaces[o.namespace] {
				t.Errorf("deploying.md leaves %s %s/%s of artifacts/deploy behind: its namespace is not deleted",
					o.resource, o.namespace, o.name)
			}
			continue
		}
		if !slices.ContainsFunc(deleted, func(d deployObject) bool { return deletes(d, o) }) {
			t.Errorf("deploying.md leaves %s %s of artifacts/deploy behind", o.resource, o.name)
		}
	}
	for _, d := range deleted {
		if !slices.ContainsFunc(objects, func(o deployObject) bool { return deletes(d, o) && o.namespace == "" }) {
			t.Errorf("deploying.md deletes %s %s, which is no object of artifacts/deploy of the cluster's scope",
				d.resource, d.name)
		}
	}
}

// deletes reports whether d, a deleted resource with a name or a label,
// deletes o.
func deletes(d, o deployObject) bool {
	if d.resource != o.resource || d.namespace != "" {
		return false
	}
	if d.label != "" {
		return d.label == o.label
	}
	return d.name == o.name
}
