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
	"io"
	"net"
	"regexp"
	"sync"

	"github.com/kube-samples/sample-controller/pkg/conversion"
)

// webhookService stands in, on 127.0.0.1, for the Service through which a
// cluster's API server reaches the conversion webhook of every replica
// (artifacts/deploy/webhook-service.yaml): it forwards each connection, TLS
// and all, to the webhook of one of the cluster's running controllers in
// turn, as kube-proxy spreads a Service's connections over its ready
// endpoints. With no controller running it accepts and closes the
// connection, which is what the API server sees of a Service without
// endpoints. The suite's CRD points its clientConfig.url here (WebhookURL).
type webhookService struct {
	ln net.Listener

	mu          sync.Mutex
	controllers []*Controller
	next        int
}

// WebhookURL is the conversion webhook's URL for this cluster's CRD: the
// stand-in for its Service, started at the first call.
func (c *Cluster) WebhookURL() (string, error) {
	c.webhookMu.Lock()
	defer c.webhookMu.Unlock()
	if c.webhook == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		c.webhook = &webhookService{ln: ln}
		go c.webhook.serve()
	}
	return "https://" + c.webhook.ln.Addr().String() + conversion.Path, nil
}

// addController makes a started controller one of the Service's endpoints
// while it runs.
func (c *Cluster) addController(ctrl *Controller) {
	c.webhookMu.Lock()
	s := c.webhook
	c.webhookMu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.controllers = append(s.controllers, ctrl)
}

// stopWebhookService closes the stand-in's listener.
func (c *Cluster) stopWebhookService() {
	c.webhookMu.Lock()
	defer c.webhookMu.Unlock()
	if c.webhook != nil {
		_ = c.webhook.ln.Close()
	}
}

func (s *webhookService) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		go s.forward(conn)
	}
}

// forward copies conn to and from the webhook of the next running
// controller.
func (s *webhookService) forward(conn net.Conn) {
	defer conn.Close()
	addr := s.nextEndpoint()
	if addr == "" {
		return
	}
	backend, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer backend.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(backend, conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, backend); done <- struct{}{} }()
	<-done
}

// webhookServing is the controller's log line saying where its webhook
// listens (pkg/serving).
var webhookServing = regexp.MustCompile(`"Serving" server="webhook" address="([^"]+)"`)

// nextEndpoint returns the webhook address of the next controller, in
// turn, that runs and has said where its webhook listens; "" if none.
func (s *webhookService) nextEndpoint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	running := s.controllers[:0]
	for _, c := range s.controllers {
		if !c.Exited() {
			running = append(running, c)
		}
	}
	s.controllers = running
	for range running {
		c := running[s.next%len(running)]
		s.next++
		if m := webhookServing.FindStringSubmatch(c.Log()); m != nil {
			return m[1]
		}
	}
	return ""
}
