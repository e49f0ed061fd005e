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

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// leaderElectionConfig holds the -leader-elect* flags.
type leaderElectionConfig struct {
	enabled       bool
	namespace     string
	id            string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
}

// serviceAccountNamespaceFile holds the pod's namespace in a cluster.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultLeaderElectionNamespace is the pod's own namespace when running in a
// cluster, else "default".
func defaultLeaderElectionNamespace() string {
	if data, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return "default"
}

// runAsLeader runs run(ctx) only while this process holds the Lease, so that
// of several replicas exactly one reconciles while the others keep their
// caches warm, ready to take over.
//
// On shutdown (ctx cancelled) run is allowed to finish before the Lease is
// released, so two leaders never work at once, and the release lets a
// standby take over at its next retry instead of waiting for the Lease to
// expire. A leader that fails to renew its Lease exits at once: another
// replica may already be leading.
func runAsLeader(ctx context.Context, cfg leaderElectionConfig, client kubernetes.Interface, watchdog *leaderelection.HealthzAdaptor, run func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	hostname, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("leader election identity: %w", err)
	}
	identity := hostname + "_" + string(uuid.NewUUID())

	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, cfg.namespace, cfg.id,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return err
	}

	// The elector runs on its own context, cancelled only once run has
	// returned (or, before we lead, as soon as shutdown begins).
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	var runErr error
	finished := make(chan struct{})

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            cfg.id,
		LeaseDuration:   cfg.leaseDuration,
		RenewDeadline:   cfg.renewDeadline,
		RetryPeriod:     cfg.retryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				logger.Info("Became leader, starting work", "lease", klog.KRef(cfg.namespace, cfg.id), "identity", identity)
				runErr = run(ctx)
				close(finished)
				stopElector()
			},
			OnStoppedLeading: func() {
				select {
				case <-finished:
					logger.Info("Released leadership", "lease", klog.KRef(cfg.namespace, cfg.id))
				default:
					if ctx.Err() == nil {
						logger.Error(nil, "Lost leadership, exiting", "lease", klog.KRef(cfg.namespace, cfg.id))
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

	logger.Info("Waiting to become leader", "lease", klog.KRef(cfg.namespace, cfg.id), "identity", identity)
	elector.Run(electorCtx)
	select {
	case <-finished:
		return runErr
	default:
		return nil // never led: there was nothing to run
	}
}
