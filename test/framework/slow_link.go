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

// A slow link between a client and a server: a TCP proxy on 127.0.0.1 that
// holds back what the client sends for a delay the test sets while it runs.
// Through it every request of the client reaches the server that much
// later, as over a congested network or to an API server slow to read:
// nothing is refused, and the bytes keep their order. TLS passes through
// untouched, so a kubeconfig need only name the proxy's address.

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// SlowLink is a TCP proxy to one address whose client-to-server direction
// is delayed by Delay.
type SlowLink struct {
	listener net.Listener
	upstream string
	delay    atomic.Int64 // time.Duration

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// StartSlowLink listens on a free port of 127.0.0.1 and forwards each
// connection to upstream (host:port), with no delay until SetDelay.
func StartSlowLink(upstream string) (*SlowLink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &SlowLink{listener: l, upstream: upstream, conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	return s, nil
}

// Addr is the proxy's host:port.
func (s *SlowLink) Addr() string { return s.listener.Addr().String() }

// SetDelay holds back each byte the clients send from then on by d.
func (s *SlowLink) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// Close stops listening, cuts every connection and waits for the
// goroutines that served them.
func (s *SlowLink) Close() error {
	err := s.listener.Close()
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *SlowLink) accept() {
	for {
		client, err := s.listener.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", s.upstream)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !s.track(client, server) {
			return
		}
		s.wg.Go(func() { s.forward(server, client, true) })
		s.wg.Go(func() { s.forward(client, server, false) })
	}
}

// track records the connections for Close; false once closed.
func (s *SlowLink) track(conns ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		s.conns[c] = struct{}{}
	}
	return true
}

// chunk is what one read took from a connection, and when it may be
// written on.
type chunk struct {
	data []byte
	due  time.Time
}

// forward copies from src to dst, each read written no sooner than the
// delay after it was read when delayed. Either side's end ends both.
func (s *SlowLink) forward(dst, src net.Conn, delayed bool) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	if !delayed {
		_, _ = io.Copy(dst, src)
		return
	}
	chunks := make(chan chunk, 256)
	var reader sync.WaitGroup
	reader.Go(func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{data: buf[:n], due: time.Now().Add(time.Duration(s.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	})
	for c := range chunks {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	// The reader returns, if it has not, and what it read meanwhile is
	// dropped.
	_ = src.Close()
	for range chunks {
	}
	reader.Wait()
}
