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

// Command owned-schema writes the server-side apply schema of the kinds a
// Foo owns alone, as a Go constant holding its YAML
// (pkg/generated/ownedschema/zz_generated.owned_schema.go, beside the other
// generated code; hack/update-codegen.sh runs it with a -kind for each kind
// desired.OwnedKinds lists, and hack/verify-codegen.sh checks its output).
//
// pkg/owned walks the owned objects with that schema to find the fields the
// controller owns. client-go has it only as part of the schema of every
// built-in type (k8s.io/client-go/applyconfigurations/internal, not
// importable), and parsing all of that, once per process, cost the
// controller memory and start time (measured in docs/performance.md, "The
// schema: the Deployment's part alone"). This program takes that whole
// schema from client-go's public type converter, keeps each kind's type and
// every named type reachable from them, and checks that each type it keeps
// reads back exactly as client-go defines it. Its output changes only when
// client-go's or the list of kinds does: the types are written sorted by
// name, each as client-go has it.
//
//	go run ./hack/owned-schema -boilerplate hack/boilerplate.go.txt \
//	    -kind apps/v1/Deployment -o pkg/generated/ownedschema/zz_generated.owned_schema.go
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"go.yaml.in/yaml/v2"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

func main() {
	boilerplate := flag.String("boilerplate", "hack/boilerplate.go.txt", "the license header the file starts with")
	out := flag.String("o", "", "the Go file to write (default: standard output)")
	pkg := flag.String("package", "ownedschema", "the Go package the file belongs to")
	name := flag.String("const", "YAML", "the name of the constant that holds the schema")
	var kinds kindList
	flag.Var(&kinds, "kind", "a kind whose schema to keep, as group/version/Kind (apps/v1/Deployment; "+
		"v1/Service for the core group); repeat it for each kind")
	flag.Parse()
	if flag.NArg() != 0 || len(kinds) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*boilerplate, *out, *pkg, *name, kinds); err != nil {
		fmt.Fprintln(os.Stderr, "owned-schema:", err)
		os.Exit(1)
	}
}

// kindList is the -kind flags, in order.
type kindList []runtimeschema.GroupVersionKind

func (k *kindList) String() string { return fmt.Sprint(*k) }

func (k *kindList) Set(s string) error {
	i := strings.LastIndex(s, "/")
	if i < 0 {
		return fmt.Errorf("%q is not group/version/Kind", s)
	}
	gv, err := runtimeschema.ParseGroupVersion(s[:i])
	if err != nil || s[i+1:] == "" {
		return fmt.Errorf("%q is not group/version/Kind", s)
	}
	*k = append(*k, gv.WithKind(s[i+1:]))
	return nil
}

func run(boilerplatePath, out, pkg, constName string, kinds []runtimeschema.GroupVersionKind) error {
	header, err := os.ReadFile(boilerplatePath)
	if err != nil {
		return err
	}
	full, roots, err := clientGoSchema(kinds)
	if err != nil {
		return err
	}
	subset, err := reachable(full, roots...)
	if err != nil {
		return err
	}
	text, err := yaml.Marshal(subset)
	if err != nil {
		return err
	}
	rootNames := make([]string, 0, len(roots))
	for _, root := range roots {
		rootNames = append(rootNames, *root.NamedType)
	}
	if err := readsBackAsClientGoHasIt(text, full, rootNames...); err != nil {
		return err
	}
	src, err := goFile(header, pkg, constName, rootNames, text)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(src)
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// clientGoSchema returns client-go's schema of every built-in type and, in
// it, the type of each kind: the schema and types pkg/owned used before it
// had its own.
func clientGoSchema(kinds []runtimeschema.GroupVersionKind) (*schema.Schema, []schema.TypeRef, error) {
	converter := applyconfigurations.NewTypeConverter(scheme.Scheme)
	var full *schema.Schema
	roots := make([]schema.TypeRef, 0, len(kinds))
	for _, gvk := range kinds {
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			return nil, nil, fmt.Errorf("client-go has no type for %s: %w", gvk, err)
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		typedEmpty, err := converter.ObjectToTyped(obj)
		if err != nil {
			return nil, nil, fmt.Errorf("client-go's schema of %s: %w", gvk, err)
		}
		root := typedEmpty.TypeRef()
		if root.NamedType == nil {
			return nil, nil, fmt.Errorf("client-go types %s with an unnamed type", gvk)
		}
		full = typedEmpty.Schema()
		roots = append(roots, root)
	}
	return full, roots, nil
}

// reachable returns the named types of full that the roots refer to,
// directly or through other types, sorted by name: a schema that types the
// roots' values as full does.
func reachable(full *schema.Schema, roots ...schema.TypeRef) (*schema.Schema, error) {
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
	for _, root := range roots {
		if err := visitRef(root); err != nil {
			return nil, err
		}
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
// field for field, and every root type is among them.
func readsBackAsClientGoHasIt(text []byte, full *schema.Schema, rootNames ...string) error {
	parser, err := typed.NewParser(typed.YAMLObject(text))
	if err != nil {
		return fmt.Errorf("the written schema does not parse: %w", err)
	}
	for _, rootName := range rootNames {
		if _, ok := parser.Schema.FindNamedType(rootName); !ok {
			return fmt.Errorf("the written schema has no type %s", rootName)
		}
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
func goFile(header []byte, pkg, constName string, rootNames []string, text []byte) ([]byte, error) {
	if bytes.ContainsRune(text, '`') {
		return nil, fmt.Errorf("the schema's YAML holds a backquote, which a raw string cannot")
	}
	var b bytes.Buffer
	b.Write(header)
	fmt.Fprintf(&b, "\n// Code generated by hack/owned-schema. DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "// Package %s is the server-side apply schema of a few kinds, cut out of\n", pkg)
	fmt.Fprintf(&b, "// client-go's schema of every built-in type by hack/owned-schema.\n")
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	fmt.Fprintf(&b, "// %s is the server-side apply schema of\n", constName)
	for _, rootName := range rootNames {
		fmt.Fprintf(&b, "// %s,\n", rootName)
	}
	fmt.Fprintf(&b, "// and of every named type they refer to,\n")
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
