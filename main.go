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

// Command sample-controller reconciles Foo custom resources (samplecontroller.k8s.io/v1beta1) with the Deployments
// they ask for.
package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	"github.com/kube-samples/sample-controller/pkg/clientconfig"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/endpoints"
	"github.com/kube-samples/sample-controller/pkg/eventrecorder"
	"github.com/kube-samples/sample-controller/pkg/foocache"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/pkg/replicas"
	"github.com/kube-samples/sample-controller/pkg/signals"
)

func main() {
	o := options.Parse()
	// SIGINT or SIGTERM shuts down gracefully; a second one exits at once.
	ctx := signals.SetupSignalHandler()
	if err := run(ctx, o); err != nil {
		klog.Background().Error(err, "Exiting")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.Flush()
}

// run builds the clients, the informers and the controller, and runs them: upstream's main, with the controller built
// by newController, once for every Foo or once per shard this replica holds (pkg/replicas).
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

	// How the replicas share the Foos: one leads, or each holds shards. Sharded, the shards a replica holds share its
	// room for events waiting to be written, each bringing its share.
	var waitingEvents *eventrecorder.WaitingEvents
	if o.Shards > 1 {
		waitingEvents = eventrecorder.NewWaitingEvents()
	}
	work, err := replicas.New(ctx, o.LeaderElection, o.Sharding(), o.Workers, o.Namespace, kubeCfg,
		func(ctx context.Context, scope replicas.Scope) (*Controller, error) {
			return newController(ctx, o, cfg, kubeCfg, scope, waitingEvents)
		})
	if err != nil {
		return err
	}
	legacyregistry.CustomMustRegister(metrics.NewCachesCollectors(work.Controllers)...)

	// The conversion webhook, metrics and probes, served by every replica, standbys too, from now on. Liveness fails
	// 20 s past a lease duration without renewal (the watchdog), or sharded, once the replica's loops stall.
	watchdog := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	if err := endpoints.Start(ctx, o, cfg, kubeCfg, work.CachesSynced(), work.Liveness(watchdog)); err != nil {
		return err
	}
	return work.Run(ctx, watchdog)
}

// newController builds the clients and informers of the Foos of scope (every Foo, or one shard's), and the Controller
// they feed. Its clients write only while the Lease that gives it the work is fresh (scope.Guard); its informers
// cache only the objects it manages, each as the few fields it reads (desired.NewDeploymentInformer, foocache).
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
	deploymentInformer, err := desired.NewDeploymentInformer(kubeClient, o.Namespace, o.ResyncPeriod, scope.Narrow)
	if err != nil {
		return nil, err
	}
	fooInformer := foocache.NewInformer(sampleClient, o.Namespace, o.ResyncPeriod, scope.Narrow)
	config := Config{Namespace: o.Namespace, Admission: scope, Shards: scope.Shards(), WaitingEvents: waitingEvents}
	return NewController(ctx, kubeClient, sampleClient, deploymentInformer, fooInformer, config)
}
