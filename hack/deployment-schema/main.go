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

// Command deployment-schema writes the server-side apply schema of the
// apps/v1 Deployment alone, as a Go constant holding its YAML
// (pkg/desired/zz_generated.deployment_schema.go; hack/update-codegen.sh
// runs it).
//
// pkg/owned walks Deployments with that schema to find the fields the
// controller owns. client-go has it only as part of the schema of every
// built-in type (k8s.io/client-go/applyconfigurations/internal, not
// importable), and parsing all of that, once per process, cost the
// controller memory and start time (measured in docs/performance.md, "The
// schema: the Deployment's part alone"). This program takes that whole schema from client-go's
// public type converter, keeps the Deployment's type and every named type
// reachable from it, and checks that each type it keeps reads back exactly
// as client-go defines it. Its output changes only when client-go's does:
// the types are written sorted by name, each as client-go has it.
//
//	go run ./hack/deployment-schema -boilerplate hack/boilerplate.go.txt \
//	    -o pkg/desired/zz_generated.deployment_schema.go
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"runtime/debug"
	"sort"

	"go.yaml.in/yaml/v2"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

func main() {
	boilerplate := flag.String("boilerplate", "hack/boilerplate.go.txt", "the license header the file starts with")
	out := flag.String("o", "", "the Go file to write (default: standard output)")
	pkg := flag.String("package", "desired", "the Go package the file belongs to")
	name := flag.String("const", "deploymentSchemaYAML", "the name of the constant that holds the schema")
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*boilerplate, *out, *pkg, *name); err != nil {
		fmt.Fprintln(os.Stderr, "deployment-schema:", err)
		os.Exit(1)
	}
}

func run(boilerplatePath, out, pkg, constName string) error {
	header, err := os.ReadFile(boilerplatePath)
	if err != nil {
		return err
	}
	full, root, err := clientGoDeploymentSchema()
	if err != nil {
		return err
	}
	subset, err := reachable(full, root)
	if err != nil {
		return err
	}
	text, err := yaml.Marshal(subset)
	if err != nil {
		return err
	}
	if err := readsBackAsClientGoHasIt(text, full, *root.NamedType); err != nil {
		return err
	}
	src, err := goFile(header, pkg, constName, *root.NamedType, text)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(src)
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// clientGoDeploymentSchema returns client-go's schema of every built-in type
// and, in it, the apps/v1 Deployment's type: the schema and type pkg/owned
// used before it had its own.
func clientGoDeploymentSchema() (*schema.Schema, schema.TypeRef, error) {
	converter := applyconfigurations.NewTypeConverter(scheme.Scheme)
	typedEmpty, err := converter.ObjectToTyped(&appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}})
	if err != nil {
		return nil, schema.TypeRef{}, fmt.Errorf("client-go's schema of Deployments: %w", err)
	}
	root := typedEmpty.TypeRef()
	if root.NamedType == nil {
		return nil, schema.TypeRef{}, fmt.Errorf("client-go types Deployments with an unnamed type")
	}
	return typedEmpty.Schema(), root, nil
}

// reachable returns the named types of full that root refers to, directly
// or through other types, sorted by name: a schema that types root's values
// as full does.
func reachable(full *schema.Schema, root schema.TypeRef) (*schema.Schema, error) {
	found := map[string]schema.TypeDef{}
	var visitRef func(tr schema.TypeRef) error
	var visitAtom func(a schema.Atom) error
	visitRef = func(tr schema.TypeRef) error {
		if tr.NamedType == nil {
			return visitAtom(tr.Inlined)
		}
		name := *tr.NamedType
		if _, seen := found[name]; seen {
			return nil
		}
		def, ok := full.FindNamedType(name)
		if !ok {
			return fmt.Errorf("client-go's schema refers to type %q and has none by that name", name)
		}
		found[name] = def
		return visitAtom(def.Atom)
	}
	visitAtom = func(a schema.Atom) error {
		if a.List != nil {
			if err := visitRef(a.List.ElementType); err != nil {
				return err
			}
		}
		if m := a.Map; m != nil {
			for _, f := range m.Fields {
				if err := visitRef(f.Type); err != nil {
					return err
				}
			}
			if err := visitRef(m.ElementType); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visitRef(root); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(found))
	for n := range found {
		names = append(names, n)
	}
	sort.Strings(names)
	subset := &schema.Schema{}
	for _, n := range names {
		subset.Types = append(subset.Types, found[n])
	}
	return subset, nil
}

// readsBackAsClientGoHasIt parses the written schema as pkg/owned will
// and fails unless every type in it is client-go's type of that name,
// field for field, and the root type is among them.
func readsBackAsClientGoHasIt(text []byte, full *schema.Schema, rootName string) error {
	parser, err := typed.NewParser(typed.YAMLObject(text))
	if err != nil {
		return fmt.Errorf("the written schema does not parse: %w", err)
	}
	if _, ok := parser.Schema.FindNamedType(rootName); !ok {
		return fmt.Errorf("the written schema has no type %s", rootName)
	}
	for _, written := range parser.Schema.Types {
		original, ok := full.FindNamedType(written.Name)
		if !ok || !written.Equals(&original) {
			return fmt.Errorf("type %s reads back other than client-go has it", written.Name)
		}
	}
	return nil
}

// goFile is the generated Go source: the header, and the schema's YAML as a
// raw string constant.
func goFile(header []byte, pkg, constName, rootName string, text []byte) ([]byte, error) {
	if bytes.ContainsRune(text, '`') {
		return nil, fmt.Errorf("the schema's YAML holds a backquote, which a raw string cannot")
	}
	var b bytes.Buffer
	b.Write(header)
	fmt.Fprintf(&b, "\n// Code generated by hack/deployment-schema. DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	fmt.Fprintf(&b, "// %s is the server-side apply schema of\n", constName)
	fmt.Fprintf(&b, "// %s and of every named type it refers to,\n", rootName)
	fmt.Fprintf(&b, "// as client-go %s defines them.\n", clientGoVersion())
	fmt.Fprintf(&b, "const %s = `%s`\n", constName, text)
	return format.Source(b.Bytes())
}

// clientGoVersion is the version of client-go this program was built with:
// the one go.mod requires.
func clientGoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == "k8s.io/client-go" {
				return m.Version
			}
		}
	}
	return "(version unknown)"
}
