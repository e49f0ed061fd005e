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
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/kube-samples/sample-controller/pkg/conversionwebhook"
)

// webhookService stands in, on 127.0.0.1, for the Service through which a
// cluster's API server reaches the conversion webhook of every replica
// (artifacts/deploy/webhook-service.yaml), and keeps a Service's rule: a
// connection goes only to a ready endpoint. In a cluster the kubelet probes
// each pod's /readyz, the EndpointSlice controller lists the pods whose
// probe passes as ready, and kube-proxy spreads the Service's connections
// over those alone; a pod that runs but is not ready gets none. Here each
// running controller's /readyz is probed every probePeriod, a controller is
// an endpoint from its first passing probe until ReadinessFailureThreshold
// probes in a row fail (the manifest's threshold, at a tenth of its period:
// the lag of a real EndpointSlice, shortened), and each connection is forwarded, TLS
// and all, to the next ready endpoint in turn. With none ready it accepts
// and closes the connection, which is what the API server sees of a Service
// without endpoints. A process that has exited is dropped at once, as a
// deleted pod leaves its EndpointSlice. The suite's CRD points its
// clientConfig.url here (WebhookURL).
type webhookService struct {
	ln   net.Listener
	stop chan struct{}

	mu        sync.Mutex
	endpoints []*endpoint
	next      int
}

// endpoint is one replica behind the stand-in: where it serves, and what its
// probes last said.
type endpoint struct {
	replica replica
	// webhook and probes are the replica's addresses, "" until it has said
	// where it listens.
	webhook, probes string
	ready           bool
	failures        int
}

// replica is what the stand-in needs of a controller: whether it still runs,
// and where it serves ("" until it says).
type replica interface {
	Exited() bool
	Log() string
}

const (
	// probePeriod is how often each replica's /readyz is probed.
	probePeriod = time.Second
	// ReadinessFailureThreshold is how many failed probes in a row make a
	// ready replica unready: the manifest's readinessProbe.failureThreshold
	// (held to it by test/names).
	ReadinessFailureThreshold = 3
)

// WebhookURL is the conversion webhook's URL for this cluster's CRD: the
// stand-in for its Service, started at the first call.
func (c *Cluster) WebhookURL() (string, error) {
	c.webhookMu.Lock()
	defer c.webhookMu.Unlock()
	if c.webhook == nil {
		s, err := startWebhookService()
		if err != nil {
			return "", err
		}
		c.webhook = s
	}
	return "https://" + c.webhook.ln.Addr().String() + conversionwebhook.Path, nil
}

func startWebhookService() (*webhookService, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &webhookService{ln: ln, stop: make(chan struct{})}
	go s.serve()
	go s.probeLoop()
	return s, nil
}

// addController makes a started controller one of the Service's endpoints
// while it runs and its readiness probe passes.
func (c *Cluster) addController(ctrl *Controller) {
	c.webhookMu.Lock()
	s := c.webhook
	c.webhookMu.Unlock()
	if s != nil {
		s.add(ctrl)
	}
}

// WebhookEndpointReady reports whether the stand-in for the webhook's
// Service sends connections to ctrl (its probe has passed), or ctrl serves
// no webhook: what a test waits for before it reads in the other version.
func (c *Cluster) WebhookEndpointReady(ctrl *Controller) bool {
	c.webhookMu.Lock()
	s := c.webhook
	c.webhookMu.Unlock()
	if s == nil || !ctrl.servesWebhook {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.endpoints {
		if e.replica == replica(ctrl) {
			return e.ready && e.webhook != ""
		}
	}
	return false
}

func (s *webhookService) add(r replica) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endpoints = append(s.endpoints, &endpoint{replica: r})
}

// stopWebhookService closes the stand-in's listener and stops its probes.
func (c *Cluster) stopWebhookService() {
	c.webhookMu.Lock()
	defer c.webhookMu.Unlock()
	if c.webhook != nil {
		c.webhook.close()
	}
}

func (s *webhookService) close() {
	_ = s.ln.Close()
	close(s.stop)
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

// forward copies conn to and from the webhook of the next ready replica.
func (s *webhookService) forward(conn net.Conn) {
	defer conn.Close()
	addr := s.nextReady()
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

// nextReady returns the webhook address of the next ready replica, in turn;
// "" if none is.
func (s *webhookService) nextReady() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ready []string
	for _, e := range s.endpoints {
		if e.ready && e.webhook != "" && !e.replica.Exited() {
			ready = append(ready, e.webhook)
		}
	}
	if len(ready) == 0 {
		return ""
	}
	s.next++
	return ready[s.next%len(ready)]
}

// probeLoop probes every replica each probePeriod until the stand-in stops.
func (s *webhookService) probeLoop() {
	ticker := time.NewTicker(probePeriod)
	defer ticker.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-ticker.C:
			s.probeAll()
		}
	}
}

// probeAll probes every running replica at once, drops those that have
// exited, and records which are ready.
func (s *webhookService) probeAll() {
	s.mu.Lock()
	running := s.endpoints[:0]
	for _, e := range s.endpoints {
		if !e.replica.Exited() {
			running = append(running, e)
		}
	}
	s.endpoints = running
	endpoints := append([]*endpoint(nil), running...)
	s.mu.Unlock()

	var wg sync.WaitGroup
	for _, e := range endpoints {
		wg.Go(func() {
			s.mu.Lock()
			webhook, probes := e.webhook, e.probes
			s.mu.Unlock()
			if webhook == "" || probes == "" {
				webhook, probes = servingAddresses(e.replica.Log())
			}
			passed := probes != "" && probeReady(probes)
			s.mu.Lock()
			defer s.mu.Unlock()
			e.webhook, e.probes = webhook, probes
			switch {
			case passed:
				e.ready, e.failures = true, 0
			case e.ready:
				e.failures++
				if e.failures >= ReadinessFailureThreshold {
					e.ready, e.failures = false, 0
				}
			}
		})
	}
	wg.Wait()
}

// servingLine is the controller's log line saying where one of its servers
// listens (pkg/serving).
var servingLine = regexp.MustCompile(`"Serving" server="(webhook|probes)" address="([^"]+)"`)

// servingAddresses returns where the replica's webhook and probe servers
// listen, "" for each it has not said yet.
func servingAddresses(log string) (webhook, probes string) {
	for _, m := range servingLine.FindAllStringSubmatch(log, -1) {
		if m[1] == "webhook" {
			webhook = m[2]
		} else {
			probes = m[2]
		}
	}
	return webhook, probes
}

// probeReady is a kubelet's readiness probe: a GET of /readyz that answers
// 2xx or 3xx within the manifest's timeoutSeconds.
func probeReady(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}
