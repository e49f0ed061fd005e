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

// Command vulncheck-gate reads govulncheck's JSON stream (govulncheck
// -format json) on standard input and decides what fails the check
// (hack/verify-vulnerabilities.sh):
//   - a vulnerability the code calls in a module: fixed by requiring the
//     module's fixed version in go.mod; it fails;
//   - one the code calls in the Go standard library: fixed by building
//     with the Go release that fixes it, which the toolchain line of go.mod
//     names (the go command fetches it where an older one is installed);
//     it fails too, listed with that release: a binary built by a release
//     the check passed on, with go.mod asking for it, carries no known
//     called vulnerability of its standard library;
//   - one in a module or package the code imports but does not call: not
//     reachable; counted.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
)

// finding is the part of govulncheck's finding message the gate reads.
type finding struct {
	OSV          string `json:"osv"`
	FixedVersion string `json:"fixed_version"`
	Trace        []struct {
		Module   string `json:"module"`
		Version  string `json:"version"`
		Package  string `json:"package"`
		Function string `json:"function"`
	} `json:"trace"`
}

type message struct {
	Config  json.RawMessage `json:"config"`
	Finding *finding        `json:"finding"`
}

// verdict is what the stream says, by OSV id.
type verdict struct {
	modules, stdlib map[string]string // called: id -> "module@version, fixed in ..."
	notCalled       map[string]bool
}

func read(r io.Reader) (verdict, error) {
	v := verdict{modules: map[string]string{}, stdlib: map[string]string{}, notCalled: map[string]bool{}}
	dec := json.NewDecoder(r)
	configured := false
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return v, fmt.Errorf("reading govulncheck's JSON: %w", err)
		}
		configured = configured || m.Config != nil
		f := m.Finding
		if f == nil || len(f.Trace) == 0 {
			continue
		}
		top := f.Trace[0]
		if top.Function == "" { // imported, not called
			v.notCalled[f.OSV] = true
			continue
		}
		where := fmt.Sprintf("%s (%s@%s, fixed in %s)", top.Package, top.Module, top.Version, f.FixedVersion)
		if top.Module == "stdlib" {
			v.stdlib[f.OSV] = where
		} else {
			v.modules[f.OSV] = where
		}
	}
	if !configured {
		// A scan that did not start says nothing: no pass on it.
		return v, errors.New("no govulncheck scan in the input (no config message)")
	}
	for id := range v.modules {
		delete(v.notCalled, id)
	}
	for id := range v.stdlib {
		delete(v.notCalled, id)
	}
	return v, nil
}

func list(w io.Writer, found map[string]string) {
	ids := make([]string, 0, len(found))
	for id := range found {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(w, "  %s: %s https://pkg.go.dev/vuln/%s\n", id, found[id], id)
	}
}

// gate writes what v says to w and reports whether the check fails: on any
// vulnerability called, in a module or in the standard library.
func gate(w io.Writer, v verdict) (fail bool) {
	fmt.Fprintf(w, "govulncheck: %d vulnerabilities called in modules, %d in the Go standard library, "+
		"%d imported but not called\n", len(v.modules), len(v.stdlib), len(v.notCalled))
	if len(v.stdlib) > 0 {
		fmt.Fprintln(w, "called in the Go standard library: build with the Go release that fixes them, "+
			"and name it in go.mod's toolchain line")
		list(w, v.stdlib)
	}
	if len(v.modules) > 0 {
		fmt.Fprintln(w, "called in modules: require the fixed versions in go.mod")
		list(w, v.modules)
	}
	return len(v.modules) > 0 || len(v.stdlib) > 0
}

func main() {
	flag.Parse()
	v, err := read(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if gate(os.Stdout, v) {
		os.Exit(1)
	}
}
