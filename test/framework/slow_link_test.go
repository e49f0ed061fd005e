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
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer answers each line sent to it with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().String()
}

func TestSlowLinkHoldsBackWhatTheClientSendsByTheDelaySetWhileItRuns(t *testing.T) {
	link, err := StartSlowLink(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = link.Close() }()
	conn, err := net.Dial("tcp", link.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	lines := bufio.NewReader(conn)
	roundTrip := func(line string) time.Duration {
		t.Helper()
		sent := time.Now()
		if _, err := io.WriteString(conn, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if got != line+"\n" {
			t.Errorf("echoed %q, want %q", got, line+"\n")
		}
		return time.Since(sent)
	}

	if took := roundTrip("first"); took >= 300*time.Millisecond {
		t.Logf("without delay the round trip took %v (a slow machine)", took)
	}
	// Set on a connection already open, as a test slows a client that is
	// already connected.
	link.SetDelay(300 * time.Millisecond)
	if took := roundTrip("second"); took < 300*time.Millisecond {
		t.Errorf("with a delay of 300ms the round trip took %v", took)
	}
	link.SetDelay(0)
	if took := roundTrip("third"); took >= 300*time.Millisecond {
		t.Logf("without delay again the round trip took %v (a slow machine)", took)
	}
}
