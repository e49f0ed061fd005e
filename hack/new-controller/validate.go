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

package main

import (
	"errors"
	"fmt"
	"go/token"
	"os"
	"regexp"
	"strings"

	"golang.org/x/mod/module"
)

// options are the command's flags, as given.
type options struct {
	Module, Group, Kind                        string
	Plural, Singular, ShortName, Name, Metrics string
}

var (
	// dns1123Label is what Kubernetes accepts as a label of a DNS name
	// (k8s.io/apimachinery's IsDNS1123Label).
	dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// goPackageLabel is a group's first label that code-generator can name
	// a Go package and its accessors after (it uses the label as is).
	goPackageLabel = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	upperCamel     = regexp.MustCompile(`^[A-Z][a-zA-Z0-9]*$`)
	lowerWord      = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	metricPrefix   = regexp.MustCompile(`^[a-z][a-z0-9_]*[a-z0-9]$`)
)

// maxNameLength leaves room, within a 63-character object name, for the
// longest suffix the manifests add to the controller's name
// (-leader-election, -metrics-reader).
const maxNameLength = 40

// predeclared are Go's predeclared identifiers: the kind's lower-case forms
// become variable names in the copy (foo, foos), and one of these would
// shadow a type or function the code uses.
var predeclared = map[string]bool{
	"any": true, "bool": true, "byte": true, "comparable": true, "complex64": true, "complex128": true,
	"error": true, "float32": true, "float64": true, "int": true, "int8": true, "int16": true, "int32": true,
	"int64": true, "rune": true, "string": true, "uint": true, "uint8": true, "uint16": true, "uint32": true,
	"uint64": true, "uintptr": true, "true": true, "false": true, "iota": true, "nil": true, "append": true,
	"cap": true, "clear": true, "close": true, "complex": true, "copy": true, "delete": true, "imag": true,
	"len": true, "make": true, "max": true, "min": true, "new": true, "panic": true, "print": true,
	"println": true, "real": true, "recover": true,
}

// reservedIdentifier says why a Go identifier the copy will declare cannot
// be s, or "" if it can.
func reservedIdentifier(s string) string {
	switch {
	case token.IsKeyword(s):
		return "a Go keyword"
	case predeclared[s]:
		return "a Go predeclared identifier"
	}
	return ""
}

// derive checks the options and derives every name from them. It reports
// all the problems it finds at once, and writes nothing.
func derive(o options, oldModule string) (names, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	n := names{Module: o.Module, Group: o.Group, Kind: o.Kind}
	checkModule(o.Module, oldModule, bad)
	n.GroupPackage = checkGroup(o.Group, bad)
	n.GroupGoName = upperFirst(n.GroupPackage)
	if checkKind(o.Kind, bad) {
		deriveResource(o, &n, bad)
	}
	deriveName(o, &n, bad)
	return n, errors.Join(errs...)
}

// complaint records one problem with the options.
type complaint func(format string, args ...any)

func checkModule(mod, oldModule string, bad complaint) {
	switch mod {
	case "":
		bad("-module is required (e.g. -module example.com/policy-operator)")
	case oldModule:
		bad("-module %q is the template's own module path; give the new controller's", mod)
	default:
		if err := module.CheckPath(mod); err != nil {
			bad("-module %q is not a valid module path: %v", mod, err)
		}
	}
}

// checkGroup returns the group's Go package name, its first label; "" if
// the group is refused.
func checkGroup(group string, bad complaint) string {
	labels := strings.Split(group, ".")
	switch {
	case group == "":
		bad("-group is required (e.g. -group policies.example.com)")
	case len(group) > 253 || len(labels) < 2 || !allMatch(dns1123Label, labels):
		bad("-group %q is not a DNS-1123 subdomain with at least one dot (lower-case letters, digits, '-' and '.', "+
			"like policies.example.com)", group)
	case group == oldGroup:
		bad("-group %q is the template's own API group; give the new controller's", group)
	case !goPackageLabel.MatchString(labels[0]):
		bad("-group %q: its first label %q names the API's Go package and code-generator's accessors, "+
			"so it must be lower-case letters and digits, starting with a letter", group, labels[0])
	case reservedIdentifier(labels[0]) != "":
		bad("-group %q: its first label %q, the API's Go package name, is %s", group, labels[0],
			reservedIdentifier(labels[0]))
	default:
		return labels[0]
	}
	return ""
}

func checkKind(kind string, bad complaint) bool {
	switch {
	case kind == "":
		bad("-kind is required (e.g. -kind Policy)")
	case !upperCamel.MatchString(kind):
		bad("-kind %q is not UpperCamelCase (^[A-Z][a-zA-Z0-9]*$, like Policy)", kind)
	case reservedIdentifier(strings.ToLower(kind)) != "":
		bad("-kind %q: its lower-case form %q, a variable name in the copy, is %s", kind,
			strings.ToLower(kind), reservedIdentifier(strings.ToLower(kind)))
	default:
		return true
	}
	return false
}

// deriveResource derives and checks the plural, singular and short name.
func deriveResource(o options, n *names, bad complaint) {
	n.KindPlural = pluralize(o.Kind)
	n.Plural = strings.ToLower(n.KindPlural)
	if o.Plural != "" && o.Plural != n.Plural {
		n.Plural = o.Plural
		n.KindPlural = upperFirst(o.Plural)
	}
	n.Singular = strings.ToLower(o.Kind)
	if o.Singular != "" {
		n.Singular = o.Singular
	}
	for _, f := range []struct{ flag, value string }{{"-plural", n.Plural}, {"-singular", n.Singular}} {
		switch {
		case !lowerWord.MatchString(f.value):
			bad("%s %q is not lower-case letters and digits, starting with a letter", f.flag, f.value)
		case reservedIdentifier(f.value) != "":
			bad("%s %q, a variable name in the copy, is %s", f.flag, f.value, reservedIdentifier(f.value))
		}
	}
	if builtinPlurals[n.Plural] {
		bad("plural %q is a built-in resource's (kubectl would find that one first); "+
			"choose another kind or give -plural", n.Plural)
	}
	if n.Plural == n.Singular {
		bad("plural and singular are both %q; give -plural", n.Plural)
	}
	n.ShortName = o.ShortName
	if n.ShortName == "" {
		n.ShortName = shortName(n.Singular)
	}
	switch {
	case !lowerWord.MatchString(n.ShortName):
		bad("-short-name %q is not lower-case letters and digits, starting with a letter", n.ShortName)
	case builtinShortNames[n.ShortName] || builtinPlurals[n.ShortName]:
		bad("-short-name %q is a built-in resource's (kubectl would find that one first)", n.ShortName)
	}
}

// deriveName derives and checks the controller's name and metric prefix.
func deriveName(o options, n *names, bad complaint) {
	n.Name = o.Name
	if n.Name == "" && o.Module != "" {
		n.Name = nameFromModule(o.Module)
	}
	switch {
	case n.Name == "":
	case len(n.Name) > maxNameLength || !dns1123Label.MatchString(n.Name):
		bad("-name %q (the controller's name: its namespace, Lease, RBAC objects and image) is not a "+
			"DNS-1123 label of at most %d characters (lower-case letters, digits and '-')", n.Name, maxNameLength)
	case n.Name == oldName:
		bad("-name %q is the template's own name; give the new controller's", n.Name)
	}
	n.MetricPrefix = o.Metrics
	if n.MetricPrefix == "" {
		n.MetricPrefix = snake(n.Name)
	}
	if n.MetricPrefix != "" && !metricPrefix.MatchString(n.MetricPrefix) {
		bad("-metric-prefix %q is not lower-case letters, digits and '_', starting with a letter "+
			"and not ending with '_' (the metrics are <prefix>_<name>)", n.MetricPrefix)
	}
}

func allMatch(re *regexp.Regexp, ss []string) bool {
	for _, s := range ss {
		if len(s) > 63 || !re.MatchString(s) {
			return false
		}
	}
	return true
}

// shortName is the default short name: the shortest prefix of the
// singular, two letters or more, that no built-in resource has (Policy:
// po is the Pods', so pol).
func shortName(singular string) string {
	for n := 2; n < len(singular); n++ {
		if p := singular[:n]; !builtinShortNames[p] && !builtinPlurals[p] {
			return p
		}
	}
	return singular
}

// checkTarget refuses a target that exists and is not an empty directory.
func checkTarget(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !info.IsDir():
		return fmt.Errorf("target %s exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("target %s exists and is not empty (%d entries); give a new or empty directory",
			dir, len(entries))
	}
	return nil
}
