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

// Package options is the controller's command line: each flag with its
// default and a help that says what it does; docs/operations.md says more.
package options

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // adds -logging-format=json
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/certauthority"
	"github.com/kube-samples/sample-controller/pkg/replicas"
	"github.com/kube-samples/sample-controller/pkg/serving"
)

// Options holds the command line.
type Options struct {
	Kubeconfig   string
	MasterURL    string
	Namespace    string
	Workers      int
	ResyncPeriod time.Duration
	KubeAPIQPS   float64
	KubeAPIBurst int
	// Shards is how many shards the Foos are split into (pkg/replicas); 1:
	// unsharded, one leader reconciles them all.
	Shards int
	// ShardBoundaries is where the shards' ranges split: equally, or at the
	// quantiles of the Foos (replicas.Sharding).
	ShardBoundaries string

	Metrics        serving.MetricsOptions
	ProbeAddr      string
	LeaderElection replicas.Config
	Webhook        WebhookOptions
	Logging        *logsapi.LoggingConfiguration
}

// WebhookOptions configure the conversion webhook every replica serves.
type WebhookOptions struct {
	BindAddress string
	// Namespace holds the CA Secret; the Service is named there too.
	Namespace string
	// CASecretName is the Secret holding the CA.
	CASecretName string
	// CAValidity and CertValidity are the lifetimes of a new CA and of a
	// replica's serving certificate; each is renewed after two thirds.
	CAValidity, CertValidity time.Duration
}

// AddFlags registers the command line on fs. Each flag's help says what it
// does in a sentence or two; docs/operations.md says more. The default of
// -workers comes from the benchmark in docs/performance.md.
func AddFlags(fs *flag.FlagSet) *Options {
	o := &Options{Logging: logsapi.NewLoggingConfiguration()}
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "",
		"Path to a kubeconfig. Default: as kubectl finds one: "+
			"$KUBECONFIG, else the in-cluster configuration of a pod, else ~/.kube/config.")
	fs.StringVar(&o.MasterURL, "master", "",
		"The address of the Kubernetes API server. Overrides the server of the kubeconfig.")
	fs.StringVar(&o.Namespace, "namespace", metav1.NamespaceAll,
		"Watch Foos (and manage Deployments) in this namespace only. Default: all namespaces.")
	fs.IntVar(&o.Workers, "workers", 8,
		"Number of Foos synced in parallel by this replica, shared by the shards it holds. At least 1.")
	fs.IntVar(&o.Shards, "shards", 1,
		"Split the Foos into this many shards by a hash of their namespace, held by the replicas through a Lease "+
			"each, so that every replica reconciles its share; the API server filters each replica's lists and "+
			"watches where its ShardedListAndWatch feature gate is on. 1: one leader reconciles every Foo. "+
			"Every replica must be given the same number; see docs/operations.md before changing it.")
	fs.StringVar(&o.ShardBoundaries, "shard-boundaries", replicas.BoundariesEqual,
		"Where the shards' ranges of the namespace hash split: "+replicas.BoundariesEqual+", into equal ranges; or "+
			replicas.BoundariesWeighted+", at the quantiles of the namespaces holding Foos, weighted by their "+
			"Foos, which the holder of shard 0 weighs every few minutes and splits anew when the fullest shard "+
			"holds a quarter more than its part. Used while every replica of the same -shards is told "+
			replicas.BoundariesWeighted+"; see docs/operations.md.")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", 10*time.Hour,
		"How often every Foo is re-checked against its Deployment even without a change; "+
			"a resync writes only what drifted. At least 1s.")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", 0,
		"Opt-in client-side limit: queries per second the controller may send to the API server, "+
			"all its requests together. "+
			"0: no client-side limit; the API server's priority and fairness paces the controller.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", 0,
		"Burst of queries allowed above -kube-api-qps. 0: twice -kube-api-qps. No effect without -kube-api-qps.")

	m := &o.Metrics
	fs.StringVar(&m.BindAddress, "metrics-bind-address", ":8443",
		"Address to serve Prometheus metrics on at /metrics. 0 disables it.")
	fs.BoolVar(&m.Secure, "metrics-secure", true,
		"Serve /metrics over HTTPS, only to callers the API server authenticates and authorizes "+
			"(e.g. bound to the metrics-reader ClusterRole). false serves plain HTTP to anyone: for local runs only.")
	fs.BoolVar(&m.Profiling, "profiling", false,
		"Also serve Go's pprof profiles under /debug/pprof/ on the metrics server, guarded like /metrics.")
	fs.StringVar(&m.CertFile, "tls-cert-file", "",
		"PEM certificate of the HTTPS metrics server, reloaded when the file changes. "+
			"Default: one signed by the webhook's CA for the metrics Service, whose bundle the replicas publish in "+
			"ConfigMap "+samplecontroller.MetricsCAConfigMapName+"; self-signed until then, and without the webhook.")
	fs.StringVar(&m.KeyFile, "tls-private-key-file", "", "PEM private key matching -tls-cert-file.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081",
		"Address to serve the /healthz and /readyz probes on. 0 disables it.")

	w := &o.Webhook
	fs.StringVar(&w.BindAddress, "webhook-bind-address", ":9443",
		"Address to serve the Foo CRD's conversion webhook on, over HTTPS, from every replica. "+
			"The API server calls it to read or write a Foo in a version other than the stored one. "+
			"0 disables it.")
	fs.StringVar(&w.Namespace, "webhook-namespace", replicas.DefaultNamespace(),
		"Namespace of the webhook's CA Secret and Service. "+
			"Default: the pod's namespace in a cluster, else default.")
	fs.StringVar(&w.CASecretName, "webhook-ca-secret", samplecontroller.WebhookCASecretName,
		"Name of the Secret holding the CA the webhook's serving certificates are signed by, "+
			"created by the first replica that finds none. The CRD's caBundle is kept to it.")
	fs.DurationVar(&w.CAValidity, "webhook-ca-validity", certauthority.DefaultCAValidity,
		"Lifetime of a new webhook CA. After two thirds of it a replica makes the next CA; "+
			"the CRD trusts both until the old one expires, so no call fails while replicas move over. "+
			"Also the longest a CA in the Secret may live and be trusted. "+
			"The default, a year, is cert-manager's for its own webhook's CA: rotated every eight months "+
			"by the replicas, it bounds how long a leaked CA key is trusted.")
	fs.DurationVar(&w.CertValidity, "webhook-cert-validity", certauthority.DefaultLeafValidity,
		"Lifetime of a replica's webhook serving certificate, signed in memory and renewed after two thirds "+
			"(never beyond its CA's).")

	le := &o.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", true,
		"Elect a leader among replicas through a Lease, so that only one reconciles at a time.")
	fs.StringVar(&le.Namespace, "leader-elect-namespace", replicas.DefaultNamespace(),
		"Namespace of the leader election Lease. Default: the pod's namespace in a cluster, else default.")
	fs.StringVar(&le.Name, "leader-elect-id", samplecontroller.ControllerName, "Name of the leader election Lease.")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"How long standbys wait after the last renewal before they take over a Lease the leader did not release. "+
			"More than the renew deadline, at most "+MaxLeaseDuration.String()+".")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"How long the leader keeps trying to renew its Lease before it gives up leadership and exits. "+
			"Less than the lease duration, more than 1.2 times the retry period.")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", 2*time.Second,
		"How often replicas try to acquire or renew the Lease. Less than the renew deadline divided by 1.2.")

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
	logsapi.AddGoFlags(o.Logging, fs)
	return o
}

// Parse parses the command line into the controller's options, and applies
// the logging flags. A flag whose value cannot work ends the program here,
// naming what to fix.
func Parse() *Options {
	o := AddFlags(flag.CommandLine)
	flag.Parse()
	err := o.Validate()
	if err == nil {
		err = logsapi.ValidateAndApply(o.Logging, nil)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
	return o
}

// Validate returns an error naming each flag whose value cannot work, so
// that the start ends with what to fix rather than a controller that runs
// and does not do what was asked.
func (o *Options) Validate() error {
	var errs []error
	for _, f := range []struct{ flag, addr string }{
		{"-metrics-bind-address", o.Metrics.BindAddress},
		{"-health-probe-bind-address", o.ProbeAddr},
		{"-webhook-bind-address", o.Webhook.BindAddress},
	} {
		if f.addr == "" {
			errs = append(errs, fmt.Errorf("%s is empty: give an address such as :PORT, or 0 to disable the server",
				f.flag))
		}
	}
	if o.Webhook.BindAddress != "0" {
		for _, f := range []struct {
			flag     string
			validity time.Duration
		}{
			{"-webhook-ca-validity", o.Webhook.CAValidity},
			{"-webhook-cert-validity", o.Webhook.CertValidity},
		} {
			if f.validity < certauthority.MinValidity {
				errs = append(errs, fmt.Errorf("%s is %v: it must be at least %v, so that a renewal, "+
					"begun after two thirds of it, has time to finish", f.flag, f.validity, certauthority.MinValidity))
			}
		}
	}
	if o.Shards < 1 || o.Shards > MaxShards {
		errs = append(errs, fmt.Errorf("-shards is %d: it must be from 1 to %d", o.Shards, MaxShards))
	}
	if o.ShardBoundaries != replicas.BoundariesEqual && o.ShardBoundaries != replicas.BoundariesWeighted {
		errs = append(errs, fmt.Errorf("-shard-boundaries is %q: it must be %s or %s", o.ShardBoundaries,
			replicas.BoundariesEqual, replicas.BoundariesWeighted))
	}
	if o.Shards > 1 && !o.LeaderElection.Enabled {
		errs = append(errs, fmt.Errorf("-shards is %d with -leader-elect=false: the replicas agree on who holds "+
			"each shard through Leases, in -leader-elect-namespace", o.Shards))
	}
	errs = append(errs, o.validatePeriods()...)
	return errors.Join(errs...)
}

// Sharding is how the replicas split the Foos (-shards, -shard-boundaries),
// weighing the Foos of each namespace where they split by weight.
func (o *Options) Sharding() replicas.Sharding {
	return replicas.Sharding{Shards: o.Shards, Boundaries: o.ShardBoundaries,
		Weighed: samplev1beta1.SchemeGroupVersion.WithResource("foos")}
}

// MaxShards bounds -shards: each shard held is a Lease renewed every retry
// period, and lists and watches of its own. The own-leases admission policy
// admits the shard Leases of counts up to it alone, and the Lease quota of
// artifacts/deploy is sized from it.
const MaxShards = 256

// MaxLeaseDuration bounds -leader-elect-lease-duration, and the own-leases
// admission policy bounds to it the duration any Lease the controller's
// ServiceAccount writes may claim, so that a stolen token cannot write one
// that claims 68 years. Above anything a standby should wait for a leader
// that stopped (the defaults: 15s), with room for a leader that rides
// through minutes of an API server's outage (TestControllerSurvivesFaults:
// 5m10s).
const MaxLeaseDuration = 10 * time.Minute

// minResyncPeriod is the shortest resync client-go's shared informers make
// (k8s.io/client-go/tools/cache's minimumResyncPeriod, unexported): a
// shorter period is raised to it, and 0 turns resyncs off, which the flag
// does not offer.
const minResyncPeriod = time.Second

// validatePeriods returns an error for each flag that makes a period of work
// impossible: no worker, a resync client-go would not make as asked, and
// leader election durations that client-go's elector refuses
// (leaderelection.NewLeaderElector) or that let a standby take over before
// the leader gives up. Leader election ones only when it is enabled.
func (o *Options) validatePeriods() []error {
	var errs []error
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("-workers is %d: it must be at least 1, or no Foo is ever synced", o.Workers))
	}
	if o.ResyncPeriod < minResyncPeriod {
		errs = append(errs, fmt.Errorf("-resync-period is %v: it must be at least %v, client-go's shortest resync",
			o.ResyncPeriod, minResyncPeriod))
	}
	le := o.LeaderElection
	if !le.Enabled {
		return errs
	}
	positive := true
	for _, f := range []struct {
		flag string
		d    time.Duration
	}{
		{"-leader-elect-lease-duration", le.LeaseDuration},
		{"-leader-elect-renew-deadline", le.RenewDeadline},
		{"-leader-elect-retry-period", le.RetryPeriod},
	} {
		if f.d <= 0 {
			errs = append(errs, fmt.Errorf("%s is %v: it must be greater than zero", f.flag, f.d))
			positive = false
		}
	}
	if !positive {
		return errs
	}
	if le.LeaseDuration > MaxLeaseDuration {
		errs = append(errs, fmt.Errorf("-leader-elect-lease-duration is %v: it must be at most %v, the longest "+
			"the own-leases admission policy lets the controller's Leases claim", le.LeaseDuration, MaxLeaseDuration))
	}
	if le.RenewDeadline >= le.LeaseDuration {
		errs = append(errs, fmt.Errorf("-leader-elect-renew-deadline is %v: it must be less than "+
			"-leader-elect-lease-duration (%v), so that a leader that cannot renew gives up before a standby takes over",
			le.RenewDeadline, le.LeaseDuration))
	}
	// client-go's condition, in its own arithmetic: renew attempts come
	// every retry period jittered up to JitterFactor times it, and the
	// deadline must leave room for more than one.
	if le.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(le.RetryPeriod)) {
		errs = append(errs, fmt.Errorf("-leader-elect-retry-period is %v: it must be less than "+
			"-leader-elect-renew-deadline (%v) divided by %v (client-go's jitter factor), so that the leader "+
			"tries to renew more than once before it gives up", le.RetryPeriod, le.RenewDeadline, leaderelection.JitterFactor))
	}
	return errs
}
