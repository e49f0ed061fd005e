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

// Command new-controller makes a new controller from this one: it copies
// the template's files into a new directory, the template untouched (as
// golang.org/x/tools/cmd/gonew does for a module), renames the module, the
// API group, the kind and the controller's name and metric prefix in code,
// manifests, docs and tests, generates the clientset, listers, informers,
// deep copies and CRD again with the copy's own generators, checks that no
// name of the template is left, and runs the copy's make verify.
//
//	go run ./hack/new-controller -module example.com/policy-operator \
//	  -group policies.example.com -kind Policy ../policy-operator
//
// docs/make-it-yours.md tells what it derives and rewrites.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "new-controller:", err)
		os.Exit(1)
	}
}

// errUsage is returned, after the usage is printed, for a command line
// that names no single target.
var errUsage = errors.New("usage: new-controller -module PATH -group GROUP -kind KIND [flags] DIR")

// run is the command: args without the program's name.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("new-controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.Module, "module", "", "the new controller's Go module path (required), "+
		"e.g. example.com/policy-operator")
	fs.StringVar(&o.Group, "group", "", "its API group (required), a DNS subdomain with a dot, e.g. policies.example.com")
	fs.StringVar(&o.Kind, "kind", "", "its kind (required), UpperCamelCase, e.g. Policy")
	fs.StringVar(&o.Plural, "plural", "", "the resource's plural (default: the kind's English plural in lower case, "+
		"Policy -> policies, Ingress -> ingresses)")
	fs.StringVar(&o.Singular, "singular", "", "the resource's singular (default: the kind in lower case)")
	fs.StringVar(&o.ShortName, "short-name", "", "the resource's short name for kubectl (default: the shortest "+
		"prefix of the singular, 2 letters or more, that no built-in resource has)")
	fs.StringVar(&o.Name, "name", "", "the controller's name: binary, Lease, RBAC objects, namespace, image, user agent "+
		"(default: the module path's last element)")
	fs.StringVar(&o.Metrics, "metric-prefix", "", "the prefix of the controller's own metrics, without the "+
		"trailing _ (default: the name with _ for -)")
	template := fs.String("template", "", "the template's root (default: the module root of the working directory, "+
		"if it is this template)")
	verify := fs.Bool("verify", true, "run the copy's make verify at the end (lint, vet, generated code, govulncheck)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, errUsage)
		fmt.Fprintln(stderr, "Makes a new controller in DIR (new or empty) from this template. Flags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errUsage
	}
	dir := fs.Arg(0)

	root, oldModule, err := findTemplate(*template)
	if err != nil {
		return err
	}
	n, err := derive(o, oldModule)
	if err != nil {
		return fmt.Errorf("nothing written:\n%w", err)
	}
	if err := checkTarget(dir); err != nil {
		return fmt.Errorf("nothing written: %w", err)
	}
	if err := generate(root, oldModule, n, dir, stdout, stderr); err != nil {
		return err
	}
	if *verify {
		fmt.Fprintf(stdout, "make verify in %s\n", dir)
		if err := command(dir, stdout, stderr, "make", "verify"); err != nil {
			return fmt.Errorf("the copy in %s was made, but its make verify failed: %w", dir, err)
		}
	}
	printNextSteps(stdout, dir, n)
	return nil
}

// findTemplate returns the template's root and module path: the given
// root, or the module root above the working directory.
func findTemplate(root string) (string, string, error) {
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", "", err
		}
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				root = dir
				break
			}
			if filepath.Dir(dir) == dir {
				return "", "", errors.New("no go.mod above the working directory: run from the template's " +
					"clone, or give -template")
			}
		}
	}
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", "", err
	}
	// A copy has the generators but not the template's API: renaming it
	// again would rename nothing.
	storageTypes := "pkg/apis/" + oldGroupPackage + "/" + oldStorageVersion + "/types.go"
	for _, p := range []string{"hack/update-codegen.sh", storageTypes} {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			return "", "", fmt.Errorf("%s (module %s) is not this template: it has no %s", root, module, p)
		}
	}
	return root, module, nil
}

// modulePath reads the module line of a go.mod.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s has no module line", gomod)
}

func printNextSteps(w io.Writer, dir string, n names) {
	fmt.Fprintf(w, `
%[1]s is ready in %[2]s: module %[3]s, kind %[4]s (%[6]s/%[7]s, kubectl get %[5]s or %[8]s).
Next:
  cd %[2]s
  git init && git add -A && git commit -m "%[1]s from sample-controller"
  make run     # a local control plane, the CRD and the controller; then, in another terminal,
               # kubectl create -f artifacts/examples/example-%[9]s.yaml
  make test    # everything CI runs
What a %[4]s asks for is in pkg/apis/%[10]s/%[7]s/types.go (then make generate); how the controller maps it onto a
Deployment is in pkg/desired/deployment.go. README.md and docs/ are rewritten for the new names; docs/recipes.md
shows the first changes a fork makes (owning a Service, adding a field), as patches in docs/recipes to git apply.
`, n.Name, dir, n.Module, n.Kind, n.Plural, n.Group, oldStorageVersion, n.ShortName, n.Singular, n.GroupPackage)
}
