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

// Package replicas is how the replicas of the controller share the Foos:
// one leads and reconciles them all while the others stand by with warm
// caches (leader election, leader.go), or each reconciles the shards it
// holds (-shards, shard.go and replica.go). Either way a replica writes only
// while the Lease that gives it the work is fresh (its Fence, fence.go), and
// every Lease the controller takes or renews is this package's. The
// repository root calls New once, whichever way, with the function that
// builds its controller for a Scope: every Foo, or one shard's.
package replicas

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/klog/v2"
)

// Controller is the controller of the repository root, of the Foos of one
// Scope, with the informers it reads.
type Controller interface {
	// RunInformers runs its informers until ctx ends, and returns once they stopped.
	RunInformers(ctx context.Context)
	// Run waits for the caches to sync, then reconciles with workers workers
	// until ctx ends; then the workers finish the Foo in hand, and it returns.
	Run(ctx context.Context, workers int) error
	// CachesSynced are its informers' HasSynced, the Foo cache's first: it
	// writes nothing before they all are.
	CachesSynced() []cache.InformerSynced
}

// Scope is the Foos a Controller reconciles, and what holds back its writes.
type Scope struct {
	// Shard is the shard whose Foos it reconciles; nil for every Foo.
	Shard *Shard
	// Narrow narrows its informers' lists and watches to the shard's objects
	// (Shard.Narrow); nil for every object.
	Narrow func(*cache.ListWatch) *cache.ListWatch
	// Fence is the write fence of the Lease that gives it the work: its
	// clients are guarded by it (Guard), and its workers wait at it. Nil
	// without leader election: nothing to wait for.
	Fence *Fence
	// Syncs, when sharded, is the replica's room for syncs at once, which the
	// Controllers of the shards it holds share. Nil unsharded: the workers
	// are the bound.
	Syncs *Syncs
}

// Guard returns cfg for the Controller's clients: one whose writes the API
// server gets only while the fence is open, or cfg itself without a fence.
func (s Scope) Guard(cfg *rest.Config) *rest.Config {
	if s.Fence == nil {
		return cfg
	}
	return s.Fence.Guard(cfg)
}

// Shards is how many shards the Foos are split into, one reconciled by the
// Controller; 0 unsharded.
func (s Scope) Shards() int {
	if s.Shard == nil {
		return 0
	}
	return s.Shard.Count
}

// Admit waits until a worker of the Controller may sync: the fence open
// (its Lease fresh), then room among the replica's syncs. It returns what
// gives the room back once the sync ends, or ctx's error if it ends first.
func (s Scope) Admit(ctx context.Context) (release func(), err error) {
	if s.Fence != nil {
		if err := s.Fence.WaitOpen(ctx); err != nil {
			return nil, err
		}
	}
	if s.Syncs == nil {
		return func() {}, nil
	}
	if err := s.Syncs.Acquire(ctx); err != nil {
		return nil, err
	}
	return s.Syncs.Release, nil
}

// Work is this replica's part of the Foos and the Controllers that
// reconcile it: the one of every Foo, which runs while this replica leads
// (its informers run all along, a standby's caches warm), or one per shard
// held.
type Work[C Controller] struct {
	cfg     Config
	kubeCfg *rest.Config
	workers int

	// Unsharded: the one Controller, and the leader's fence.
	leader C
	fence  *Fence
	// Sharded: the shards this replica holds, each with its Controller.
	replica *Replica[C]
}

// New returns this replica's Work: with sharding.Shards of 1, one Controller
// of every Foo, built now and run while this replica leads (cfg.Enabled;
// else at once); with more, a Controller per shard this replica holds, built
// as it takes the shard. Each Controller runs workers workers; newController
// builds it for its Scope. kubeCfg is the controller's: the Leases get a
// client of their own from it (LeaseClient), and a sharded replica lists a
// Deployment of namespace with it, to learn who filters the shards
// (DetectMode), and, splitting by weight, the Foos of namespace.
func New[C Controller](ctx context.Context, cfg Config, sharding Sharding, workers int, namespace string,
	kubeCfg *rest.Config, newController func(context.Context, Scope) (C, error),
) (*Work[C], error) {
	w := &Work[C]{cfg: cfg, kubeCfg: kubeCfg, workers: workers}
	shards := sharding.Shards
	if shards <= 1 {
		scope := Scope{}
		if cfg.Enabled {
			w.fence = NewFence(cfg)
			scope.Fence = w.fence
		}
		var err error
		w.leader, err = newController(ctx, scope)
		return w, err
	}

	// A member Lease, and a Lease per shard held: at most all of them.
	leaseClient, err := LeaseClient(kubeCfg, cfg, 1+shards)
	if err != nil {
		return nil, err
	}
	kubeClient, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return nil, fmt.Errorf("building kubernetes clientset: %w", err)
	}
	// Whether the API server filters the shards, or this replica does: the
	// same caches either way. Asked again at each shard taken, so that the
	// metric follows the API servers' feature gate turned on or off.
	detect := func(ctx context.Context, shard Shard) (Mode, error) {
		return DetectMode(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kubeClient.AppsV1().Deployments(namespace).List(ctx, opts)
		}, shard)
	}
	mode, err := detect(ctx, Shard{Index: 0, Count: shards})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Shards filtered", "by", mode)
	if mode == ModeClient {
		klog.FromContext(ctx).Info("The API server sends every object to each shard's list and watch: " +
			"give -shards the number of replicas, one shard each (docs/operations.md, Sharding)")
	}
	w.replica = NewReplica(shards, workers, cfg, leaseClient.CoordinationV1().Leases(cfg.Namespace), newController)
	w.replica.detect = detect
	w.replica.setMode(ctx, mode)
	if sharding.Boundaries == BoundariesWeighted {
		if w.replica.weigh, err = countByNamespace(kubeCfg, sharding.Weighed, namespace); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Controllers are the Controllers of this replica's part of the Foos: the
// one of every Foo, standing by or leading; or those of the shards it holds.
func (w *Work[C]) Controllers() []C {
	if w.replica != nil {
		return w.replica.Held()
	}
	return []C{w.leader}
}

// CachesSynced are what this replica's readiness waits for, the Foo cache's
// first: unsharded, the Controller's informers; sharded, one that every
// shard held has synced (Replica.HasSynced).
func (w *Work[C]) CachesSynced() []cache.InformerSynced {
	if w.replica != nil {
		return []cache.InformerSynced{w.replica.HasSynced}
	}
	return w.leader.CachesSynced()
}

// Liveness is what /healthz asks of this replica's part: unsharded,
// watchdog, client-go's, which fails a leader whose renewals stopped;
// sharded, whether its loops go on (Replica.Check), which the watchdog,
// told of no elector, cannot see.
func (w *Work[C]) Liveness(watchdog *leaderelection.HealthzAdaptor) interface{ Check(*http.Request) error } {
	if w.replica != nil {
		return w.replica
	}
	return watchdog
}

// Run does this replica's part until ctx ends. Unsharded, it runs the
// Controller's informers at once and its workers while this replica leads,
// the watchdog told of each renewal; sharded, it takes part in sharding
// (Replica.Run).
func (w *Work[C]) Run(ctx context.Context, watchdog *leaderelection.HealthzAdaptor) error {
	if w.replica != nil {
		w.replica.Run(ctx)
		return nil
	}
	// The informers run leader or not. On return, cancel them first, then wait for them.
	ctx, cancel := context.WithCancel(ctx)
	var informers sync.WaitGroup
	defer informers.Wait()
	defer cancel()
	informers.Go(func() { w.leader.RunInformers(ctx) })

	if !w.cfg.Enabled {
		return w.leader.Run(ctx, w.workers)
	}
	leaseClient, err := LeaseClient(w.kubeCfg, w.cfg, 1)
	if err != nil {
		return err
	}
	return lead(ctx, w.cfg, w.kubeCfg, watchdog, w.fence, func(ctx context.Context) error {
		// After a change from several shards to one, the old shard holders first.
		if err := WaitUnsharded(ctx, w.cfg, leaseClient.CoordinationV1().Leases(w.cfg.Namespace)); err != nil {
			return nil // shutdown began
		}
		return w.leader.Run(ctx, w.workers)
	})
}

// runWithInformers runs c's informers and c until ctx ends; then it waits for
// the informers to stop.
func runWithInformers(ctx context.Context, c Controller, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	var informers sync.WaitGroup
	defer informers.Wait()
	defer cancel()
	informers.Go(func() { c.RunInformers(ctx) })
	return c.Run(ctx, workers)
}

// hasSynced reports whether every cache of c holds a full list.
func hasSynced(c Controller) bool {
	return !slices.ContainsFunc(c.CachesSynced(), func(synced cache.InformerSynced) bool { return !synced() })
}
