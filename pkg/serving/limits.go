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
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// limits are how long a server gives a connection, and how many it holds.
// Every server has all of them: without a ReadTimeout a body may trickle a
// byte at a time, and a TLS handshake never finish (ReadHeaderTimeout starts
// after it); without an IdleTimeout a kept-alive connection is held for
// ever; without a bound on connections each of those holds a goroutine and
// its buffers. One HTTP/1.1 connection serves one request at a time (no
// server here speaks HTTP/2), so maxConns also bounds the handlers in flight.
type limits struct {
	// readHeader: from the connection's start, or the end of its last
	// request, to the end of the next request's headers.
	readHeader time.Duration
	// read: to the end of the request's body, TLS handshake included.
	read time.Duration
	// write: from the end of the request's headers to the end of the
	// response.
	write time.Duration
	// idle: how long a kept-alive connection may wait for its next request.
	idle time.Duration
	// maxConns: past it, a new connection waits in the kernel's backlog
	// until one closes, unless shed.
	maxConns int
	// shed: past maxConns, a new connection is taken at once, and the
	// oldest connection held that is not serving a request (one still in
	// its TLS handshake or its headers, or kept alive between requests) is
	// closed to make room. Without it a handful of clients that connect
	// and send nothing, or a header a byte at a time, hold every slot for
	// as long as the timeouts let them, reconnecting as each expires, and
	// the caller the server is for waits behind them in the backlog: the
	// kubelet's probe times out after a second, and the pod is restarted.
	// With it they can only push each other out.
	shed bool
}

// The servers' limits, each for its callers.
var (
	// The conversion webhook's caller is the API server, which gives a
	// call 30 s in all (the webhook client's timeout; a CRD's conversion
	// has no timeoutSeconds) and does not retry it. A review's body, even
	// the largest conversionwebhook.Handler takes, arrives in a fraction
	// of read on any cluster network: read cuts a body that trickles.
	// write is the API server's 30 s, past which no one reads the answer.
	// idle is longer than the 90 s Kubernetes' clients keep an idle
	// connection, so that the client, not the server, closes it, and a
	// POST never races the server's close. maxConns leaves room for the
	// API servers' connections beside whatever else reaches the port;
	// conversionwebhook.Handler bounds the reviews, and the memory they
	// hold, on its own. Not shed: an idle
	// connection of the API server's closed under it would fail the POST
	// it was about to send, which its client does not retry.
	webhookLimits = limits{readHeader: 10 * time.Second, read: 10 * time.Second, write: 30 * time.Second,
		idle: 120 * time.Second, maxConns: 256}
	// The probes' caller is the kubelet: a GET without a body every few
	// seconds, on a new connection each time, sent at once, with a timeout
	// of its own of a second by default (timeoutSeconds). A few
	// connections suffice, the headers are short, and the rest are shed:
	// whoever else reaches the port (where no NetworkPolicy is enforced,
	// any pod) cannot keep the kubelet waiting, so liveness holds.
	probeLimits = limits{readHeader: 5 * time.Second, read: 5 * time.Second, write: 10 * time.Second,
		idle: 30 * time.Second, maxConns: 16, shed: true}
	// The metrics server's callers are Prometheus, which keeps its
	// connection between scrapes, and whoever takes a profile. write must
	// outlast a CPU profile or trace: net/http/pprof refuses a duration
	// ("seconds") not shorter than the server's WriteTimeout, and the
	// default profile is 30 s, after the TokenReview and
	// SubjectAccessReview that authorize it; two minutes leave room for
	// longer ones (docs/monitoring.md, Profiling). idle outlasts a scrape
	// interval of a minute. Shed as the probes are: Prometheus' kept-alive
	// connection, if it is the one shed, costs it a new connection (its
	// GET is retried on one), and a profile being taken is a request
	// served, never shed.
	metricsLimits = limits{readHeader: 10 * time.Second, read: 10 * time.Second, write: 2 * time.Minute,
		idle: 120 * time.Second, maxConns: 32, shed: true}
)

// limitConnections returns a listener that holds at most lim.maxConns
// connections at once (0: no limit). Without lim.shed, Accept waits for one
// to close before taking the next, which waits in the kernel's backlog
// meanwhile (as golang.org/x/net/netutil.LimitListener does). With it,
// Accept takes the next at once and closes the oldest held connection that
// is not serving a request; it waits only when every one held is (a handler
// running, or its response being written), which the write timeout bounds.
// Whether a connection is serving is told by trackServing's hooks, which the
// http.Server of a listener that sheds must install.
func limitConnections(ln net.Listener, lim limits) net.Listener {
	if lim.maxConns <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, max: lim.maxConns, shed: lim.shed,
		changed: make(chan struct{}), closed: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	max  int
	shed bool

	mu sync.Mutex
	// held are the connections taken and not closed, oldest first.
	held []*limitedConn
	// changed is closed, and replaced, when one of held closes or stops
	// serving.
	changed chan struct{}

	closed    chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	if !l.shed {
		// Wait first, so that the next connection waits in the backlog.
		if err := l.room(); err != nil {
			return nil, err
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.shed {
		if err := l.room(); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	lc := &limitedConn{Conn: c, l: l}
	l.mu.Lock()
	l.held = append(l.held, lc)
	l.mu.Unlock()
	return lc, nil
}

// room returns once fewer than max connections are held, shedding one if
// the listener sheds and one is not serving, or once the listener is
// closed (net.ErrClosed). Only Accept calls it, and an http.Server calls
// Accept from one goroutine, so the room it finds is still there after.
func (l *limitListener) room() error {
	for {
		l.mu.Lock()
		if len(l.held) < l.max {
			l.mu.Unlock()
			return nil
		}
		var victim *limitedConn
		if l.shed {
			for _, c := range l.held {
				// Marked shed under the same compare-and-swap that
				// marks it serving, so that a handler about to start
				// is never cut: one or the other wins.
				if c.state.CompareAndSwap(connWaiting, connShed) {
					victim = c
					break
				}
			}
		}
		changed := l.changed
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close()
			continue
		}
		select {
		case <-changed:
		case <-l.closed:
			return net.ErrClosed
		}
	}
}

// release forgets c, which has closed, and wakes room.
func (l *limitListener) release(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.Index(l.held, c); i >= 0 {
		l.held = slices.Delete(l.held, i, i+1)
	}
	l.wakeLocked()
}

// wakeLocked wakes room, waiting for a connection to close or, when the
// listener sheds, to stop serving. l.mu is held.
func (l *limitListener) wakeLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Close also ends an Accept waiting for room.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// What a held connection is doing, for shedding.
const (
	// connWaiting: in its TLS handshake, reading a request's headers, or
	// kept alive between requests. May be shed.
	connWaiting int32 = iota
	// connServing: a handler is running, or its response being written.
	connServing
	// connShed: closed to make room.
	connShed
)

// limitedConn gives its slot back when closed, once.
type limitedConn struct {
	net.Conn
	l         *limitListener
	state     atomic.Int32
	closeOnce sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { c.l.release(c) })
	return err
}

// heldConn is the limitedConn under c, as an http.Server's hooks see it
// (a *tls.Conn over it when serving TLS), or nil when there is none.
func heldConn(c net.Conn) *limitedConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	lc, _ := c.(*limitedConn)
	return lc
}

type heldConnKey struct{}

// trackServing installs on srv the hooks that tell limitConnections which
// connections are serving a request: from the start of the handler until
// the connection waits for its next request (http.StateIdle, after the
// response is written) or closes. A request with a body (none of the
// callers of the probe and metrics servers sends one) is answered with
// Connection: close, so that after its handler the server does not go on
// reading, unsheddable, a body that trickles.
func trackServing(srv *http.Server) {
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if lc := heldConn(c); lc != nil {
			return context.WithValue(ctx, heldConnKey{}, lc)
		}
		return ctx
	}
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		if lc := heldConn(c); lc != nil && s == http.StateIdle && lc.state.CompareAndSwap(connServing, connWaiting) {
			// An Accept may be waiting for a connection to shed.
			lc.l.mu.Lock()
			lc.l.wakeLocked()
			lc.l.mu.Unlock()
		}
	}
	next := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lc, ok := r.Context().Value(heldConnKey{}).(*limitedConn); ok {
			// Lost only to a shed: the connection is closed, and the
			// answer goes nowhere.
			lc.state.CompareAndSwap(connWaiting, connServing)
		}
		if r.ContentLength != 0 {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}
