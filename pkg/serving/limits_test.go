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
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testLimits are short, so that the tests wait for them, not for the
// servers' own.
var testLimits = limits{readHeader: time.Second, read: 300 * time.Millisecond, write: time.Second,
	idle: 300 * time.Millisecond, maxConns: 2}

// startTestServer serves handler within lim on 127.0.0.1 until the test
// ends, and returns its address.
func startTestServer(t *testing.T, lim limits, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	serveOn(ctx, "test", ln, handler, nil, lim)
	return ln.Addr().String()
}

// closedWithin reads conn until the server closes it, and returns how long
// that took.
func closedWithin(t *testing.T, conn net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(limit))
	// Closed while the client still sends, the connection may end in a
	// reset (the kernel answers bytes left unread with RST), as it does
	// under go1.27.3: closed either way.
	if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the server did not close the connection within %v: %v", limit, err)
	}
	return time.Since(start)
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = io.WriteString(w, "ok")
})

// A kept-alive connection with no next request is closed after IdleTimeout.
func TestIdleConnectionIsClosedAfterIdleTimeout(t *testing.T) {
	// The other timeouts longer, so that only IdleTimeout can close it.
	lim := testLimits
	lim.read, lim.readHeader, lim.write = 5*time.Second, 5*time.Second, 5*time.Second
	conn, err := net.Dial("tcp", startTestServer(t, lim, ok))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("response %v, %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	if took := closedWithin(t, conn, 4*time.Second); took < lim.idle-50*time.Millisecond || took > lim.idle+time.Second {
		t.Errorf("idle connection closed after %v, want about %v", took, lim.idle)
	}
}

// A body sent a byte at a time is cut by ReadTimeout, long before it ends.
func TestTricklingBodyIsCutByReadTimeout(t *testing.T) {
	conn, err := net.Dial("tcp", startTestServer(t, testLimits, ok))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	// 1,000 bytes at one per 50 ms would take 50 s.
	if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for range 1000 {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := conn.Write([]byte("x")); err != nil {
				return
			}
		}
	}()
	closedWithin(t, conn, 5*time.Second)
	if took := time.Since(start); took < testLimits.read-50*time.Millisecond || took > testLimits.read+time.Second {
		t.Errorf("trickling body cut after %v, want about %v", took, testLimits.read)
	}
}

// Past maxConns, a connection waits until one of those held closes, on a
// server that does not shed (the webhook's).
func TestConnectionsPastTheCapWaitForOneToClose(t *testing.T) {
	lim := testLimits
	lim.idle, lim.read, lim.readHeader = time.Minute, time.Minute, time.Minute
	addr := startTestServer(t, lim, ok)
	held := make([]net.Conn, 0, lim.maxConns)
	for range lim.maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	answered := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			defer c.Close()
			_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: test\r\n\r\n")
		}
		if err == nil {
			var resp *http.Response
			if resp, err = http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				var body []byte
				body, err = io.ReadAll(io.LimitReader(resp.Body, 2))
				if err == nil && !strings.EqualFold(string(body), "ok") {
					err = io.ErrUnexpectedEOF
				}
			}
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("a connection past the cap was served (%v) while %d were held", err, lim.maxConns)
	case <-time.After(300 * time.Millisecond):
	}
	_ = held[0].Close()
	select {
	case err := <-answered:
		if err != nil {
			t.Errorf("once one closed: %v, want ok", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("a connection past the cap was not served after one closed")
	}
}

// Every server has every limit, and the metrics server's WriteTimeout
// leaves room for the default CPU profile of 30 s.
func TestEveryServerHasEveryLimit(t *testing.T) {
	for name, lim := range map[string]limits{"webhook": webhookLimits, "probes": probeLimits, "metrics": metricsLimits} {
		if lim.readHeader <= 0 || lim.read <= 0 || lim.write <= 0 || lim.idle <= 0 || lim.maxConns <= 0 {
			t.Errorf("%s: %+v, want every limit set", name, lim)
		}
	}
	if webhookLimits.shed || !probeLimits.shed || !metricsLimits.shed {
		t.Errorf("shed: webhook %v, probes %v, metrics %v; want false, true, true",
			webhookLimits.shed, probeLimits.shed, metricsLimits.shed)
	}
	if metricsLimits.write <= 30*time.Second+10*time.Second {
		t.Errorf("metrics WriteTimeout %v leaves no room for a 30 s profile", metricsLimits.write)
	}
}

// Clients that connect and send nothing, send a request's headers a byte at
// a time, or keep their connection after a request, many more of them than
// the connections the server holds, cannot keep /healthz from being
// answered: past maxConns the oldest connection not serving a request is
// closed. The servers' own limits, but for timeouts of an hour, so that
// nothing but shedding frees a slot: without it, the oldest would never be
// closed and /healthz never answered, however fast or slow the machine, and
// the waits below are bounds on progress that a slow machine does not come
// near. The metrics server is tried over TLS, as it serves by default, where
// a connection that sends nothing is one stuck in its handshake.
func TestIdleAndTricklingClientsCannotStarveTheProbes(t *testing.T) {
	cert, err := selfSignedCertificate()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		lim  limits
		tls  *tls.Config
	}{
		{"probes", probeLimits, nil},
		{"metrics", metricsLimits, &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := tc.lim
			lim.readHeader, lim.read, lim.write, lim.idle = time.Hour, time.Hour, time.Hour, time.Hour
			liveness, _ := Probes(false, nil, func() bool { return true })
			addr := startTestServerTLS(t, lim, probesHandler(liveness, nil), tc.tls)
			dial := func() net.Conn {
				t.Helper()
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
				if tc.tls == nil {
					return c
				}
				tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a test's own server
				// Bounded, so that a server that never takes the
				// connection fails the test rather than hangs it.
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				if err := tc.Handshake(); err != nil {
					t.Fatal(err)
				}
				_ = c.SetDeadline(time.Time{})
				return tc
			}

			// Each of these is served while there is room, then kept.
			keptAlive := make([]net.Conn, 0, lim.maxConns)
			for range lim.maxConns {
				c := dial()
				if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
					t.Fatal(err)
				}
				if status, body := readResponse(t, c); status != http.StatusOK || body != "ok" {
					t.Fatalf("GET /healthz on a connection kept: %d %q, want 200 \"ok\"", status, body)
				}
				keptAlive = append(keptAlive, c)
			}
			// Headers that never end, a byte every 20 ms.
			trickling := make([]net.Conn, 0, lim.maxConns)
			stop := make(chan struct{})
			t.Cleanup(func() { close(stop) })
			for range lim.maxConns {
				c := dial()
				if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: test\r\nX-Trickle: "); err != nil {
					t.Fatal(err)
				}
				trickling = append(trickling, c)
				go func() {
					for {
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
						if _, err := c.Write([]byte("x")); err != nil {
							return
						}
					}
				}()
			}
			// Connections that send nothing, in their TLS handshake
			// for the metrics server: three times as many as it holds.
			for range 3 * lim.maxConns {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
			}

			// The oldest, those kept alive and the trickling, are closed
			// to make room for the silent ones.
			for i, c := range append(keptAlive, trickling...) {
				if err := closedByServer(c, 30*time.Second); err != nil {
					t.Fatalf("connection %d of %d not closed to make room: %v", i+1, 2*lim.maxConns, err)
				}
			}
			// And the kubelet's probe is answered, on a new connection.
			for range 3 {
				if status, body := readResponse(t, dialRequest(t, dial, "/healthz")); status != http.StatusOK || body != "ok" {
					t.Fatalf("GET /healthz beside %d silent connections: %d %q, want 200 \"ok\"",
						3*lim.maxConns, status, body)
				}
			}
		})
	}
}

// A connection whose request is being served is never shed: past maxConns,
// with every connection held serving, a new one waits until one stops, and
// the requests served meanwhile are answered whole.
func TestConnectionsServingARequestAreNotShed(t *testing.T) {
	lim := testLimits
	lim.readHeader, lim.read, lim.write, lim.idle, lim.shed = time.Hour, time.Hour, time.Hour, time.Hour, true
	started, release := make(chan struct{}, lim.maxConns), make(chan struct{})
	mux := http.NewServeMux()
	mux.Handle("/", ok)
	mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		started <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "slow")
	})
	addr := startTestServer(t, lim, mux)
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	slow := make([]net.Conn, 0, lim.maxConns)
	for range lim.maxConns {
		slow = append(slow, dialRequest(t, dial, "/slow"))
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the handler of /slow did not start")
		}
	}
	answered := make(chan string, 1)
	go func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			answered <- err.Error()
			return
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
			answered <- err.Error()
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answered <- err.Error()
			return
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 16))
		answered <- string(body)
	}()
	select {
	case got := <-answered:
		t.Fatalf("a connection past the cap was served (%q) while %d were serving", got, lim.maxConns)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	for i, c := range slow {
		if status, body := readResponse(t, c); status != http.StatusOK || body != "slow" {
			t.Errorf("GET /slow %d: %d %q, want 200 \"slow\"", i+1, status, body)
		}
	}
	select {
	case got := <-answered:
		if got != "ok" {
			t.Errorf("once a request was served: %q, want \"ok\"", got)
		}
	case <-time.After(30 * time.Second):
		t.Error("a connection past the cap was not served after the requests held were")
	}
}

// startTestServerTLS is startTestServer, over TLS when tlsConfig is not nil.
func startTestServerTLS(t *testing.T, lim limits, handler http.Handler, tlsConfig *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	serveOn(ctx, "test", ln, handler, tlsConfig, lim)
	return ln.Addr().String()
}

// dialRequest sends a GET of path on a new connection from dial, and
// returns the connection.
func dialRequest(t *testing.T, dial func() net.Conn, path string) net.Conn {
	t.Helper()
	c := dial()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// readResponse reads one response from c, waiting at most 30 s, and returns
// its status and body.
func readResponse(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading a response's body: %v", err)
	}
	return resp.StatusCode, string(body)
}

// closedByServer reads c until the server closes it (an end of file, or a
// reset when it closed with bytes of ours unread), and says so if it did
// not within limit.
func closedByServer(c net.Conn, limit time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("still open after %v", limit)
	}
	return nil
}
