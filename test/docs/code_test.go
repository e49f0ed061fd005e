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
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// What the docs write as code must exist: a page that names a function,
// a type, a method or a file the code no longer has teaches what is not
// there. This file checks the inline code spans of the documents (not
// fenced blocks: those are shell sessions, YAML and excerpts, held
// otherwise) by three rules.
//
// Paths. A span with a slash whose first element is a top-level directory
// of the repository (pkg/owned, test/e2e/upgrade_test.go, hack/run.sh,
// artifacts/deploy/...; a leading ./, a trailing / or /... dropped) must
// name a file or directory that exists, or a file a recipe of docs/recipes
// adds. A span with a placeholder (<group>, *, {a,b}) or a space is not a
// path.
//
// Go identifiers. A span shaped as a Go selector chain, each element an
// identifier with optional call parentheses or type arguments
// (desired.NewDeployment, desired.DeploymentLister.Deployments, CachedDeployment.Values, *owned.Fields,
// listers.ResourceIndexer[T], SamplecontrollerV1beta1().Foos(ns).Get,
// Samplecontroller().V1beta1().Foos()), resolves against the declarations
// of the module's packages and of every package they import, found by go
// list and read by go/parser (no type checking: it stays fast):
//   - pkg.Name, where pkg is a package name or import alias the module
//     uses: Name is declared at the top level of such a package; if Name is
//     a type, or a variable whose type its declaration spells, the element
//     after it is a field or method of that type;
//   - Type.Member, where Type is a type the module or its imports declare:
//     Member is a field or method of such a type;
//   - a chain that starts with a call, Name(): every element is a function,
//     field or method declared somewhere in those packages;
//   - a chain that starts with any other lower-case word (c.workqueue,
//     metadata.generation, spec.deployment.name) is a variable or a field
//     path of YAML or JSON, which this check cannot resolve: not checked;
//   - a span shaped as a file name (types.go) or a DNS name (k8s.io) is not
//     an identifier; a Go file's name alone (writes.go) is the name of a
//     file of the repository.
//
// The members after the first resolved one are each looked up among all
// fields and methods, as the check knows no types past it.
//
// Bare names. A span of one identifier in lowerCamelCase with a capital
// inside (syncHandler, enqueueFoo(), fooMemory), or a test, benchmark or
// fuzz target's name, must be used in the module's Go files (as an
// identifier, or a string shaped as one: a log key, a check's name), be a
// function, field or method of their imports, a declaration a recipe adds,
// or (lowerCamelCase) a JSON field name (observedGeneration). Other single
// words (make, replicas, Ready) are not checked: too many are not Go.
//
// The exceptions are codeExceptions, each with its reason.

// codeExceptions are the spans the check allows though they do not
// resolve, each with why.
var codeExceptions = map[string]string{
	// make-it-yours.md, a page the template alone has, shows what the
	// copy hack/new-controller makes calls things.
	"pkg/apis/policies":        "the copy's API package",
	"enqueuePolicy":            "an identifier of the copy",
	"policyInformer":           "an identifier of the copy",
	"TestPolicyOwnsItsService": "a recipe's test in the copy (TestFooOwnsItsService here)",
	"TestPolicyContainerPortReachesItsDeployment": "a recipe's test in the copy " +
		"(TestFooContainerPortReachesItsDeployment here)",
	// Not Go, or not this module's.
	"markAsDeleting": "k8s.io/apiserver's registry, which the module does not import",
	"serviceMonitorSelectorNilUsesHelmValues": "a value of the kube-prometheus-stack Helm chart",
	"ruleSelectorNilUsesHelmValues":           "a value of the kube-prometheus-stack Helm chart",
	"namePrefix":                              "a field of kustomize's Kustomization, which the module does not import",
	"nameSuffix":                              "a field of kustomize's Kustomization, which the module does not import",
}

// topLevelDirs are the repository's top-level directories a path in the
// docs may start with: not hidden ones, not build output (_output).
func topLevelDirs(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), "_") {
			dirs[e.Name()] = true
		}
	}
	return dirs
}

// checkPath returns why span, a repository path, does not exist, or "".
// ok is false when span is not a repository path.
func checkPath(repo string, dirs, recipeFiles map[string]bool, span string) (problem string, ok bool) {
	if strings.ContainsAny(span, " <>*{}:@=,`'\"") || !strings.Contains(span, "/") {
		return "", false
	}
	p := strings.TrimPrefix(span, "./")
	p = strings.TrimSuffix(strings.TrimSuffix(p, "/..."), "/")
	first, _, _ := strings.Cut(p, "/")
	if !dirs[first] {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(repo, filepath.FromSlash(p))); err != nil && !recipeFiles[p] {
		return fmt.Sprintf("`%s`: no such file or directory in the repository", span), true
	}
	return "", true
}

// chainElement is an identifier, then optional type arguments and call
// parentheses: Foos, Foos(ns), Object[S], V1beta1().
const chainElement = `[A-Za-z_][A-Za-z0-9_]*(?:\[[^\[\]]*\])?(?:\([^()]*\))?`

// chain is a selector chain: at least two elements, a leading * allowed.
var chain = regexp.MustCompile(`^\*?` + chainElement + `(?:\.` + chainElement + `)+$`)

// fileOrDomain is a span shaped as a file name or a DNS name (ending in a
// file's extension or a top-level domain, or starting with a top-level
// domain as OpenAPI's reversed names do: io.k8s.api).
var fileOrDomain = regexp.MustCompile(`\.(?:go|md|sh|yaml|yml|json|txt|patch|csv|svg|mod|sum|io|com|org|net|dev)$|` +
	`^(?:io|com|org|net|dev)\.`)

// alternatives is a chain followed by other last elements:
// Foos(ns).Get/Create/Patch/... reads as Foos(ns).Get, Foos(ns).Create,
// Foos(ns).Patch.
var alternatives = regexp.MustCompile(`^([^/]*\.)([A-Za-z_][A-Za-z0-9_]*)((?:/[A-Za-z_][A-Za-z0-9_]*)+)(?:/\.\.\.)?$`)

// goFileName is a span that names a Go file without its directory.
var goFileName = regexp.MustCompile(`^[A-Za-z0-9_.]+\.go$`)

// element is one element of a chain: its identifier, and whether it is a
// call.
type element struct {
	name string
	call bool
}

func splitChain(span string) []element {
	span = strings.TrimPrefix(span, "*")
	var elems []element
	depth, start := 0, 0
	for i := 0; i <= len(span); i++ {
		if i < len(span) {
			switch span[i] {
			case '(', '[':
				depth++
				continue
			case ')', ']':
				depth--
				continue
			}
		}
		if i == len(span) || (span[i] == '.' && depth == 0) {
			part := span[start:i]
			name := part
			if j := strings.IndexAny(part, "(["); j >= 0 {
				name = part[:j]
			}
			elems = append(elems, element{name, strings.HasSuffix(part, ")")})
			start = i + 1
		}
	}
	return elems
}

// goPackage is what the check knows of a package: its top-level
// declarations, and the fields and methods of each of its types.
type goPackage struct {
	decls    map[string]bool
	members  map[string]map[string]bool // type name -> field and method names
	embedded map[string][]string        // type name -> embedded types, as written (pkg.T or T)
	varTypes map[string]string          // variable name -> type name its declaration spells
	// usedNames are, in the module's own packages, every identifier their
	// files (tests and every build tag included) declare or use, and every
	// string literal shaped as one (a log key, a check's name).
	usedNames map[string]bool
	// jsonNames are the JSON names of its structs' fields.
	jsonNames map[string]bool
}

// codeIndex is every package of the module and of its imports, by the
// names the module's code calls them.
type codeIndex struct {
	byName     map[string][]*goPackage // package name or import alias -> packages
	types      map[string][]*goPackage // type name -> packages that declare it
	allMembers map[string]bool         // every field, method and function name
	// ownNames are every identifier the module's files declare or use, and
	// their strings shaped as one.
	ownNames map[string]bool
	// jsonNames are the JSON names of the fields of every struct.
	jsonNames map[string]bool
}

var (
	indexOnce sync.Once
	index     *codeIndex
	indexErr  error
)

// loadIndex builds the index once per test binary.
func loadIndex(t *testing.T) *codeIndex {
	t.Helper()
	indexOnce.Do(func() { index, indexErr = buildIndex(root) })
	if indexErr != nil {
		t.Fatal(indexErr)
	}
	return index
}

// buildIndex lists the module's packages and their imports with go list,
// then parses each package's files (non-test, for the build's platform).
func buildIndex(repo string) (*codeIndex, error) {
	// The module's packages, with what they and their tests import.
	cmd := exec.Command("go", "list", "-e", "-f",
		`{{.ImportPath}}{{"\t"}}{{.Dir}}{{"\t"}}{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		"./...")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./...: %w", err)
	}
	dirs := map[string]string{} // import path -> directory
	imported := map[string]bool{}
	s := bufio.NewScanner(bytes.NewReader(out))
	for s.Scan() {
		fields := strings.SplitN(s.Text(), "\t", 3)
		if len(fields) != 3 {
			continue
		}
		dirs[fields[0]] = fields[1]
		for _, imp := range strings.Fields(fields[2]) {
			imported[imp] = true
		}
	}
	// Directories whose every file is behind a build tag (test/e2e) are
	// not packages to go list, but their names are the module's.
	err = filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != repo && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") {
			dir, _ := filepath.Abs(filepath.Dir(path))
			for _, listed := range dirs {
				if listed == dir {
					return nil
				}
			}
			dirs["dir:"+dir] = dir
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var external []string
	for imp := range imported {
		if _, ok := dirs[imp]; !ok && imp != "C" {
			external = append(external, imp)
		}
	}
	slices.Sort(external)
	if len(external) > 0 {
		cmd := exec.Command("go", append([]string{"list", "-e", "-f", `{{.ImportPath}}{{"\t"}}{{.Dir}}`}, external...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go list of the module's imports: %w", err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if path, dir, ok := strings.Cut(line, "\t"); ok && dir != "" {
				dirs[path] = dir
			}
		}
	}

	idx := &codeIndex{byName: map[string][]*goPackage{}, types: map[string][]*goPackage{},
		allMembers: map[string]bool{}, ownNames: map[string]bool{}, jsonNames: map[string]bool{}}
	byPath := map[string]*goPackage{}
	aliases := map[string]map[string]bool{} // import path -> names the module gives it
	ownNames := map[string]string{}         // import path -> the name its package declares
	importedPlain := map[string]bool{}      // import paths the module's files import by their own name
	importedAliased := map[string]bool{}    // and under another
	// Parsed side by side: most of the time is parsing.
	type parsed struct {
		pkg         *goPackage
		name        string
		fileImports map[string]map[string]bool
		err         error
	}
	results := map[string]*parsed{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	paths := make(chan string)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			fset := token.NewFileSet()
			for path := range paths {
				var r parsed
				r.pkg, r.name, r.fileImports, r.err = parsePackage(fset, dirs[path], isWithin(repo, dirs[path]))
				mu.Lock()
				results[path] = &r
				mu.Unlock()
			}
		})
	}
	for path := range dirs {
		paths <- path
	}
	close(paths)
	wg.Wait()
	for path, dir := range dirs {
		r := results[path]
		pkg, name, fileImports, err := r.pkg, r.name, r.fileImports, r.err
		if err != nil {
			return nil, err
		}
		if pkg == nil {
			continue
		}
		byPath[path] = pkg
		if aliases[path] == nil {
			aliases[path] = map[string]bool{}
		}
		if name != "" {
			aliases[path][name] = true
			ownNames[path] = name
		}
		// Only the module's own files name the aliases the docs use.
		if isWithin(repo, dir) {
			for p, alias := range fileImports {
				if aliases[p] == nil {
					aliases[p] = map[string]bool{}
				}
				for a := range alias {
					aliases[p][a] = true
					if a == "" {
						importedPlain[p] = true
					} else {
						importedAliased[p] = true
					}
				}
			}
		}
		for typ := range pkg.members {
			idx.types[typ] = append(idx.types[typ], pkg)
			for m := range pkg.members[typ] {
				idx.allMembers[m] = true
			}
		}
		for d := range pkg.decls {
			idx.allMembers[d] = true
		}
		for n := range pkg.jsonNames {
			idx.jsonNames[n] = true
		}
		for n := range pkg.usedNames {
			idx.ownNames[n] = true
		}
	}
	for path, names := range aliases {
		pkg := byPath[path]
		if pkg == nil {
			continue
		}
		// A package the module's files import under other names alone
		// (metadataclient for k8s.io/client-go/metadata) is not the docs'
		// by its own: metadata.name is a field path.
		byOwnName := importedPlain[path] || !importedAliased[path]
		for n := range names {
			if n != "" && (n != ownNames[path] || byOwnName) {
				idx.byName[n] = append(idx.byName[n], pkg)
			}
		}
	}
	return idx, nil
}

// isWithin reports whether dir is repo or below it.
func isWithin(repo, dir string) bool {
	absRepo, err1 := filepath.Abs(repo)
	absDir, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(absRepo, absDir)
	return err == nil && !strings.HasPrefix(rel, "..")
}

// skipExternal are the files of other modules the check does not read: the
// largest by far, and none declares what a page names (protobuf
// marshalling, Swagger docs, deep copies).
var skipExternal = regexp.MustCompile(`(?:\.pb\.go|_swagger_doc_generated\.go|^zz_generated\.deepcopy\.go)$`)

// parsePackage reads the declarations of the non-test Go files of dir,
// and the names its files give their imports (path -> names).
func parsePackage(fset *token.FileSet, dir string, own bool) (*goPackage, string, map[string]map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, "", nil, nil
		}
		return nil, "", nil, err
	}
	pkg := &goPackage{decls: map[string]bool{}, members: map[string]map[string]bool{},
		embedded: map[string][]string{}, varTypes: map[string]string{}, usedNames: map[string]bool{},
		jsonNames: map[string]bool{}}
	name := ""
	imports := map[string]map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || (!own && skipExternal.MatchString(n)) {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			continue // a file for another platform or a broken one: its declarations are not the docs'
		}
		for _, imp := range f.Imports {
			if imp.Name == nil || (imp.Name.Name != "_" && imp.Name.Name != ".") {
				p := strings.Trim(imp.Path.Value, `"`)
				if imports[p] == nil {
					imports[p] = map[string]bool{}
				}
				alias := "" // imported by its own name
				if imp.Name != nil {
					alias = imp.Name.Name
				}
				imports[p][alias] = true
			}
		}
		if own {
			ast.Inspect(f, func(node ast.Node) bool {
				switch node := node.(type) {
				case *ast.Ident:
					pkg.usedNames[node.Name] = true
				case *ast.BasicLit:
					if v, err := strconv.Unquote(node.Value); err == nil && identifier.MatchString(v) {
						pkg.usedNames[v] = true
					}
				}
				return true
			})
		}
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		if name == "" || name == "main" {
			name = f.Name.Name
		}
		addDecls(pkg, f)
	}
	if name == "" && len(pkg.usedNames) == 0 {
		return nil, "", imports, nil
	}
	return pkg, name, imports, nil
}

func (p *goPackage) member(typ, name string) {
	if p.members[typ] == nil {
		p.members[typ] = map[string]bool{}
	}
	p.members[typ][name] = true
}

// typeName is the name an expression of a type spells: T, *T, T[A],
// pkg.T (the T).
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.IndexExpr:
		return typeName(e.X)
	case *ast.IndexListExpr:
		return typeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.UnaryExpr:
		return typeName(e.X)
	case *ast.CompositeLit:
		return typeName(e.Type)
	}
	return ""
}

func addDecls(pkg *goPackage, f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				pkg.decls[d.Name.Name] = true
				continue
			}
			pkg.member(typeName(d.Recv.List[0].Type), d.Name.Name)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					pkg.decls[s.Name.Name] = true
					if pkg.members[s.Name.Name] == nil {
						pkg.members[s.Name.Name] = map[string]bool{}
					}
					addMembers(pkg, s.Name.Name, s.Type)
				case *ast.ValueSpec:
					for i, n := range s.Names {
						pkg.decls[n.Name] = true
						switch {
						case s.Type != nil:
							pkg.varTypes[n.Name] = typeName(s.Type)
						case i < len(s.Values):
							pkg.varTypes[n.Name] = typeName(s.Values[i])
						}
					}
				}
			}
		}
	}
}

// addMembers records a struct's fields or an interface's methods, and what
// either embeds.
func addMembers(pkg *goPackage, typ string, e ast.Expr) {
	var list *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		list = e.Fields
	case *ast.InterfaceType:
		list = e.Methods
	default:
		return
	}
	for _, field := range list.List {
		if len(field.Names) == 0 {
			if n := typeName(field.Type); n != "" {
				pkg.member(typ, n)
				pkg.embedded[typ] = append(pkg.embedded[typ], n)
			}
			continue
		}
		for _, n := range field.Names {
			pkg.member(typ, n.Name)
		}
		if field.Tag != nil {
			tag, err := strconv.Unquote(field.Tag.Value)
			if err != nil {
				continue
			}
			if name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ","); name != "" && name != "-" {
				pkg.jsonNames[name] = true
			}
		}
	}
}

// hasMember reports whether type typ of one of pkgs, or a type it embeds,
// has a field or method name. An embedded type of another package is
// looked up among every type of that name.
func (idx *codeIndex) hasMember(pkgs []*goPackage, typ, name string, depth int) bool {
	for _, p := range pkgs {
		if p.members[typ][name] {
			return true
		}
		if depth > 4 {
			continue
		}
		for _, e := range p.embedded[typ] {
			if idx.hasMember(append([]*goPackage{p}, idx.types[e]...), e, name, depth+1) {
				return true
			}
		}
	}
	return false
}

// identifier is a Go identifier.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// bareName is a span of one identifier the check resolves: lowerCamelCase
// with a capital inside (syncHandler, enqueueFoo(), fooMemory), or a test,
// benchmark or fuzz target (TestReadmeWalkthrough).
var bareName = regexp.MustCompile(`^(?:[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*(?:\(\))?|(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)$`)

// checkBareName returns why span, one identifier, is used nowhere in the
// module's Go files (as an identifier, or a string: a log key, a check's
// name), is no function, field or method of its imports
// (leaderelection's tryRelease), is declared by no recipe, and is no JSON
// field name of those types (observedGeneration, storedVersions), or "". ok
// is false when span is not a bare name.
func (idx *codeIndex) checkBareName(span string, recipeNames map[string]bool) (problem string, ok bool) {
	if !bareName.MatchString(span) {
		return "", false
	}
	name := strings.TrimSuffix(span, "()")
	if idx.ownNames[name] || recipeNames[name] || idx.allMembers[name] || (!isExported(name) && idx.jsonNames[name]) {
		return "", true
	}
	return fmt.Sprintf("`%s`: the module declares no %s", span, name), true
}

// checkIdentifier returns why span, a Go selector chain, does not resolve,
// or "". ok is false when span is not one the check resolves.
func (idx *codeIndex) checkIdentifier(span string) (problem string, ok bool) {
	if m := alternatives.FindStringSubmatch(span); m != nil && chain.MatchString(m[1]+m[2]) {
		for _, last := range append([]string{m[2]}, strings.Split(m[3], "/")[1:]...) {
			alt := m[1] + last
			if p, ok := idx.checkIdentifier(alt); !ok || p != "" {
				return strings.Replace(p, "`"+alt+"`", "`"+span+"`", 1), ok
			}
		}
		return "", true
	}
	if !chain.MatchString(span) || fileOrDomain.MatchString(span) {
		return "", false
	}
	elems := splitChain(span)
	first, second := elems[0], elems[1]
	rest := elems[2:]
	switch pkgs := idx.byName[first.name]; {
	case len(pkgs) > 0 && !first.call:
		var declaring []*goPackage
		for _, p := range pkgs {
			if p.decls[second.name] {
				declaring = append(declaring, p)
			}
		}
		if len(declaring) == 0 {
			return fmt.Sprintf("`%s`: package %s declares no %s", span, first.name, second.name), true
		}
		if len(rest) == 0 {
			return "", true
		}
		// The member of a type, or of the type a variable's declaration
		// spells.
		for _, p := range declaring {
			typ := second.name
			if _, isType := p.members[typ]; !isType {
				typ = p.varTypes[second.name]
			}
			if typ == "" {
				continue
			}
			owners := append([]*goPackage{p}, idx.types[typ]...)
			if _, known := p.members[typ]; !known && len(idx.types[typ]) == 0 {
				continue
			}
			if !idx.hasMember(owners, typ, rest[0].name, 0) {
				return fmt.Sprintf("`%s`: %s.%s (type %s) has no field or method %s", span, first.name,
					second.name, typ, rest[0].name), true
			}
			return idx.checkAnyMember(span, rest[1:])
		}
		return idx.checkAnyMember(span, rest)
	case !first.call && isExported(first.name):
		owners := idx.types[first.name]
		if len(owners) == 0 {
			return fmt.Sprintf("`%s`: %s is no package the module imports and no type it or they declare", span,
				first.name), true
		}
		if !idx.hasMember(owners, first.name, second.name, 0) {
			return fmt.Sprintf("`%s`: type %s has no field or method %s", span, first.name, second.name), true
		}
		return idx.checkAnyMember(span, rest)
	case first.call:
		return idx.checkAnyMember(span, elems)
	case len(first.name) == 1:
		// A method's receiver (c, the Controller's): what follows are
		// fields and methods.
		return idx.checkAnyMember(span, elems[1:])
	}
	return "", false // a variable or a field path: not resolved
}

// checkAnyMember checks that each element is a field, method or function
// declared somewhere.
func (idx *codeIndex) checkAnyMember(span string, elems []element) (string, bool) {
	for _, e := range elems {
		if !idx.allMembers[e.name] {
			return fmt.Sprintf("`%s`: no field, method or function %s is declared in the module or its imports",
				span, e.name), true
		}
	}
	return "", true
}

func isExported(name string) bool {
	return name != "" && name[0] >= 'A' && name[0] <= 'Z'
}

// goFiles are the base names of the repository's Go files.
func goFiles(t *testing.T) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if strings.HasSuffix(d.Name(), ".go") {
			files[d.Name()] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// recipeFiles are the files the recipes (docs/recipes) change or add: a
// page names the files a recipe adds before it is applied.
func recipeFiles(t *testing.T) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	for _, text := range recipes(t) {
		for _, f := range parsePatch(text) {
			files[f.path] = true
		}
	}
	return files
}

// recipeDecl is a declaration a recipe adds: a function, a type, or a
// const or var declared alone.
var recipeDecl = regexp.MustCompile(`(?m)^\+(?:func|type|const|var) ([A-Za-z_][A-Za-z0-9_]*)`)

// recipeNames are the names the recipes declare.
func recipeNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, text := range recipes(t) {
		for _, m := range recipeDecl.FindAllStringSubmatch(text, -1) {
			names[m[1]] = true
		}
	}
	return names
}

// checkCode returns the problems of a document's inline code spans, each
// prefixed with name:line.
func checkCode(repo string, dirs, files, recipeFiles, recipeNames map[string]bool, idx *codeIndex, name, text string,
) []string {
	var problems []string
	for _, code := range codeSpans(text) {
		span := strings.TrimSpace(code.text)
		if _, allowed := codeExceptions[span]; allowed {
			continue
		}
		if goFileName.MatchString(span) && !files[span] {
			problems = append(problems, fmt.Sprintf("%s:%d: `%s`: no Go file of that name in the repository",
				name, code.line, span))
			continue
		}
		if p, ok := checkPath(repo, dirs, recipeFiles, span); ok {
			if p != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s", name, code.line, p))
			}
			continue
		}
		if p, ok := idx.checkBareName(span, recipeNames); ok {
			if p != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s", name, code.line, p))
			}
			continue
		}
		if p, _ := idx.checkIdentifier(span); p != "" {
			problems = append(problems, fmt.Sprintf("%s:%d: %s", name, code.line, p))
		}
	}
	return problems
}

func TestCodeTheDocsNameExists(t *testing.T) {
	idx := loadIndex(t)
	dirs, files := topLevelDirs(t), goFiles(t)
	for _, doc := range readDocuments(t) {
		for _, p := range checkCode(root, dirs, files, recipeFiles(t), recipeNames(t), idx, doc.name, doc.text) {
			t.Error(p)
		}
	}
}

// The check finds a planted wrong name and a planted wrong path, and
// passes their right forms, on the module as it is.
func TestCodeCheckFindsPlantedMistakes(t *testing.T) {
	idx := loadIndex(t)
	dirs, files := topLevelDirs(t), goFiles(t)
	page := strings.Join([]string{
		"# A page",
		"Right: `pkg/owned`, `test/docs/code_test.go`, `./test/docs/...`, `cache.WaitForCacheSync`,",
		"`workqueue.TypedRateLimitingInterface`, `*cache.ListWatch`, `SharedIndexInformer.HasSynced`,",
		"`Samplecontroller().V1beta1().Foos()`, `metav1.Object`, `cache.SharedIndexInformer.AddIndexers`.",
		"Not code to check: `metadata.generation`, `types.go`, `samplecontroller.k8s.io`, `make test`,",
		"`pkg/apis/<group>/types.go`, `code_test.go`, `SamplecontrollerV1beta1().Foos(ns).Get/Create/Patch/...`,",
		"`checkBareName`, `TestCodeCheckFindsPlantedMistakes`, `observedGeneration`, `storedVersions`.",
		"```go",
		"owned.NotAFunction()",
		"```",
		"Wrong: `cache.WaitForCacheSynced`,",
		"`pkg/owned/nosuch.go`,",
		"`SharedIndexInformer.HasSyncd`,",
		"`Samplecontroller().V1alpha9().Foos()`,",
		"`NoSuchType.Method`,",
		"`hack/no-such-script.sh`,",
		"`no_such_test.go`,",
		"`SamplecontrollerV1beta1().Foos(ns).Get/Craete/...`,",
		"`checkBareNames`, `TestNoSuchTest`.",
		"A span that breaks `across",
		"lines` hides no name after it: `TestNoSuchTestAfterABreak`.",
	}, "\n")
	got := checkCode(root, dirs, files, recipeFiles(t), recipeNames(t), idx, "page.md", page)
	want := []string{
		"page.md:11: `cache.WaitForCacheSynced`: package cache declares no WaitForCacheSynced",
		"page.md:12: `pkg/owned/nosuch.go`: no such file or directory in the repository",
		"page.md:13: `SharedIndexInformer.HasSyncd`: type SharedIndexInformer has no field or method HasSyncd",
		"page.md:14: `Samplecontroller().V1alpha9().Foos()`: no field, method or function V1alpha9 is declared " +
			"in the module or its imports",
		"page.md:15: `NoSuchType.Method`: NoSuchType is no package the module imports and no type it or they " +
			"declare",
		"page.md:16: `hack/no-such-script.sh`: no such file or directory in the repository",
		"page.md:17: `no_such_test.go`: no Go file of that name in the repository",
		"page.md:18: `SamplecontrollerV1beta1().Foos(ns).Get/Craete/...`: no field, method or function Craete is " +
			"declared in the module or its imports",
		"page.md:19: `checkBareNames`: the module declares no checkBareNames",
		"page.md:19: `TestNoSuchTest`: the module declares no TestNoSuchTest",
		"page.md:21: `TestNoSuchTestAfterABreak`: the module declares no TestNoSuchTestAfterABreak",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
