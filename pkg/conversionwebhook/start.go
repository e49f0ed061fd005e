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

package conversionwebhook

import (
	"context"
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
	"github.com/kube-samples/sample-controller/pkg/certauthority"
	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/pkg/serving"
)

// Webhook is the conversion webhook a replica serves, if any, and what it
// asks of the replica's readiness.
type Webhook struct {
	certs *certauthority.Manager // nil: no webhook served
}

// Start serves the conversion webhook on o.BindAddress, until ctx ends,
// with a certificate signed by the CA of the Secret o.CASecretName, which
// the Foo CRD's caBundle is kept to trust (pkg/certauthority); with
// o.BindAddress "0", none. Its writes (the CA Secret, the CRD's caBundle)
// are the same whichever replica makes them: cfg and kubeCfg are clients'
// configurations that go around the write fence.
func Start(ctx context.Context, o options.WebhookOptions, cfg, kubeCfg *rest.Config) (*Webhook, error) {
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
	certs := certauthority.New(kubeClient, dynamicClient, certauthority.Options{
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
	return &Webhook{certs: certs}, nil
}

// CA is what keeps the controller's CA for this webhook (the CA Secret, the
// CRD's caBundle, the serving certificate), for the other certificates that
// CA signs: certauthority.StartMetricsCertificate. Nil when no webhook is
// served: without one the controller keeps no CA.
func (w *Webhook) CA() *certauthority.Manager {
	return w.certs
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
