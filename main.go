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
// (samplecontroller.k8s.io/v1alpha1) with the Deployments they ask for.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/util/flowcontrol"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // adds -logging-format=json
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/contract"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions"
	"github.com/kube-samples/sample-controller/pkg/leader"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/serving"
	"github.com/kube-samples/sample-controller/pkg/signals"
)

// options holds the command line.
type options struct {
	kubeconfig   string
	masterURL    string
	namespace    string
	workers      int
	resyncPeriod time.Duration
	kubeAPIQPS   float64
	kubeAPIBurst int

	metrics        serving.MetricsOptions
	probeAddr      string
	leaderElection leader.Config
	logging        *logsapi.LoggingConfiguration
}

// addFlags registers the command line on fs. Each flag's help says what it
// does in a sentence or two; docs/operations.md says more. The default of
// -workers comes from the benchmark in docs/performance.md.
func addFlags(fs *flag.FlagSet) *options {
	o := &options{logging: logsapi.NewLoggingConfiguration()}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Default: as kubectl finds one: $KUBECONFIG, else the in-cluster configuration of a pod, else ~/.kube/config.")
	fs.StringVar(&o.masterURL, "master", "", "The address of the Kubernetes API server. Overrides the server of the kubeconfig.")
	fs.StringVar(&o.namespace, "namespace", metav1.NamespaceAll, "Watch Foos (and manage Deployments) in this namespace only. Default: all namespaces.")
	fs.IntVar(&o.workers, "workers", 8, "Number of Foos synced in parallel.")
	fs.DurationVar(&o.resyncPeriod, "resync-period", 10*time.Hour, "How often every Foo is re-checked against its Deployment even without a change; a resync writes only what drifted.")
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", 0, "Opt-in client-side limit: queries per second the controller may send to the API server, all its requests together. 0: no client-side limit; the API server's priority and fairness paces the controller.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", 0, "Burst of queries allowed above -kube-api-qps. 0: twice -kube-api-qps. No effect without -kube-api-qps.")

	m := &o.metrics
	fs.StringVar(&m.BindAddress, "metrics-bind-address", ":8443", "Address to serve Prometheus metrics on at /metrics. 0 disables it.")
	fs.BoolVar(&m.Secure, "metrics-secure", true, "Serve /metrics over HTTPS, only to callers the API server authenticates and authorizes (e.g. bound to the metrics-reader ClusterRole). false serves plain HTTP to anyone: for local runs only.")
	fs.BoolVar(&m.Profiling, "profiling", false, "Also serve Go's pprof profiles under /debug/pprof/ on the metrics server, guarded like /metrics.")
	fs.StringVar(&m.CertFile, "tls-cert-file", "", "PEM certificate of the HTTPS metrics server, reloaded when the file changes. Default: a self-signed certificate generated at start.")
	fs.StringVar(&m.KeyFile, "tls-private-key-file", "", "PEM private key matching -tls-cert-file.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address to serve the /healthz and /readyz probes on. 0 disables it.")

	le := &o.leaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", true, "Elect a leader among replicas through a Lease, so that only one reconciles at a time.")
	fs.StringVar(&le.Namespace, "leader-elect-namespace", leader.DefaultNamespace(), "Namespace of the leader election Lease. Default: the pod's namespace in a cluster, else default.")
	fs.StringVar(&le.Name, "leader-elect-id", samplev1alpha1.ControllerName, "Name of the leader election Lease.")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long standbys wait after the last renewal before they take over a Lease the leader did not release.")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew its Lease before it gives up leadership and exits. Less than the lease duration.")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "How often replicas try to acquire or renew the Lease.")

	// klog's flags (-v, -vmodule, -log_file, ...). -v and -vmodule are
	// registered by the logging configuration below, which also offers
	// -logging-format=json; the rest come straight from klog.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	klogFlags.VisitAll(func(f *flag.Flag) {
		if f.Name != "v" && f.Name != "vmodule" {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	})
	logsapi.AddGoFlags(o.logging, fs)
	return o
}

func main() {
	o := addFlags(flag.CommandLine)
	flag.Parse()
	if err := logsapi.ValidateAndApply(o.logging, nil); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}

	// The first SIGINT or SIGTERM starts a graceful shutdown; a second one
	// exits at once.
	ctx := signals.SetupSignalHandler()
	if err := run(ctx, o); err != nil {
		klog.Background().Error(err, "Exiting")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.Flush()
}

// run builds the clients, informers and controller and runs them until ctx
// ends.
func run(ctx context.Context, o *options) error {
	cfg, err := loadClientConfig(o.kubeconfig, o.masterURL)
	if err != nil {
		return fmt.Errorf("loading client configuration: %w", err)
	}
	identity, err := leader.NewIdentity()
	if err != nil {
		return err
	}
	o.leaderElection.Identity = identity
	cfg, kubeCfg := clientConfigs(cfg, o, identity)

	// The controller's own clients write only while this replica's Lease
	// is fresh (pkg/leader/fence.go); the Lease client and the metrics
	// server's reviews are not the controller's writes and go unfenced.
	controllerCfg, controllerKubeCfg := cfg, kubeCfg
	fence := leader.NewFence(o.leaderElection)
	if o.leaderElection.Enabled {
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

	// Watch only the Deployments this controller manages, so memory does not
	// grow with the cluster's other Deployments, in an informer of the
	// controller's own that caches each as the few fields it reads
	// (pkg/contract). NewController makes the Foo cache keep only the fields
	// the controller reads, too.
	deploymentInformer, err := contract.NewDeploymentInformer(kubeClient, o.namespace, o.resyncPeriod)
	if err != nil {
		return err
	}
	sampleInformerFactory := informers.NewSharedInformerFactoryWithOptions(sampleClient, o.resyncPeriod,
		informers.WithNamespace(o.namespace))

	controller, err := NewController(ctx, kubeClient, sampleClient, deploymentInformer,
		sampleInformerFactory.Samplecontroller().V1alpha1().Foos())
	if err != nil {
		return err
	}
	controller.namespace = o.namespace
	if o.leaderElection.Enabled {
		controller.fence = fence
	}
	legacyregistry.CustomMustRegister(metrics.NewFooReadinessCollector(controller.foosLister))

	// Liveness fails when a leader stops renewing its Lease (for 20 s past
	// the lease duration); readiness waits for the caches, so a standby is
	// ready as soon as it could take over.
	watchdog := leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	liveness := []serving.Check{{Name: "ping", Check: func(*http.Request) error { return nil }}}
	if o.leaderElection.Enabled {
		liveness = append(liveness, serving.Check{Name: "leaderElection", Check: watchdog.Check})
	}
	readiness := []serving.Check{{Name: "informer-sync", Check: func(*http.Request) error {
		if !controller.HasSynced() {
			return fmt.Errorf("informer caches not synced")
		}
		return nil
	}}}
	if err := serving.ServeMetrics(ctx, o.metrics, kubeCfg); err != nil {
		return err
	}
	if err := serving.ServeProbes(ctx, o.probeAddr, liveness, readiness); err != nil {
		return err
	}

	// Start the informers now, leader or not: a standby with warm caches
	// takes over in moments. Whatever makes run return, cancel first, so
	// that the Shutdowns (deferred earlier, so run later) find the
	// informers stopping.
	ctx, cancel := context.WithCancel(ctx)
	var deploymentInformerDone sync.WaitGroup
	deploymentInformerDone.Go(func() { deploymentInformer.RunWithContext(ctx) })
	sampleInformerFactory.Start(ctx.Done())
	defer deploymentInformerDone.Wait()
	defer sampleInformerFactory.Shutdown()
	defer cancel()

	runController := func(ctx context.Context) error { return controller.Run(ctx, o.workers) }
	if !o.leaderElection.Enabled {
		return runController(ctx)
	}
	return leader.Run(ctx, o.leaderElection, kubeCfg, watchdog, fence, runController)
}

// loadClientConfig finds the cluster the way kubectl and controller-runtime
// do: the -kubeconfig flag, else the files in $KUBECONFIG, else the pod's
// in-cluster configuration, else ~/.kube/config. -master overrides the
// server of whichever kubeconfig is used.
func loadClientConfig(kubeconfig, masterURL string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules() // $KUBECONFIG, else ~/.kube/config
	rules.ExplicitPath = kubeconfig
	if kubeconfig == "" && masterURL == "" && os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	overrides := &clientcmd.ConfigOverrides{ClusterInfo: clientcmdapi.Cluster{Server: masterURL}}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
}

// clientConfigs returns the client configurations for Foos and for built-in
// types, both with the user agent sample-controller/<identity>, which tells
// in the API server's audit log which replica sent a request. The second
// also speaks protobuf, cheaper to encode and decode than JSON (custom
// resources only speak JSON).
//
// By default neither has a client-side rate limiter: the API server's
// priority and fairness (on since Kubernetes 1.20, so on every version this
// controller supports) queues or refuses what it cannot take, and the
// controller retries refused requests with backoff. A fixed client-side
// budget would only cap a cold start on a control plane that could take
// more. With -kube-api-qps the two share one token bucket, so that the
// limit bounds every request the controller makes (Foos, Deployments,
// events, discovery) together. The leader election and metrics-auth clients
// are built apart from these configurations, never behind that bucket
// (pkg/leader, pkg/serving).
func clientConfigs(base *rest.Config, o *options, identity string) (sample, kube *rest.Config) {
	sample = rest.CopyConfig(base)
	sample.QPS, sample.Burst, sample.RateLimiter = clientRateLimit(o.kubeAPIQPS, o.kubeAPIBurst)
	sample.UserAgent = samplev1alpha1.ControllerName + "/" + identity
	kube = rest.CopyConfig(sample)
	kube.ContentType = "application/vnd.kubernetes.protobuf"
	kube.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return sample, kube
}

// clientRateLimit turns -kube-api-qps and -kube-api-burst into a rest.Config's
// QPS, Burst and RateLimiter. No limit must be spelt as a negative QPS and a
// nil RateLimiter: client-go reads QPS 0 as its default of 5 per second.
func clientRateLimit(qps float64, burst int) (float32, int, flowcontrol.RateLimiter) {
	if qps <= 0 {
		return -1, 0, nil
	}
	if burst <= 0 {
		burst = int(math.Ceil(2 * qps))
	}
	return float32(qps), burst, flowcontrol.NewTokenBucketRateLimiter(float32(qps), burst)
}
