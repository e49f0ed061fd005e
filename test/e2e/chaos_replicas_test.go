//go:build e2e

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

package e2e

// The chaos scenarios' replicas, each restarted when it exits, as the
// kubelet restarts a container of the controller's Deployment.

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/test/framework"
)

// restartDelay is how long a replica stays down after it exited. The
// kubelet's first crash-loop back-off is 10 s; shorter here, so that the
// scenario fits make test, and both replicas are seldom down at once.
const restartDelay = time.Second

// supervised is one replica slot: the process running now, and every exit.
type supervised struct {
	name string
	args []string
	cl   *framework.Cluster

	mu      sync.Mutex
	current *framework.Controller
	starts  int
	exits   []string

	stop, done chan struct{}
}

// superviseReplica starts a replica and restarts it whenever it exits,
// until the test ends; then it is killed, and its exits are logged.
func superviseReplica(t *testing.T, name string, args ...string) *supervised {
	t.Helper()
	// Log files are named after the test, as startController's are.
	name = strings.NewReplacer("/", "_", " ", "_").Replace(t.Name() + "-" + name)
	s := &supervised{name: name, args: args, cl: cluster, stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	go s.loop()
	t.Cleanup(func() {
		close(s.stop)
		s.process().Kill()
		<-s.done
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Logf("%s: started %d times; exits: %s", s.name, s.starts, strings.Join(s.exits, "; "))
		if t.Failed() {
			t.Logf("log of %s:\n%s", s.current.Name, framework.Trim(s.current.Log(), 6000))
		}
	})
	return s
}

// start starts the next process of the slot.
func (s *supervised) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.starts++
	c, err := s.cl.StartController(controllerBin, logDir, fmt.Sprintf("%s-%d", s.name, s.starts), s.args...)
	if err != nil {
		return err
	}
	s.current = c
	return nil
}

// loop waits for the process to exit, records how, and starts another.
func (s *supervised) loop() {
	defer close(s.done)
	for {
		c := s.process()
		exited := make(chan int, 1)
		go func() {
			code, _ := c.Wait(24 * time.Hour)
			exited <- code
		}()
		select {
		case <-s.stop:
			return
		case code := <-exited:
			s.recordExit(c, code)
		}
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(restartDelay):
			}
			if err := s.start(); err == nil {
				break
			} else {
				s.recordExit(c, -1)
				s.mu.Lock()
				s.exits = append(s.exits, "restart failed: "+err.Error())
				s.mu.Unlock()
			}
		}
	}
}

// recordExit notes the exit code and the process's last error line.
func (s *supervised) recordExit(c *framework.Controller, code int) {
	last := ""
	for _, line := range strings.Split(c.Log(), "\n") {
		if strings.HasPrefix(line, "E") {
			last = line
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exits = append(s.exits, fmt.Sprintf("%s exited %d at %s (%s)", c.Name, code, time.Now().Format("15:04:05.000"), framework.Trim(last, 160)))
}

// process is the replica's process now.
func (s *supervised) process() *framework.Controller {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// identity is the Lease identity of the replica's process now, leader
// election's or sharding's, "" until it logged it.
func (s *supervised) identity() string {
	log := s.process().Log()
	for _, re := range []*regexp.Regexp{identityRE, shardingIdentityRE} {
		if m := re.FindStringSubmatch(log); m != nil {
			return m[1]
		}
	}
	return ""
}

// waitLeader waits until one of the replicas' current processes holds the
// Lease name, and returns it.
func waitLeader(t *testing.T, replicas []*supervised, name string) *replica {
	t.Helper()
	var leader *replica
	eventually(t, takeoverDeadline, "a replica to hold the Lease "+name, func(ctx context.Context) (bool, error) {
		lease, err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		holder := leaseHolderOf(lease)
		for _, s := range replicas {
			c := s.process()
			if id := s.identity(); id != "" && id == holder && !c.Exited() {
				leader = &replica{Controller: c, identity: id}
				return true, nil
			}
		}
		return false, fmt.Errorf("lease %s is held by none of the running replicas", describeLease(lease))
	})
	return leader
}
