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

// Command sample-controller reconciles Foo custom resources
// (samplecontroller.k8s.io/v1beta1) with the Deployments they ask for.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // adds -logging-format=json
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/clientconfig"
	"github.com/kube-samples/sample-controller/pkg/conversion"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/eventrecorder"
	"github.com/kube-samples/sample-controller/pkg/foocache"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions"
	"github.com/kube-samples/sample-controller/pkg/leader"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/pkg/serving"
	"github.com/kube-samples/sample-controller/pkg/sharding"
	"github.com/kube-samples/sample-controller/pkg/signals"
)

func main() {
	o := options.AddFlags(flag.CommandLine)
	flag.Parse()
	if err := o.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
	if err := logsapi.ValidateAndApply(o.Logging, nil); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}

	// SIGINT or SIGTERM shuts down gracefully; a second one exits at once.
	ctx := signals.SetupSignalHandler()
	if err := run(ctx, o); err != nil {
		klog.Background().Error(err, "Exiting")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.Flush()
}

// run builds the clients, informers and controller, and runs them.
func run(ctx context.Context, o *options.Options) error {
	cfg, err := clientconfig.Load(o.Kubeconfig, o.MasterURL)
	if err != nil {
		return fmt.Errorf("loading client configuration: %w", err)
	}
	if o.LeaderElection.Identity, err = leader.NewIdentity(); err != nil {
		return err
	}
	cfg, kubeCfg := clientconfig.ForController(cfg, o.KubeAPIQPS, o.KubeAPIBurst, o.LeaderElection.Identity)
	sampleClient, err := clientset.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building sample clientset: %w", err)
	}
	if err := apicheck.Check(ctx, sampleClient.Discovery()); err != nil {
		return err
	}

	// One controller of every Foo, run by the leader; or, sharded, one per
	// shard this replica holds.
	newWork := newLeaderWork
	if o.Shards > 1 {
		newWork = newShardedWork
	}
	w, err := newWork(ctx, o, cfg, kubeCfg)
	if err != nil {
		return err
	}
	legacyregistry.CustomMustRegister(metrics.NewFooReadinessCollector(w.listFoos),
		metrics.NewOwnedCachedCollector(w.ownedCached))

	// The conversion webhook, served by every replica, standbys too, and
	// before the informers start: the API server calls it for every read of
	// a Foo etcd holds in another version, this controller's own list
	// included.
	webhook, err := conversion.StartWebhook(ctx, o.Webhook, cfg, kubeCfg)
	if err != nil {
		return err
	}
	synced, webhookChecks := webhook.Readiness(w.synced...)

	// The watchdog fails liveness 20 s past a lease duration without renewal.
	watchdog := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	liveness, readiness := serving.Probes(o.LeaderElection.Enabled, watchdog, synced, webhookChecks...)
	// A metrics certificate signed by the webhook's CA, which scrapers verify (nil: self-signed).
	if err := serving.ServeMetrics(ctx, o.Metrics, kubeCfg, webhook.StartMetricsCA(ctx, o.Metrics)); err != nil {
		return err
	}
	if err := serving.ServeProbes(ctx, o.ProbeAddr, liveness, readiness); err != nil {
		return err
	}
	return w.run(ctx, watchdog)
}

// work is what a replica runs: the informers and controllers, with the
// caches its readiness waits for and the Foos its metrics count.
type work struct {
	synced      []cache.InformerSynced // the Foo cache's first
	listFoos    func(labels.Selector) ([]*samplev1beta1.Foo, error)
	ownedCached func() map[string]int
	run         func(ctx context.Context, watchdog *leaderelection.HealthzAdaptor) error
}

// newLeaderWork is upstream's controller, of every Foo, whose workers run
// while this replica leads (pkg/leader), and whose informers run on every
// replica: a standby with warm caches takes over in moments.
func newLeaderWork(ctx context.Context, o *options.Options, cfg, kubeCfg *rest.Config) (*work, error) {
	// The controller's own clients write only while this replica's Lease is
	// fresh (pkg/leader's Fence); the Lease and metrics clients go unfenced.
	controllerCfg, controllerKubeCfg := cfg, kubeCfg
	fence := leader.NewFence(o.LeaderElection)
	if o.LeaderElection.Enabled {
		controllerCfg, controllerKubeCfg = fence.Guard(cfg), fence.Guard(kubeCfg)
	}
	kubeClient, err := kubernetes.NewForConfig(controllerKubeCfg)
	if err != nil {
		return nil, fmt.Errorf("building kubernetes clientset: %w", err)
	}
	sampleClient, err := clientset.NewForConfig(controllerCfg)
	if err != nil {
		return nil, fmt.Errorf("building sample clientset: %w", err)
	}

	// An informer per kind a Foo owns (desired.Registrations), of only the objects this
	// controller manages, each cached as the few fields it reads (pkg/owned).
	ownedInformers, err := desired.NewOwnedInformers(desired.Registrations, kubeClient, o.Namespace, o.ResyncPeriod,
		nil)
	if err != nil {
		return nil, err
	}
	sampleInformerFactory := informers.NewSharedInformerFactoryWithOptions(sampleClient, o.ResyncPeriod,
		informers.WithNamespace(o.Namespace))

	config := Config{Namespace: o.Namespace}
	if o.LeaderElection.Enabled {
		config.Fence = fence
	}
	fooInformer := sampleInformerFactory.Samplecontroller().V1beta1().Foos()
	controller, err := NewController(ctx, kubeClient, sampleClient, ownedInformers, fooInformer, config)
	if err != nil {
		return nil, err
	}
	run := func(ctx context.Context, watchdog *leaderelection.HealthzAdaptor) error {
		// Start the informers now, leader or not. On return, cancel first, then wait for them.
		ctx, cancel := context.WithCancel(ctx)
		var ownedInformersDone sync.WaitGroup
		for _, ownedInformer := range ownedInformers {
			ownedInformersDone.Go(func() { ownedInformer.Informer.RunWithContext(ctx) })
		}
		sampleInformerFactory.Start(ctx.Done())
		defer ownedInformersDone.Wait()
		defer sampleInformerFactory.Shutdown()
		defer cancel()

		if !o.LeaderElection.Enabled {
			return controller.Run(ctx, o.Workers)
		}
		leaseClient, err := leader.LeaseClient(kubeCfg, o.LeaderElection, 1)
		if err != nil {
			return err
		}
		return leader.Run(ctx, o.LeaderElection, kubeCfg, watchdog, fence, func(ctx context.Context) error {
			// After a change from several shards to one, the old shard holders first.
			leases := leaseClient.CoordinationV1().Leases(o.LeaderElection.Namespace)
			if err := sharding.WaitUnsharded(ctx, o.LeaderElection, leases); err != nil {
				return nil // shutdown began
			}
			return controller.Run(ctx, o.Workers)
		})
	}
	return &work{synced: controller.cachesSynced(), listFoos: controller.foosLister.List,
		ownedCached: controller.ownedCached, run: run}, nil
}

// newShardedWork runs, for each shard this replica holds (pkg/sharding), the
// same controller as newLeaderWork's, whose informers list and watch that
// shard's objects alone, and whose clients write only while that shard's
// Lease is fresh: every replica reconciles its share.
func newShardedWork(ctx context.Context, o *options.Options, cfg, kubeCfg *rest.Config) (*work, error) {
	logger := klog.FromContext(ctx)
	// A member Lease, and a Lease per shard held: at most all of them.
	leaseClient, err := leader.LeaseClient(kubeCfg, o.LeaderElection, 1+o.Shards)
	if err != nil {
		return nil, err
	}
	kubeClient, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return nil, fmt.Errorf("building kubernetes clientset: %w", err)
	}
	// Whether the API server filters the shards, or this replica does: the same caches either way.
	mode, err := sharding.DetectMode(ctx, func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return kubeClient.AppsV1().Deployments(o.Namespace).List(ctx, opts)
	}, sharding.Shard{Index: 0, Count: o.Shards})
	if err != nil {
		return nil, err
	}
	metrics.ShardFiltering.WithLabelValues(string(mode)).Set(1)
	logger.Info("Shards filtered", "by", mode)

	// The replica's -workers syncs at once, and its room for events waiting to be written (each shard held brings
	// its share), shared by the shards it holds.
	syncs, eventBacklog := sharding.NewSyncs(o.Workers), eventrecorder.NewBacklog()
	newController := func(shard sharding.Shard, fence *leader.Fence) (sharding.Controller, error) {
		kubeClient, err := kubernetes.NewForConfig(fence.Guard(kubeCfg))
		if err != nil {
			return nil, err
		}
		sampleClient, err := clientset.NewForConfig(fence.Guard(cfg))
		if err != nil {
			return nil, err
		}
		// The informers' list options carry the shard's selector (Shard.Narrow).
		ownedInformers, err := desired.NewOwnedInformers(desired.Registrations, kubeClient, o.Namespace,
			o.ResyncPeriod, shard.Narrow)
		if err != nil {
			return nil, err
		}
		fooInformer := foocache.NewNarrowedInformer(sampleClient, o.Namespace, o.ResyncPeriod, shard.Narrow)
		ctx := klog.NewContext(ctx, logger.WithValues("shard", shard.String()))
		controller, err := NewController(ctx, kubeClient, sampleClient, ownedInformers, fooInformer,
			Config{Namespace: o.Namespace, Fence: fence, Syncs: syncs, Shards: o.Shards, EventBacklog: eventBacklog})
		if err != nil {
			return nil, err
		}
		return &shardController{controller, ownedInformers, fooInformer.Informer(), o.Workers}, nil
	}
	replica := sharding.NewReplica(o.Shards, o.LeaderElection,
		leaseClient.CoordinationV1().Leases(o.LeaderElection.Namespace), newController)
	listFoos := func(selector labels.Selector) ([]*samplev1beta1.Foo, error) {
		var foos []*samplev1beta1.Foo
		for _, held := range replica.Held() {
			cached, err := held.(*shardController).foosLister.List(selector)
			if err != nil {
				return nil, err
			}
			foos = append(foos, cached...)
		}
		return foos, nil
	}
	ownedCached := func() map[string]int {
		counts := map[string]int{}
		for _, held := range replica.Held() {
			for resource, n := range held.(*shardController).ownedCached() {
				counts[resource] += n
			}
		}
		return counts
	}
	run := func(ctx context.Context, _ *leaderelection.HealthzAdaptor) error {
		replica.Run(ctx)
		return nil
	}
	return &work{synced: []cache.InformerSynced{replica.HasSynced}, listFoos: listFoos, ownedCached: ownedCached,
		run: run}, nil
}

// shardController is the controller of one shard and its informers.
type shardController struct {
	*Controller
	ownedInformers []desired.OwnedInformer
	fooInformer    cache.SharedIndexInformer
	workers        int
}

// Run starts the informers, and runs the controller, which waits for them to
// sync, until ctx ends; then it waits for the informers to stop.
func (s *shardController) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var informersDone sync.WaitGroup
	defer informersDone.Wait()
	defer cancel()
	for _, ownedInformer := range s.ownedInformers {
		informersDone.Go(func() { ownedInformer.Informer.RunWithContext(ctx) })
	}
	informersDone.Go(func() { s.fooInformer.RunWithContext(ctx) })
	return s.Controller.Run(ctx, s.workers)
}
