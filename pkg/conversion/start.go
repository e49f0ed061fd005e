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

package conversion

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/pkg/serving"
	"github.com/kube-samples/sample-controller/pkg/webhookcert"
)

// Webhook is the conversion webhook a replica serves, if any, and what it
// asks of the replica's readiness.
type Webhook struct {
	certs     *webhookcert.Manager // nil: no webhook served
	namespace string               // of the CA Secret and the Services
}

// StartWebhook serves the conversion webhook on o.BindAddress, until ctx
// ends, with a certificate signed by the CA of the Secret o.CASecretName,
// which the Foo CRD's caBundle is kept to trust (pkg/webhookcert); with
// o.BindAddress "0", none. Its writes (the CA Secret, the CRD's caBundle)
// are the same whichever replica makes them: cfg and kubeCfg are clients'
// configurations that go around the write fence.
func StartWebhook(ctx context.Context, o options.WebhookOptions, cfg, kubeCfg *rest.Config) (*Webhook, error) {
	if o.BindAddress == "0" {
		return &Webhook{}, nil
	}
	kubeClient, err := kubernetes.NewForConfig(kubeCfg)
	if err != nil {
		return nil, fmt.Errorf("building the webhook's kubernetes clientset: %w", err)
	}
	dynamicClient, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the webhook's dynamic client: %w", err)
	}
	service := samplecontroller.WebhookServiceName + "." + o.Namespace + ".svc"
	certs := webhookcert.New(kubeClient, dynamicClient, webhookcert.Options{
		Namespace:  o.Namespace,
		SecretName: o.CASecretName,
		CRDName:    samplecontroller.FooCRDName,
		// The Service's name, as the API server calls it, and loopback,
		// where a local API server calls a local controller (make run).
		DNSNames:     []string{service, service + ".cluster.local", "localhost"},
		IPs:          []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		CAValidity:   o.CAValidity,
		LeafValidity: o.CertValidity,
		EventSource:  samplecontroller.ControllerName,
	})
	go func() {
		if err := certs.Run(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "The conversion webhook's certificate manager stopped")
		}
	}()
	if err := serving.ServeWebhook(ctx, o.BindAddress, certs.GetCertificate, Handler()); err != nil {
		return nil, err
	}
	return &Webhook{certs: certs, namespace: o.Namespace}, nil
}

// Readiness is what makes a replica that serves w ready, given its caches'
// HasSynced, the Foo cache's first: synced, whether every cache holds a full
// list, except the Foo cache while its list may wait on this very webhook,
// or no replica would ever be (SelfWait); and checks, a certificate the CRD
// trusts, as the webhook's Service sends the API server's calls to ready
// replicas alone. Without a webhook, the caches alone.
func (w *Webhook) Readiness(caches ...cache.InformerSynced) (synced cache.InformerSynced, checks []serving.Check) {
	fooSynced, others := caches[0], caches[1:]
	if w.certs == nil {
		// No version stored but the one listed: SelfWait waits for every cache.
		return NewSelfWait("", fooSynced, func() []string { return nil }, others...).Synced, nil
	}
	selfWait := NewSelfWait(samplev1beta1.SchemeGroupVersion.Version, fooSynced, w.certs.StoredVersions, others...)
	return selfWait.Synced, []serving.Check{{Name: "webhook-certificate",
		Check: func(*http.Request) error { return w.certs.Ready() }}}
}

// StartMetricsCA publishes the webhook's CA bundle in the ConfigMap
// samplecontroller.MetricsCAConfigMapName beside the CA Secret, and keeps a
// metrics serving certificate signed by that CA for the metrics Service's
// names (webhookcert.MetricsCA), until ctx ends, so that scrapers verify
// the certificate with the bundle. It returns the certificate's getter, nil
// until the first is signed; or nil, leaving the metrics server its
// self-signed certificate, where there is nothing to sign or to sign for:
// no webhook (no CA), no metrics server or plain HTTP, or a certificate
// given in files (-tls-cert-file). It is the webhook's because the CA is:
// the metrics certificate is signed with the CA this Webhook keeps, and
// without a webhook there is none to sign with.
func (w *Webhook) StartMetricsCA(ctx context.Context, m serving.MetricsOptions) func() *tls.Certificate {
	if w.certs == nil || m.BindAddress == "0" || !m.Secure || m.CertFile != "" || m.KeyFile != "" {
		return nil
	}
	service := samplecontroller.MetricsServiceName + "." + w.namespace + ".svc"
	metricsCA := w.certs.NewMetricsCA(webhookcert.MetricsOptions{
		ConfigMapName: samplecontroller.MetricsCAConfigMapName,
		Key:           samplecontroller.MetricsCAKey,
		// The Service's name, which a scraper verifies (server_name), and
		// loopback, for a port-forward or a local run.
		DNSNames: []string{service, service + ".cluster.local", "localhost"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	})
	go func() {
		if err := metricsCA.Run(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "The metrics certificate's manager stopped")
		}
	}()
	return metricsCA.Certificate
}
