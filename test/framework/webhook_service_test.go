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

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeReplica is a running controller as the stand-in sees it: a log that
// names its servers, and a /readyz whose answer the test sets.
type fakeReplica struct {
	ready    atomic.Bool
	accepted atomic.Int32

	mu  sync.Mutex
	log string
}

func (r *fakeReplica) Exited() bool { return false }

func (r *fakeReplica) Log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log
}

// startFakeReplica serves /readyz (200 while r.ready) and, as its webhook,
// a TCP server that answers every connection with "converted" and counts it.
func startFakeReplica(t *testing.T) *fakeReplica {
	t.Helper()
	r := &fakeReplica{}
	probes := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !r.ready.Load() {
			http.Error(w, "[-]informer-sync failed: informer caches not synced", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(probes.Close)
	webhook, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = webhook.Close() })
	go func() {
		for {
			conn, err := webhook.Accept()
			if err != nil {
				return
			}
			r.accepted.Add(1)
			_, _ = io.WriteString(conn, "converted")
			_ = conn.Close()
		}
	}()
	r.log = fmt.Sprintf(`I1127 "Serving" server="probes" address="%s" scheme="http"`+"\n"+
		`I1127 "Serving" server="webhook" address="%s" scheme="https"`+"\n",
		strings.TrimPrefix(probes.URL, "http://"), webhook.Addr())
	return r
}

// call connects to the stand-in and returns what comes back before it
// closes the connection.
func call(t *testing.T, s *webhookService) string {
	t.Helper()
	conn, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

// waitFor calls the stand-in until it answers want, for as long as the
// probes can take to notice a change.
func waitFor(t *testing.T, s *webhookService, want string) {
	t.Helper()
	deadline := time.Now().Add((ReadinessFailureThreshold + 2) * probePeriod)
	for {
		got := call(t, s)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in answered %q, want %q", got, want)
		}
		time.Sleep(probePeriod / 4)
	}
}

func TestWebhookServiceSendsOnlyToReadyReplicas(t *testing.T) {
	s, err := startWebhookService()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	r := startFakeReplica(t)
	s.add(r)

	// Running but not ready: no connection reaches it, over several probes.
	for range 3 {
		time.Sleep(probePeriod)
		if got := call(t, s); got != "" {
			t.Fatalf("a replica that is not ready answered %q", got)
		}
	}
	if n := r.accepted.Load(); n != 0 {
		t.Fatalf("a replica that is not ready was sent %d connections, want 0", n)
	}

	// Ready: the next probe makes it an endpoint.
	r.ready.Store(true)
	waitFor(t, s, "converted")

	// Unready again: out once ReadinessFailureThreshold probes in a row
	// fail, and not before the first of them.
	r.ready.Store(false)
	if got := call(t, s); got != "converted" {
		t.Fatalf("a replica whose probe has not failed yet was not sent the connection: %q", got)
	}
	waitFor(t, s, "")
	sent := r.accepted.Load()
	time.Sleep(2 * probePeriod)
	if got := call(t, s); got != "" {
		t.Fatalf("a replica that turned unready answered %q", got)
	}
	if n := r.accepted.Load(); n != sent {
		t.Fatalf("a replica that turned unready was sent %d more connections, want 0", n-sent)
	}
}
