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
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // adds -logging-format=json
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/certauthority"
	"github.com/kube-samples/sample-controller/pkg/clientconfig"
	"github.com/kube-samples/sample-controller/pkg/conversionwebhook"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/eventrecorder"
	"github.com/kube-samples/sample-controller/pkg/foocache"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/pkg/replicas"
	"github.com/kube-samples/sample-controller/pkg/serving"
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

// run builds the clients, the informers and the controller, and runs them:
// upstream's main, with the controller built by newController, once for every
// Foo or once per shard this replica holds (pkg/replicas).
func run(ctx context.Context, o *options.Options) error {
	cfg, err := clientconfig.Load(o.Kubeconfig, o.MasterURL)
	if err != nil {
		return fmt.Errorf("loading client configuration: %w", err)
	}
	if o.LeaderElection.Identity, err = replicas.NewIdentity(); err != nil {
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

	// How the replicas share the Foos: one leads, or each holds shards. Sharded, the shards a replica holds share
	// its room for events waiting to be written, each bringing its share.
	var waitingEvents *eventrecorder.WaitingEvents
	if o.Shards > 1 {
		waitingEvents = eventrecorder.NewWaitingEvents()
	}
	work, err := replicas.New(ctx, o.LeaderElection, o.Shards, o.Workers, o.Namespace, kubeCfg,
		func(ctx context.Context, scope replicas.Scope) (*Controller, error) {
			return newController(ctx, o, cfg, kubeCfg, scope, waitingEvents)
		})
	if err != nil {
		return err
	}
	legacyregistry.CustomMustRegister(
		metrics.NewFooReadinessCollector(func(selector labels.Selector) ([]*samplev1beta1.Foo, error) {
			return cachedFoos(work.Controllers(), selector)
		}),
		metrics.NewOwnedCachedCollector(func() map[string]int { return ownedCached(work.Controllers()) }))

	// The conversion webhook, served by every replica, standbys too, and
	// before the informers start: the API server calls it for every read of
	// a Foo etcd holds in another version, this controller's own list
	// included.
	webhook, err := conversionwebhook.Start(ctx, o.Webhook, cfg, kubeCfg)
	if err != nil {
		return err
	}
	synced, webhookChecks := webhook.Readiness(work.CachesSynced()...)

	// The watchdog fails liveness 20 s past a lease duration without renewal.
	watchdog := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	liveness, readiness := serving.Probes(o.LeaderElection.Enabled, watchdog, synced, webhookChecks...)
	// A metrics certificate signed by the controller's CA, which the webhook keeps and scrapers verify (nil: self-signed).
	metricsCert := certauthority.StartMetricsCertificate(ctx, webhook.CA(), o.Metrics)
	if err := serving.ServeMetrics(ctx, o.Metrics, kubeCfg, metricsCert); err != nil {
		return err
	}
	if err := serving.ServeProbes(ctx, o.ProbeAddr, liveness, readiness); err != nil {
		return err
	}
	return work.Run(ctx, watchdog)
}

// newController builds the clients and informers of the Foos of scope (every
// Foo, or one shard's), and the Controller they feed. Its clients write only
// while the Lease that gives it the work is fresh (scope.Guard); its
// informers cache only the objects it manages, each as the few fields it
// reads (desired.NewOwnedInformers, foocache).
func newController(ctx context.Context, o *options.Options, cfg, kubeCfg *rest.Config, scope replicas.Scope,
	waitingEvents *eventrecorder.WaitingEvents) (*Controller, error) {
	kubeClient, err := kubernetes.NewForConfig(scope.Guard(kubeCfg))
	if err != nil {
		return nil, fmt.Errorf("building kubernetes clientset: %w", err)
	}
	sampleClient, err := clientset.NewForConfig(scope.Guard(cfg))
	if err != nil {
		return nil, fmt.Errorf("building sample clientset: %w", err)
	}
	ownedInformers, err := desired.NewOwnedInformers(desired.Registrations, kubeClient, o.Namespace, o.ResyncPeriod,
		scope.Narrow)
	if err != nil {
		return nil, err
	}
	fooInformer := foocache.NewInformer(sampleClient, o.Namespace, o.ResyncPeriod, scope.Narrow)
	config := Config{Namespace: o.Namespace, Shards: scope.Shards(), WaitingEvents: waitingEvents}
	if scope.Fence != nil { // nil without leader election: nothing to wait for
		config.Fence = scope.Fence
	}
	if scope.Syncs != nil { // nil unsharded: the workers are the bound
		config.Syncs = scope.Syncs
	}
	return NewController(ctx, kubeClient, sampleClient, ownedInformers, fooInformer, config)
}

// cachedFoos are the Foos of selector the controllers cache.
func cachedFoos(controllers []*Controller, selector labels.Selector) ([]*samplev1beta1.Foo, error) {
	var foos []*samplev1beta1.Foo
	for _, c := range controllers {
		cached, err := c.foosLister.List(selector)
		if err != nil {
			return nil, err
		}
		foos = append(foos, cached...)
	}
	return foos, nil
}

// ownedCached counts the objects of each kind a Foo owns the controllers cache, by resource.
func ownedCached(controllers []*Controller) map[string]int {
	counts := map[string]int{}
	for _, c := range controllers {
		for _, objects := range c.ownedObjects {
			counts[objects.GroupResource().Resource] += len(objects.indexer.ListKeys())
		}
	}
	return counts
}
