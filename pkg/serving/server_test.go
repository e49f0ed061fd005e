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

package serving

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// getFrom GETs path from handler and returns the status code and body.
func getFrom(t *testing.T, handler http.Handler, path string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.Bytes()
}

// Every pprof handler is registered: the index and the profiles it names,
// and those Index does not serve (a CPU profile, an execution trace, the
// command line, symbols). Short durations keep the test quick.
var pprofPaths = []string{
	"/debug/pprof/",
	"/debug/pprof/heap",
	"/debug/pprof/goroutine",
	"/debug/pprof/cmdline",
	"/debug/pprof/symbol",
	"/debug/pprof/profile?seconds=1",
	"/debug/pprof/trace?seconds=0.05",
}

// With profiling on, the metrics handler serves Go's profiles beside /metrics.
func TestProfilingOnServesPprofBesideMetrics(t *testing.T) {
	h := metricsHandler(true)
	for _, path := range pprofPaths {
		if code, body := getFrom(t, h, path); code != http.StatusOK {
			t.Errorf("GET %s: status %d, want 200; body %.200q", path, code, body)
		}
	}
	// The index lists the profiles; the heap profile is a gzipped protobuf,
	// what go tool pprof reads.
	if _, body := getFrom(t, h, "/debug/pprof/"); !bytes.Contains(body, []byte("heap")) {
		t.Errorf("index does not list the heap profile: %.200q", body)
	}
	if _, body := getFrom(t, h, "/debug/pprof/heap"); !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		t.Errorf("heap profile is not gzipped: %.20q", body)
	}
	if code, body := getFrom(t, h, "/metrics"); code != http.StatusOK || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("GET /metrics: status %d; body %.200q", code, body)
	}
}

// Without profiling (the default), the metrics handler serves /metrics and
// no profile.
func TestProfilingOffServesMetricsOnly(t *testing.T) {
	h := metricsHandler(false)
	for _, path := range pprofPaths {
		if code, body := getFrom(t, h, path); code != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404; body %.200q", path, code, body)
		}
	}
	if code, body := getFrom(t, h, "/metrics"); code != http.StatusOK || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("GET /metrics: status %d; body %.200q", code, body)
	}
}

// Importing net/http/pprof registers its handlers on http.DefaultServeMux;
// the unauthenticated probe server must not be serving that mux.
func TestProbesNeverServeProfiles(t *testing.T) {
	h := probesHandler(nil, nil)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap"} {
		if code, _ := getFrom(t, h, path); code != http.StatusNotFound {
			t.Errorf("GET %s on the probe server: status %d, want 404", path, code)
		}
	}
	if code, body := getFrom(t, h, "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz: status %d; body %q", code, body)
	}
}
