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

// Bringing a control plane up on a slow machine. kwokctl's binary runtime
// starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok one after the other without waiting for any of them, and starts
// nothing again. kube-controller-manager and kube-scheduler read
// kube-system/extension-apiserver-authentication as they start and exit when
// kube-apiserver does not answer yet: on a busy machine, where kube-apiserver
// takes more than a few seconds to listen, kube-controller-manager is gone
// before the cluster is used, and the node keeps its not-ready taint forever.
//
// So, as kubelet restarts a static pod, the start-up supervisor here starts
// again, with `kwokctl start cluster` (which starts every component that is
// not running and leaves the others alone), each component that exits while
// the cluster comes up, backing off between restarts of the same one. The
// cluster is up when every component answers its health endpoint, the fake
// node is Ready and untainted, and the default ServiceAccount exists.
//
// Each wait is for progress, not for a total: a step fails only when it
// makes none for the timeout (WithTimeout) after it began or after the last
// restart, or when one component exits more than maxStartRestarts times (it
// is crashing, not slow). Either way the error names the component and ends
// with the last lines of its log.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

const (
	// maxStartRestarts is how many times a component may exit while the
	// cluster comes up before StartCluster gives up on it.
	maxStartRestarts = 5
	// restartBackoff is how long a component must have been down before
	// its first restart; it doubles for each further one, as kubelet's
	// back-off does.
	restartBackoff = time.Second
)

// startup brings one cluster up.
type startup struct {
	c       *Cluster
	timeout time.Duration
	// restarts counts the restarts of each component, downSince when each
	// one that is down was first seen so; lastRestart is when the last
	// restart (of any component) was.
	restarts    map[string]int
	downSince   map[string]time.Time
	lastRestart time.Time
	logf        func(format string, args ...any)
}

func newStartup(c *Cluster, timeout time.Duration, logf func(string, ...any)) *startup {
	return &startup{c: c, timeout: timeout, restarts: map[string]int{}, downSince: map[string]time.Time{}, logf: logf}
}

// until polls cond until it holds, starting again meanwhile any component
// that has exited. It fails when cond has not held for s.timeout since the
// step began or since the last restart, whichever is later.
func (s *startup) until(what string, cond func(context.Context) (bool, error)) error {
	ctx := context.Background()
	began := time.Now()
	var last error
	for {
		if err := s.restartExited(); err != nil {
			return err
		}
		ok, err := cond(ctx)
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		since := began
		if s.lastRestart.After(since) {
			since = s.lastRestart
		}
		if time.Since(since) > s.timeout {
			return s.stuck(what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// restartExited starts again the components that have been down for their
// back-off. One seen down only for a moment is not restarted: a component
// is down too between its start and its exec of the binary kwokctl named.
func (s *startup) restartExited() error {
	var due []string
	for _, name := range components {
		pid, state, err := s.c.component(name)
		if err != nil {
			return err
		}
		if state != StateDown {
			delete(s.downSince, name)
			continue
		}
		since, seen := s.downSince[name]
		if !seen {
			s.downSince[name] = time.Now()
			continue
		}
		if time.Since(since) < restartBackoff<<s.restarts[name] {
			continue
		}
		if s.restarts[name] >= maxStartRestarts {
			return fmt.Errorf("%s exited %d times while the control plane started; end of its log:\n%s",
				name, s.restarts[name]+1, s.c.kwok.logTail(name, 3000))
		}
		s.logf("%s exited while the control plane started; end of its log:\n%s", name, s.c.kwok.logTail(name, 1500))
		// kwokctl counts a process that exists at all as running, a
		// zombie too: it must be reaped first.
		if err := waitGone(pid, s.timeout); err != nil {
			return err
		}
		due = append(due, name)
	}
	if len(due) == 0 {
		return nil
	}
	if err := s.c.keepLogsOfDown(); err != nil {
		return err
	}
	if err := s.c.kwok.run("start", "cluster", "--timeout="+s.timeout.String()); err != nil {
		return err
	}
	for _, name := range due {
		s.restarts[name]++
		delete(s.downSince, name)
		s.logf("started %s again (restart %d of at most %d)", name, s.restarts[name], maxStartRestarts)
	}
	s.lastRestart = time.Now()
	return nil
}

// allServing holds once every component answers its health endpoint.
func (s *startup) allServing(ctx context.Context) (bool, error) {
	ports, err := s.c.kwok.ports()
	if err != nil {
		return false, err
	}
	var errs []error
	for _, name := range components {
		if err := s.c.serving(ctx, name, ports); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return len(errs) == 0, errors.Join(errs...)
}

// stuck is the error of a step that made no progress: what it awaited, the
// last error, each component's state and restarts, and the log of every
// component that does not serve.
func (s *startup) stuck(what string, last error) error {
	var b strings.Builder
	fmt.Fprintf(&b, "waiting for %s: no progress for %v", what, s.timeout)
	if last != nil {
		fmt.Fprintf(&b, ": %v", last)
	}
	ports, perr := s.c.kwok.ports()
	for _, name := range components {
		_, state, err := s.c.component(name)
		if err != nil {
			state = err.Error()
		}
		fmt.Fprintf(&b, "\n  %s: %s, restarted %d times", name, state, s.restarts[name])
		if perr == nil && s.c.serving(context.Background(), name, ports) != nil {
			fmt.Fprintf(&b, ", not serving; end of its log:\n%s", s.c.kwok.logTail(name, 1500))
		}
	}
	return errors.New(b.String())
}
