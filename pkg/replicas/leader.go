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

// Leader election runs the controller only while this replica holds the
// leader election Lease, so that of several replicas exactly one reconciles
// while the others keep their caches warm, ready to take over.

package replicas

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// Config is the leader election of the -leader-elect* flags.
type Config struct {
	Enabled bool
	// Namespace and Name locate the Lease.
	Namespace, Name string
	LeaseDuration   time.Duration
	RenewDeadline   time.Duration
	RetryPeriod     time.Duration
	// Identity names this replica in the Lease (see NewIdentity).
	Identity string
}

// NewIdentity returns a name for this replica, unique among replicas and
// across restarts: the host name (the pod name in a cluster) and a UUID. It
// is the Lease's holder identity and, in the controller's user agent, tells
// in the API server's audit log which replica made a request.
func NewIdentity() (string, error) {
	hostname, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("leader election identity: %w", err)
	}
	return hostname + "_" + string(uuid.NewUUID()), nil
}

// serviceAccountNamespaceFile holds the pod's namespace in a cluster.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultNamespace is the pod's own namespace when running in a cluster, else
// "default".
func DefaultNamespace() string {
	if data, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return "default"
}

// lead runs run(ctx) only while this process holds the Lease, and opens
// fence at each renewal (see fence.go).
//
// On shutdown (ctx cancelled) run is allowed to finish before the Lease is
// released, so two leaders never work at once, and the release lets a
// standby take over at its next retry instead of waiting for the Lease to
// expire. A leader that fails to renew its Lease exits at once: another
// replica may already be leading. Until then, the fence holds its writes.
func lead(ctx context.Context, cfg Config, kubeCfg *rest.Config, watchdog *leaderelection.HealthzAdaptor, fence *Fence,
	run func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	client, err := LeaseClient(kubeCfg, cfg, 1)
	if err != nil {
		return err
	}
	identity := cfg.Identity
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, cfg.Namespace, cfg.Name,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return err
	}
	lock = &fencedLock{Interface: lock, fence: fence, leaseDuration: cfg.LeaseDuration}

	// The elector runs on its own context, cancelled only once run has
	// returned (or, before we lead, as soon as shutdown begins).
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	var runErr error
	finished := make(chan struct{})

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            cfg.Name,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadingCtx context.Context) {
				logger.Info("Became leader, starting work", "lease", klog.KRef(cfg.Namespace, cfg.Name), "identity", identity)
				// The watch ends before the Lease is released (which closes
				// the fence) once run has returned.
				watchCtx, stopWatch := context.WithCancel(leadingCtx)
				go logFenceChanges(watchCtx, fence)
				runErr = run(ctx)
				stopWatch()
				close(finished)
				stopElector()
			},
			OnStoppedLeading: func() {
				select {
				case <-finished:
					logger.Info("Released leadership", "lease", klog.KRef(cfg.Namespace, cfg.Name))
				default:
					if ctx.Err() == nil {
						logger.Error(nil, "Lost leadership, exiting", "lease", klog.KRef(cfg.Namespace, cfg.Name))
						klog.FlushAndExit(klog.ExitFlushTimeout, 1)
					}
				}
			},
			OnNewLeader: func(current string) {
				if current != identity {
					logger.Info("Another replica leads", "leader", current)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	watchdog.SetLeaderElection(elector)

	// Shutdown before we lead: stop campaigning at once. When we lead,
	// OnStartedLeading stops the elector after run returns.
	stopWaiting := context.AfterFunc(ctx, func() {
		if !elector.IsLeader() {
			stopElector()
		}
	})
	defer stopWaiting()

	logger.Info("Waiting to become leader", "lease", klog.KRef(cfg.Namespace, cfg.Name), "identity", identity)
	elector.Run(electorCtx)
	select {
	case <-finished:
		return runErr
	default:
		return nil // never led: there was nothing to run
	}
}

// logFenceChanges logs each time the fence closes while this replica leads,
// and opens again. Closed, the workers wait and writes are refused: a leader
// that was frozen past its lease wakes up with caches from before the freeze,
// and client-go's elector only gives up (and the process exits) once its
// renew deadline has run out, seconds later.
func logFenceChanges(ctx context.Context, fence *Fence) {
	logger := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-fence.closed(ctx):
		}
		if ctx.Err() != nil {
			return
		}
		logger.Error(fence.Check(), "Lease not renewed in time, pausing work")
		if fence.WaitOpen(ctx) != nil {
			return
		}
		logger.Info("Lease renewed, resuming work")
	}
}

// LeaseUserAgentSuffix ends the user agent of the Lease requests, after the
// controller's own: the audit log tells them from the controller's writes.
const LeaseUserAgentSuffix = "/leader-election"

// LeaseClient is the client of the Lease requests: a client and a rate
// limiter of their own, so that a renewal is never held back behind the
// controller's requests, should -kube-api-qps limit those. The limiter is
// client-go's default, 5 per second, burst 10, for a leader's request or two
// per retry period; a sharded replica renews up to leases Leases per retry
// period besides its list, and gets twice that as its burst and per retry
// period, so that its renewals never queue behind one another.
//
// Each request is bounded by the renew deadline: none waits longer than
// client-go's elector would for a renewal, which its renew loop bounds the
// same way, and a standby's attempt to take the Lease, which nothing else
// bounds, cannot hang on an API server that does not answer. A renewal that
// the API server is slow to answer is still a renewal: were every request
// bounded by the retry period, as it once was, a loaded API server would
// take Leases away from leaders and shard holders that could have kept them.
// What must be shorter is bounded where it is known: a leader's requests by
// its Lease's expiry (fencedLock), a shard's renewal by what is left of its
// renew deadline (replica.go).
func LeaseClient(kubeCfg *rest.Config, election Config, leases int) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(kubeCfg)
	cfg.UserAgent = kubeCfg.UserAgent + LeaseUserAgentSuffix // sample-controller/<identity>/leader-election
	perPeriod := 2 * (leases + 2)
	cfg.QPS = max(rest.DefaultQPS, float32(perPeriod)/float32(election.RetryPeriod.Seconds()))
	cfg.Burst, cfg.RateLimiter = max(rest.DefaultBurst, perPeriod), nil
	cfg.Timeout = election.RenewDeadline
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building leader election clientset: %w", err)
	}
	return client, nil
}
