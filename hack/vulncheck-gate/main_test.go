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
	"reflect"
	"strings"
	"testing"
)

// A govulncheck stream, shortened: a module vulnerability called, one of
// the standard library called (two traces), one of a module imported and
// not called, and one reported both ways (called wins).
const stream = `{"config":{"protocol_version":"v1.0.0","scanner_name":"govulncheck"}}
{"progress":{"message":"Scanning your code..."}}
{"osv":{"id":"GO-2026-0001"}}
{"finding":{"osv":"GO-2026-0001","fixed_version":"v0.60.0","trace":[{"module":"golang.org/x/net","version":"v0.57.0","package":"golang.org/x/net/http2","function":"Framer.ReadFrame"},{"module":"example.com/app","package":"example.com/app","function":"main"}]}}
{"finding":{"osv":"GO-2026-0002","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"Server.Serve"}]}}
{"finding":{"osv":"GO-2026-0002","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"Client.Do"}]}}
{"finding":{"osv":"GO-2026-0003","fixed_version":"v1.45.0","trace":[{"module":"go.opentelemetry.io/otel/sdk","version":"v1.44.0","package":"go.opentelemetry.io/otel/sdk/trace"}]}}
{"finding":{"osv":"GO-2026-0004","fixed_version":"v1.83.1","trace":[{"module":"google.golang.org/grpc","version":"v1.82.1"}]}}
{"finding":{"osv":"GO-2026-0004","fixed_version":"v1.83.1","trace":[{"module":"google.golang.org/grpc","version":"v1.82.1","package":"google.golang.org/grpc/mem","function":"NewBuffer"}]}}
`

func TestReadSortsFindingsByWhetherCalledAndWhere(t *testing.T) {
	got, err := read(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	want := verdict{
		modules: map[string]string{
			"GO-2026-0001": "golang.org/x/net/http2 (golang.org/x/net@v0.57.0, fixed in v0.60.0)",
			"GO-2026-0004": "google.golang.org/grpc/mem (google.golang.org/grpc@v1.82.1, fixed in v1.83.1)",
		},
		stdlib:    map[string]string{"GO-2026-0002": "net/http (stdlib@v1.26.8, fixed in v1.26.9)"},
		notCalled: map[string]bool{"GO-2026-0003": true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read:\n%+v\nwant\n%+v", got, want)
	}
}

func TestReadRefusesWhatIsNotGovulncheckJSON(t *testing.T) {
	for _, input := range []string{"Scanning your code...\nNo vulnerabilities found.\n", "", `{"progress":{"message":"Scanning"}}`} {
		if _, err := read(strings.NewReader(input)); err == nil {
			t.Errorf("read(%q): no error, want one (the check must not pass on what is no scan)", input)
		}
	}
}

// A vulnerability called fails the check, in a module or in the standard
// library alike, each listed with its fix; one only imported does not.
func TestGateFailsOnEveryCalledVulnerability(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v        verdict
		wantFail bool
		want     string
	}{
		{"standard library alone", verdict{
			stdlib: map[string]string{"GO-2026-0002": "net/http (stdlib@v1.26.8, fixed in v1.26.9)"},
		}, true, "govulncheck: 0 vulnerabilities called in modules, 1 in the Go standard library, 0 imported but not called\n" +
			"called in the Go standard library: build with the Go release that fixes them, and name it in go.mod's toolchain line\n" +
			"  GO-2026-0002: net/http (stdlib@v1.26.8, fixed in v1.26.9) https://pkg.go.dev/vuln/GO-2026-0002\n"},
		{"module alone", verdict{
			modules: map[string]string{"GO-2026-0001": "golang.org/x/net/http2 (golang.org/x/net@v0.57.0, fixed in v0.60.0)"},
		}, true, "govulncheck: 1 vulnerabilities called in modules, 0 in the Go standard library, 0 imported but not called\n" +
			"called in modules: require the fixed versions in go.mod\n" +
			"  GO-2026-0001: golang.org/x/net/http2 (golang.org/x/net@v0.57.0, fixed in v0.60.0) https://pkg.go.dev/vuln/GO-2026-0001\n"},
		{"imported, not called", verdict{notCalled: map[string]bool{"GO-2026-0003": true}}, false,
			"govulncheck: 0 vulnerabilities called in modules, 0 in the Go standard library, 1 imported but not called\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if fail := gate(&out, tc.v); fail != tc.wantFail {
				t.Errorf("gate fails %v, want %v", fail, tc.wantFail)
			}
			if out.String() != tc.want {
				t.Errorf("gate wrote:\n%s\nwant:\n%s", out.String(), tc.want)
			}
		})
	}
}
