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
	"io"
	"net"
	"net/http"
	"strings"
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
	if _, err := io.Copy(io.Discard, conn); err != nil {
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

// Past maxConns, a connection waits until one of those held closes.
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
	if metricsLimits.write <= 30*time.Second+10*time.Second {
		t.Errorf("metrics WriteTimeout %v leaves no room for a 30 s profile", metricsLimits.write)
	}
}
