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

// Package endpoints starts what every replica serves, leader and standbys
// alike: the conversion webhook, the metrics (with a certificate the
// webhook's CA signs) and the health probes. Each is its own package's
// (conversionwebhook, certauthority, serving); this is the order they start
// in, and what each needs of the others.
package endpoints

import (
	"context"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-samples/sample-controller/pkg/certauthority"
	"github.com/kube-samples/sample-controller/pkg/conversionwebhook"
	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/pkg/serving"
)

// Start starts the conversion webhook, the metrics server and the probes,
// which run until ctx ends. Readiness waits for cachesSynced (and the
// webhook's own checks); liveness, with leader election, on liveness (replicas.Work.Liveness).
//
// The webhook starts first, before the informers: the API server calls it
// for every read of a Foo etcd holds in another version, this controller's
// own list included.
func Start(ctx context.Context, o *options.Options, cfg, kubeCfg *rest.Config, cachesSynced []cache.InformerSynced,
	liveness serving.Watchdog,
) error {
	webhook, err := conversionwebhook.Start(ctx, o.Webhook, cfg, kubeCfg)
	if err != nil {
		return err
	}
	synced, webhookChecks := webhook.Readiness(cachesSynced...)
	livenessChecks, readiness := serving.Probes(o.LeaderElection.Enabled, liveness, synced, webhookChecks...)
	// A metrics certificate signed by the controller's CA, which the webhook keeps and scrapers verify (nil:
	// self-signed).
	metricsCert := certauthority.StartMetricsCertificate(ctx, webhook.CA(), o.Metrics)
	if err := serving.ServeMetrics(ctx, o.Metrics, kubeCfg, metricsCert); err != nil {
		return err
	}
	return serving.ServeProbes(ctx, o.ProbeAddr, livenessChecks, readiness)
}
