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
	"net"
	"sync"
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
	// maxConns: past it, new connections wait in the kernel's backlog
	// until one closes.
	maxConns int
}

// The servers' limits, each for its callers.
var (
	// The conversion webhook's caller is the API server, which gives a
	// call 30 s in all (the webhook client's timeout; a CRD's conversion
	// has no timeoutSeconds) and does not retry it. A review's body, even
	// the largest conversion.Handler takes, arrives in a fraction of read
	// on any cluster network: read cuts a body that trickles. write is the
	// API server's 30 s, past which no one reads the answer. idle is longer
	// than the 90 s Kubernetes' clients keep an idle connection, so that
	// the client, not the server, closes it, and a POST never races the
	// server's close. maxConns leaves room for the API servers' connections
	// beside whatever else reaches the port; conversion.Handler bounds the
	// reviews, and the memory they hold, on its own.
	webhookLimits = limits{readHeader: 10 * time.Second, read: 10 * time.Second, write: 30 * time.Second,
		idle: 120 * time.Second, maxConns: 256}
	// The probes' caller is the kubelet: a GET without a body every few
	// seconds, on a new connection each time, with a timeout of its own
	// of a second by default (timeoutSeconds). A few connections suffice.
	probeLimits = limits{readHeader: 10 * time.Second, read: 10 * time.Second, write: 10 * time.Second,
		idle: 30 * time.Second, maxConns: 16}
	// The metrics server's callers are Prometheus, which keeps its
	// connection between scrapes, and whoever takes a profile. write must
	// outlast a CPU profile or trace: net/http/pprof refuses a duration
	// ("seconds") not shorter than the server's WriteTimeout, and the
	// default profile is 30 s, after the TokenReview and
	// SubjectAccessReview that authorize it; two minutes leave room for
	// longer ones (docs/monitoring.md, Profiling). idle outlasts a scrape
	// interval of a minute.
	metricsLimits = limits{readHeader: 10 * time.Second, read: 10 * time.Second, write: 2 * time.Minute,
		idle: 120 * time.Second, maxConns: 32}
)

// limitConnections returns a listener that holds at most n connections at
// once: Accept waits for one to close before taking the next, which waits in
// the kernel's backlog meanwhile (as golang.org/x/net/netutil.LimitListener
// does). n of 0 is no limit.
func limitConnections(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), closed: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close also ends an Accept waiting for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// limitedConn gives its slot back when closed, once.
type limitedConn struct {
	net.Conn
	release   func()
	closeOnce sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(c.release)
	return err
}
