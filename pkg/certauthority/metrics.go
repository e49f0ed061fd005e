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

package certauthority

import (
	"bytes"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/serving"
)

// The metrics server's certificate is the webhook's CA put to a second use,
// so that a scraper can verify what it sends its token to. A MetricsCA,
// run beside the Manager in every replica:
//
//   - copies the CRD's caBundle (the CAs the Manager keeps the API server
//     trusting, which it alone writes) into a ConfigMap, key MetricsOptions.Key:
//     a scraper mounts it (Prometheus' ca_file) or names it (a ServiceMonitor's
//     tlsConfig.ca.configMap). Any replica writes it, and only when it
//     differs, as the caBundle. A CA is published as soon as the caBundle
//     holds it, and dropped when the caBundle drops it;
//   - issues this replica's metrics serving certificate, for the metrics
//     Service's names, from the Secret's signing CA, in memory, never stored.
//     It switches to a new signing CA only once the ConfigMap has held it for
//     metricsSettle, long enough for a ConfigMap mounted in a scraper's pod to
//     be updated by its kubelet; until then it serves the certificate of the
//     previous CA, which the ConfigMap still holds. A certificate whose CA the
//     ConfigMap no longer holds (a CA revoked) is replaced at once.
//
// Its certificate is only ever served by this process, so nothing else
// depends on it: the metrics server serves its self-signed one until this
// has issued one (pkg/serving).

// metricsSettle is how long a new signing CA must have been in the ConfigMap
// before the metrics certificate switches to it: a kubelet updates a mounted
// ConfigMap within its sync period (a minute by default) plus its cache's
// delay, and the Prometheus Operator copies a ConfigMap named in a
// ServiceMonitor into a Secret the kubelet then updates likewise.
const metricsSettle = 3 * time.Minute

// MetricsOptions say where the CA bundle is published and what the metrics
// serving certificate is for.
type MetricsOptions struct {
	// ConfigMapName and Key locate the bundle, in the Manager's namespace.
	ConfigMapName, Key string
	// DNSNames and IPs are the certificate's subject alternative names: the
	// metrics Service's DNS names, which a scraper verifies (its
	// server_name), and loopback.
	DNSNames []string
	IPs      []net.IP
}

// MetricsCA publishes the CA bundle and keeps the metrics serving
// certificate; see above.
type MetricsCA struct {
	m          *Manager
	o          MetricsOptions
	factory    informers.SharedInformerFactory
	configMaps cache.SharedIndexInformer
	queue      workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// served is the metrics certificate, nil until the first is issued;
	// servedBy is the DER of the CA that signed it.
	served   *tls.Certificate
	servedBy []byte
	// nextCA is a signing CA the ConfigMap holds that served is not of yet,
	// and nextCASeen when it was first seen there.
	nextCA     []byte
	nextCASeen time.Time
}

// NewMetricsCA returns a MetricsCA taking the CA and the caBundle from m.
// Nothing happens until Run, which needs m to run too.
func (m *Manager) NewMetricsCA(o MetricsOptions) *MetricsCA {
	factory := informers.NewSharedInformerFactoryWithOptions(m.client, resync,
		informers.WithNamespace(m.o.Namespace), informers.WithTweakListOptions(byName(o.ConfigMapName)))
	queueConfig := workqueue.TypedRateLimitingQueueConfig[string]{Name: "metricsca"}
	if c, ok := m.o.Clock.(clock.WithTicker); ok {
		queueConfig.Clock = c // AddAfter's deadlines on the same clock
	}
	p := &MetricsCA{
		m:          m,
		o:          o,
		factory:    factory,
		configMaps: factory.Core().V1().ConfigMaps().Informer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 5*time.Minute), queueConfig),
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.queue.Add(queueKey) },
		UpdateFunc: func(any, any) { p.queue.Add(queueKey) },
		DeleteFunc: func(any) { p.queue.Add(queueKey) },
	}
	// The CRD and the Secret come from the Manager's own informers: no
	// second watch of either.
	_, _ = p.configMaps.AddEventHandler(handler)
	_, _ = m.crd.AddEventHandler(handler)
	_, _ = m.secrets.AddEventHandler(handler)
	return p
}

// Run reconciles on every change of the CRD, the Secret or the ConfigMap
// and at every deadline, until ctx ends.
func (p *MetricsCA) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("configMap", klog.KRef(p.m.o.Namespace, p.o.ConfigMapName))
	ctx = klog.NewContext(ctx, logger)
	defer p.queue.ShutDown()
	p.factory.StartWithContext(ctx)
	defer p.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), p.configMaps.HasSynced, p.m.secrets.HasSynced, p.m.crd.HasSynced) {
		return fmt.Errorf("the cache of ConfigMap %s/%s did not sync before shutdown", p.m.o.Namespace, p.o.ConfigMapName)
	}
	logger.Info("Publishing the CA bundle and signing the metrics serving certificate")
	var wg sync.WaitGroup
	wg.Go(func() { wait.UntilWithContext(ctx, p.runWorker, time.Second) })
	<-ctx.Done()
	p.queue.ShutDown()
	wg.Wait()
	return nil
}

func (p *MetricsCA) runWorker(ctx context.Context) {
	for {
		key, shutdown := p.queue.Get()
		if shutdown {
			return
		}
		next, err := p.sync(ctx)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err,
				"Publishing the CA bundle or signing the metrics certificate failed; retrying")
			p.queue.AddRateLimited(key)
		} else {
			p.queue.Forget(key)
			if next > 0 {
				p.queue.AddAfter(key, next)
			}
		}
		p.queue.Done(key)
	}
}

// Certificate is the metrics serving certificate, nil until there is one.
func (p *MetricsCA) Certificate() *tls.Certificate {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// StartMetricsCertificate publishes the bundle of the CAs ca keeps in the
// ConfigMap samplecontroller.MetricsCAConfigMapName beside its Secret, and
// keeps a metrics serving certificate signed by ca's signing CA for the
// names of the metrics Service, in the same namespace (a MetricsCA), until
// ctx ends, so that scrapers verify the certificate with the bundle. It
// returns the certificate's getter, nil until the first is signed; or nil,
// leaving the metrics server its self-signed certificate, where there is
// nothing to sign with or to sign for: no CA (ca nil, as in a replica that
// serves no webhook: the webhook's Manager is what keeps the CA), no metrics
// server or plain HTTP (m), or a certificate given in files (-tls-cert-file).
func StartMetricsCertificate(ctx context.Context, ca *Manager, m serving.MetricsOptions) func() *tls.Certificate {
	metricsCA := metricsCertificate(ca, m)
	if metricsCA == nil {
		return nil
	}
	go func() {
		if err := metricsCA.Run(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "The metrics certificate's manager stopped")
		}
	}()
	return metricsCA.Certificate
}

// metricsCertificate is the MetricsCA StartMetricsCertificate runs, nil
// where it runs none.
func metricsCertificate(ca *Manager, m serving.MetricsOptions) *MetricsCA {
	if ca == nil || m.BindAddress == "0" || !m.Secure || m.CertFile != "" || m.KeyFile != "" {
		return nil
	}
	service := samplecontroller.MetricsServiceName + "." + ca.o.Namespace + ".svc"
	return ca.NewMetricsCA(MetricsOptions{
		ConfigMapName: samplecontroller.MetricsCAConfigMapName,
		Key:           samplecontroller.MetricsCAKey,
		// The Service's name, which a scraper verifies (server_name), and
		// loopback, for a port-forward or a local run.
		DNSNames: []string{service, service + ".cluster.local", "localhost"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	})
}

// sync publishes the caBundle, then brings the metrics certificate in line
// with the signing CA and the bundle as published, and returns how long
// until its next deadline (zero: none).
func (p *MetricsCA) sync(ctx context.Context) (time.Duration, error) {
	now := p.m.o.Clock.Now()
	crd, err := p.m.cachedCRD()
	if err != nil || crd == nil {
		return 0, err // the CRD's event will come
	}
	bundle := caBundle(crd)
	if len(parseBundle(bundle)) == 0 {
		return 0, nil // the Manager writes it; its event will come
	}
	published, err := p.publish(ctx, bundle)
	if err != nil {
		return 0, err
	}
	secret, err := p.m.cachedSecret()
	if err != nil || secret == nil {
		return 0, err // the Manager creates it; its event will come
	}
	signer, key, err := parseSigner(secret)
	if err != nil {
		return 0, fmt.Errorf("secret %s/%s: %w", p.m.o.Namespace, p.m.o.SecretName, err)
	}
	return p.updateLeaf(ctx, now, signer, key, derOf(parseBundle(published)))
}

// publish makes the ConfigMap's bundle want, creating the ConfigMap if
// there is none, and returns the bundle it holds as stored.
func (p *MetricsCA) publish(ctx context.Context, want []byte) ([]byte, error) {
	configMaps := p.m.client.CoreV1().ConfigMaps(p.m.o.Namespace)
	obj, exists, err := p.configMaps.GetStore().GetByKey(p.m.o.Namespace + "/" + p.o.ConfigMapName)
	if err != nil {
		return nil, err
	}
	if !exists {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.m.o.Namespace, Name: p.o.ConfigMapName},
			Data:       map[string]string{p.o.Key: string(want)},
		}
		created, err := configMaps.Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("another replica created ConfigMap %s/%s first: %w", p.m.o.Namespace, p.o.ConfigMapName, err)
		}
		if err != nil {
			return nil, fmt.Errorf("creating ConfigMap %s/%s: %w", p.m.o.Namespace, p.o.ConfigMapName, err)
		}
		klog.FromContext(ctx).Info("Published the CA bundle", "cas", len(parseBundle(want)))
		return []byte(created.Data[p.o.Key]), nil
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s cached as a %T", p.m.o.Namespace, p.o.ConfigMapName, obj)
	}
	if cm.Data[p.o.Key] == string(want) {
		return want, nil
	}
	cm = cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[p.o.Key] = string(want)
	// With the resourceVersion read: a Conflict means another replica
	// wrote first, and its event brings the ConfigMap to judge afresh.
	updated, err := configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating ConfigMap %s/%s: %w", p.m.o.Namespace, p.o.ConfigMapName, err)
	}
	klog.FromContext(ctx).Info("Published the CA bundle", "cas", len(parseBundle(want)))
	return []byte(updated.Data[p.o.Key]), nil
}

// parseSigner reads the signing CA and its key from the Secret: the two
// keys a leaf is signed with, whatever else the Secret holds.
func parseSigner(secret *corev1.Secret) (*x509.Certificate, crypto.Signer, error) {
	certs, err := cert.ParseCertsPEM(secret.Data[caCertKey])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", caCertKey, err)
	}
	if len(certs) != 1 || !certs[0].IsCA {
		return nil, nil, fmt.Errorf("%s holds %d certificates, want one CA", caCertKey, len(certs))
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(secret.Data[caKeyKey])
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", caKeyKey, err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s holds a %T, not a signing key", caKeyKey, parsed)
	}
	if public, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !public.Equal(certs[0].PublicKey) {
		return nil, nil, fmt.Errorf("%s is not the key of %s", caKeyKey, caCertKey)
	}
	return certs[0], key, nil
}

// updateLeaf issues a new metrics certificate when there is none, when it is
// two thirds through its life, or when the signing CA changed; but only from
// a signing CA that published, the bundle as the ConfigMap holds it,
// holds, and, when it replaces a certificate of another CA the bundle still
// holds, has held for metricsSettle.
func (p *MetricsCA) updateLeaf(
	ctx context.Context, now time.Time, signer *x509.Certificate, key crypto.Signer, published [][]byte,
) (time.Duration, error) {
	p.mu.Lock()
	served, servedBy := p.served, p.servedBy
	p.mu.Unlock()
	due := served == nil || !bytes.Equal(servedBy, signer.Raw) || !now.Before(renewAt(served.Leaf))
	if !due {
		return renewAt(served.Leaf).Sub(now), nil
	}
	if !containsDER(published, signer.Raw) {
		// The ConfigMap's event brings the bundle with it.
		klog.FromContext(ctx).V(2).Info("Waiting for the published CA bundle to hold the signing CA")
		return 0, nil
	}
	if served != nil && !bytes.Equal(servedBy, signer.Raw) && containsDER(published, servedBy) &&
		now.Before(served.Leaf.NotAfter) {
		p.mu.Lock()
		if !bytes.Equal(p.nextCA, signer.Raw) {
			p.nextCA, p.nextCASeen = signer.Raw, now
		}
		switchAt := p.nextCASeen.Add(metricsSettle)
		p.mu.Unlock()
		// Never past the old certificate's life.
		if expiry := served.Leaf.NotAfter.Add(-settle); expiry.Before(switchAt) {
			switchAt = expiry
		}
		if now.Before(switchAt) {
			klog.FromContext(ctx).V(2).Info("Serving the previous metrics certificate while scrapers get the new CA",
				"switchAt", switchAt)
			return switchAt.Sub(now), nil
		}
	}
	o := p.m.o
	o.DNSNames, o.IPs = p.o.DNSNames, p.o.IPs
	leaf, err := newLeaf(now, o, &authority{signer: signer, key: key})
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	p.served, p.servedBy = leaf, signer.Raw
	p.mu.Unlock()
	klog.FromContext(ctx).Info("Serving a new metrics certificate", "notAfter", leaf.Leaf.NotAfter, "dnsNames", o.DNSNames)
	return renewAt(leaf.Leaf).Sub(now), nil
}
