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

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // adds -logging-format=json
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	"github.com/kube-samples/sample-controller/pkg/clientconfig"
	"github.com/kube-samples/sample-controller/pkg/conversion"
	"github.com/kube-samples/sample-controller/pkg/desired"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions"
	"github.com/kube-samples/sample-controller/pkg/leader"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/options"
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

	// The controller's own clients write only while this replica's Lease is
	// fresh (pkg/leader's Fence); the Lease and metrics clients go unfenced.
	controllerCfg, controllerKubeCfg := cfg, kubeCfg
	fence := leader.NewFence(o.LeaderElection)
	if o.LeaderElection.Enabled {
		controllerCfg, controllerKubeCfg = fence.Guard(cfg), fence.Guard(kubeCfg)
	}
	kubeClient, err := kubernetes.NewForConfig(controllerKubeCfg)
	if err != nil {
		return fmt.Errorf("building kubernetes clientset: %w", err)
	}
	sampleClient, err := clientset.NewForConfig(controllerCfg)
	if err != nil {
		return fmt.Errorf("building sample clientset: %w", err)
	}

	if err := apicheck.Check(ctx, sampleClient.Discovery()); err != nil {
		return err
	}

	// An informer per kind a Foo owns (desired.Registrations), of only the objects this
	// controller manages, each cached as the few fields it reads (pkg/owned).
	ownedInformers, err := desired.NewOwnedInformers(desired.Registrations, kubeClient, o.Namespace, o.ResyncPeriod)
	if err != nil {
		return err
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
		return err
	}
	legacyregistry.CustomMustRegister(metrics.NewFooReadinessCollector(controller.foosLister))

	// The conversion webhook, served by every replica, standbys too, and
	// before the informers start: the API server calls it for every read of
	// a Foo etcd holds in another version, this controller's own list
	// included.
	webhook, err := conversion.StartWebhook(ctx, o.Webhook, cfg, kubeCfg)
	if err != nil {
		return err
	}
	synced, webhookChecks := webhook.Readiness(controller.cachesSynced()...)

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

	// Start the informers now, leader or not: a standby with warm caches
	// takes over in moments. On return, cancel first, then wait for them.
	ctx, cancel := context.WithCancel(ctx)
	var ownedInformersDone sync.WaitGroup
	for _, ownedInformer := range ownedInformers {
		ownedInformersDone.Go(func() { ownedInformer.Informer.RunWithContext(ctx) })
	}
	sampleInformerFactory.Start(ctx.Done())
	defer ownedInformersDone.Wait()
	defer sampleInformerFactory.Shutdown()
	defer cancel()

	runController := func(ctx context.Context) error { return controller.Run(ctx, o.Workers) }
	if !o.LeaderElection.Enabled {
		return runController(ctx)
	}
	return leader.Run(ctx, o.LeaderElection, kubeCfg, watchdog, fence, runController)
}
