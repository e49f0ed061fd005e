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

// Package certauthority keeps the controller's own CA, without cert-manager,
// and the certificates it signs: the serving certificate of the Foo CRD's
// conversion webhook, which every replica serves and the API server trusts
// through that CA (Manager), and the metrics server's, which scrapers verify
// with the same CA (MetricsCA, StartMetricsCertificate).
//
// Three things must agree for a conversion call to succeed: the certificate a
// replica serves, the CA that signed it, and the CRD's
// spec.conversion.webhook.clientConfig.caBundle, the roots the API server
// verifies the webhook with. Each is kept where it costs least:
//
//   - A Secret (Options.Namespace, Options.SecretName) holds the signing CA
//     (ca.crt, ca.key) and trusted.crt, the CAs the API server must trust:
//     the signing CA first, then the earlier ones that have not expired,
//     each endorsed in trusted.sig by the signing key; and ca.sig, the
//     signing CA endorsed by the CAs the replica that made it trusted. It
//     is the only state shared by the replicas, and written only when the
//     CA is created, rotated or revoked.
//   - The CRD's caBundle is a copy of the CAs of trusted.crt the signing key
//     vouches for: a CA someone else wrote there, without the key, never
//     reaches it, and is reported (trustDecision, remember). Nor does a CA
//     this controller could not have made (rules: its key type, subject,
//     start and lifetime), signing or endorsed, nor a signing CA that none
//     of the CAs a replica trusts already endorsed in ca.sig: a signing CA
//     swapped in by whoever can update the Secret is reported, and the
//     replicas keep the CAs they had and write nothing (keepWhatItHad).
//     Any replica may write the caBundle, and only when it differs, so at
//     rest nothing is written.
//   - The serving certificate (the leaf) is generated in memory by each
//     replica from the signing CA, and never stored: a replica that starts
//     signs its own.
//
// The order of the steps is what keeps conversion working through a CA
// rotation. A new CA is first added to trusted.crt next to the old one, and
// so to the caBundle; a replica switches its leaf to one signed by the new CA
// only once it has seen the caBundle hold that CA, and until then serves the
// leaf of the old CA, which the caBundle still holds. An old CA leaves
// trusted.crt only after it has expired, when no leaf it signed is valid
// anyway, or when an operator revokes it (RevokeAnnotation), once every
// replica has moved to the new CA (finishRevocation).
//
// A leaf is reissued two thirds through its life, and the CA rotated two
// thirds through its own, which leaves a third of each lifetime to retry
// in if the API server is unreachable when the time comes.
package certauthority

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kube-samples/sample-controller/pkg/eventrecorder"
)

const (
	// DefaultCAValidity is the CA's lifetime when Options.CAValidity is
	// zero: a year, as cert-manager gives the CA of its own webhook
	// (DynamicAuthority). Not kubeadm's ten years: that CA is a cluster's
	// root, replaced by hand, while this one is rotated by the replicas,
	// after two thirds of it (eight months), without a failed call. So a
	// year costs a shared write every eight months, and bounds how long a
	// CA key that leaked, or a CA endorsed with it, is trusted
	// (rules.validity); a rotation that runs every few months is also one
	// that is known to work.
	DefaultCAValidity = 365 * 24 * time.Hour
	// LegacyCAValidity is the longest validity a release gave a CA by
	// default: ten years, DefaultCAValidity before it was a year. Every
	// install upgraded from such a release holds such a CA, which its
	// replicas serve from; refused, it would leave each replica restarted
	// by the upgrade without a CA. So a CA valid this long is trusted
	// whatever the CA validity where an earlier release could have written
	// it: endorsed in trusted.crt, or as the signing CA of a Secret with no
	// ca.sig (which no earlier release wrote), taken by a replica that
	// trusts no other CA yet (rules.refuseSigning). As the signing CA it is
	// rotated at once to one of the CA validity, and dropped from the
	// caBundle once every replica serves that (rules.overlong,
	// retireOverlong); a longer one, or one with a ca.sig, is refused
	// (reason lifetime). A ten-year CA planted while every replica
	// restarts is taken so too, as it cannot be told from an earlier
	// release's: trusted for a minute or two, as a CA of the CA validity
	// planted then is for its whole life (the residual of a replica with
	// no CA yet).
	LegacyCAValidity = 10 * 365 * 24 * time.Hour
	// DefaultLeafValidity is the serving certificate's lifetime when
	// Options.LeafValidity is zero: 90 days, as cert-manager's default. A
	// leaf costs no API call to reissue, so it can be short, limiting what a
	// leaked key is good for, while the last third (30 days) gives ample
	// time to notice a replica that fails to reissue it.
	DefaultLeafValidity = 90 * 24 * time.Hour
)

// crdGVR is the CustomResourceDefinition resource, read and written through
// the dynamic client: the module does not depend on the apiextensions types.
var crdGVR = schema.GroupVersionResource{
	Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions",
}

// queueKey is the one key of the work queue: every event and deadline leads
// to the same reconcile of the Secret, the CRD and the leaf together.
const queueKey = "certauthority"

// resync re-delivers the cached Secret and CRD to the handlers now and then
// (no API call). The deadlines are scheduled with AddAfter; this is a
// safety net should a timer be missed, say while the machine was suspended.
const resync = time.Hour

// Options says where the CA lives, which CRD trusts it and what the serving
// certificate is for.
type Options struct {
	// Namespace and SecretName locate the Secret that holds the CA.
	Namespace, SecretName string
	// CRDName is the CRD whose conversion webhook is served, e.g.
	// foos.samplecontroller.k8s.io.
	CRDName string
	// DNSNames and IPs are the serving certificate's subject alternative
	// names: those the API server connects to (the Service's DNS name,
	// <service>.<namespace>.svc). At least one must be given.
	DNSNames []string
	IPs      []net.IP
	// CAValidity and LeafValidity are the lifetimes of a new CA and a new
	// serving certificate (DefaultCAValidity and DefaultLeafValidity if
	// zero). A leaf never outlives the CA that signed it.
	CAValidity, LeafValidity time.Duration
	// Clock is the time the certificates are issued and rotated by; nil is
	// the real clock. Tests step a fake one.
	Clock clock.Clock
	// EventSource is the component the events on the Secret are reported
	// from ("certauthority" if empty).
	EventSource string
}

// Manager keeps the CA Secret and the CRD's caBundle in line, and serves
// this replica's serving certificate. Run it in every replica.
type Manager struct {
	client kubernetes.Interface
	crds   dynamic.NamespaceableResourceInterface
	o      Options

	secretFactory informers.SharedInformerFactory
	crdFactory    dynamicinformer.DynamicSharedInformerFactory
	secrets, crd  cache.SharedIndexInformer
	queue         workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// served is the leaf handed to TLS handshakes, nil until the first is
	// issued; servedBy is the DER of the CA that signed it.
	served   *tls.Certificate
	servedBy []byte
	// trusted holds the DER of each CA in the caBundle the last reconcile
	// saw.
	trusted [][]byte
	// nextCA is the DER of a signing CA this replica has seen the caBundle
	// trust but does not serve a leaf of yet, and nextCASeen when it first
	// saw that (settle).
	nextCA     []byte
	nextCASeen time.Time
	// signerSeen is the DER of the signing CA this replica last saw the
	// caBundle trust, and signerSeenAt when it first saw that
	// (finishRevocation).
	signerSeen   []byte
	signerSeenAt time.Time
	// known is the CAs the Secret last read trusted, carried into a Secret
	// created again (createAuthority), one of which must have endorsed any
	// other signing CA (rules); good is that Secret's CA, served from
	// while the Secret's signing CA is refused (keepWhatItHad), whose key
	// endorses the CA this replica makes next (endorsers);
	// reported is the CAs of the Secret a Warning event has named
	// (remember), by role and fingerprint.
	known    []*x509.Certificate
	good     *authority
	reported map[string]bool
	// events records the Warning on the Secret for a foreign CA; nil until
	// Run, and in tests that set none.
	events record.EventRecorder
	// problem is why the last reconcile could not finish, if it could not.
	problem error
}

// New returns a Manager for o. Nothing happens until Run.
func New(client kubernetes.Interface, dyn dynamic.Interface, o Options) *Manager {
	if o.CAValidity == 0 {
		o.CAValidity = DefaultCAValidity
	}
	if o.LeafValidity == 0 {
		o.LeafValidity = DefaultLeafValidity
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.EventSource == "" {
		o.EventSource = "certauthority"
	}
	// The informers see the one Secret and the one CRD: a list of every
	// Secret of the namespace would cost memory and need wider RBAC.
	secretFactory := informers.NewSharedInformerFactoryWithOptions(client, resync,
		informers.WithNamespace(o.Namespace), informers.WithTweakListOptions(byName(o.SecretName)))
	crdFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, resync, metav1.NamespaceAll,
		byName(o.CRDName))

	// One key: no token bucket is needed against a storm. The delay is
	// capped at five minutes, so that a replica recovers soon after what
	// failed (RBAC granted late, say) is fixed.
	queueConfig := workqueue.TypedRateLimitingQueueConfig[string]{Name: "certauthority"}
	if c, ok := o.Clock.(clock.WithTicker); ok {
		queueConfig.Clock = c // AddAfter's deadlines on the same clock
	}
	m := &Manager{
		client:        client,
		crds:          dyn.Resource(crdGVR),
		o:             o,
		secretFactory: secretFactory,
		crdFactory:    crdFactory,
		secrets:       secretFactory.Core().V1().Secrets().Informer(),
		crd:           crdFactory.ForResource(crdGVR).Informer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 5*time.Minute), queueConfig),
		reported: map[string]bool{},
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { m.queue.Add(queueKey) },
		UpdateFunc: func(any, any) { m.queue.Add(queueKey) },
		DeleteFunc: func(any) { m.queue.Add(queueKey) },
	}
	// AddEventHandler fails only on an informer that has stopped; these
	// have not started.
	_, _ = m.secrets.AddEventHandler(handler)
	_, _ = m.crd.AddEventHandler(handler)
	return m
}

// byName restricts a list and watch to the object called name.
func byName(name string) func(*metav1.ListOptions) {
	return func(opts *metav1.ListOptions) {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
}

// Run starts the informers, then reconciles on every change of the Secret
// or the CRD and at every deadline, until ctx ends. It returns an error only
// if the caches did not sync before ctx ended.
func (m *Manager) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("secret", klog.KRef(m.o.Namespace, m.o.SecretName), "crd", m.o.CRDName)
	ctx = klog.NewContext(ctx, logger)
	defer m.queue.ShutDown()

	m.secretFactory.StartWithContext(ctx)
	m.crdFactory.Start(ctx.Done())
	// Shutdown waits for the informers, which stop as ctx ends.
	defer m.crdFactory.Shutdown()
	defer m.secretFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), m.secrets.HasSynced, m.crd.HasSynced) {
		return fmt.Errorf("the caches of Secret %s/%s and CRD %s did not sync before shutdown",
			m.o.Namespace, m.o.SecretName, m.o.CRDName)
	}

	// Before the worker starts, which reads m.events without the lock.
	events := eventrecorder.New(ctx, m.client.CoreV1(), scheme.Scheme, m.o.EventSource, 0, nil)
	defer events.Shutdown(ctx, 5*time.Second)
	m.events = events

	logger.Info("Managing the conversion webhook's serving certificate")
	var wg sync.WaitGroup
	wg.Go(func() { wait.UntilWithContext(ctx, m.runWorker, time.Second) })
	<-ctx.Done()
	m.queue.ShutDown()
	wg.Wait()
	return nil
}

// runWorker reconciles each time the key is queued, until the queue shuts
// down. A failure is retried with backoff; a success schedules the next
// reconcile at the next deadline (leaf or CA two thirds through its life).
func (m *Manager) runWorker(ctx context.Context) {
	for {
		key, shutdown := m.queue.Get()
		if shutdown {
			return
		}
		next, err := m.reconcile(ctx)
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Reconciling the webhook certificates failed; retrying")
			m.queue.AddRateLimited(key)
		} else {
			m.queue.Forget(key)
			if next > 0 {
				m.queue.AddAfter(key, next)
			}
		}
		m.queue.Done(key)
	}
}

// GetCertificate is the tls.Config's GetCertificate: this replica's current
// serving certificate, or an error until it has one.
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.served == nil {
		return nil, errNoLeaf
	}
	return m.served, nil
}

var errNoLeaf = errors.New("no conversion webhook serving certificate yet")

// Ready returns nil while this replica serves a certificate the API server
// trusts: one that has not expired, signed by a CA in the caBundle last
// seen. Else it says why not, for a readiness probe: a replica that is not
// ready gets no conversion calls from the Service. A failing reconcile does
// not make unready a replica whose leaf is still trusted: its conversions
// still succeed.
func (m *Manager) Ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.served == nil && m.problem != nil:
		return fmt.Errorf("%w: %w", errNoLeaf, m.problem)
	case m.served == nil:
		return errNoLeaf
	case !m.o.Clock.Now().Before(m.served.Leaf.NotAfter):
		return fmt.Errorf("the conversion webhook serving certificate expired at %s", m.served.Leaf.NotAfter)
	case !containsDER(m.trusted, m.servedBy):
		return fmt.Errorf("the CA of the conversion webhook serving certificate is not in the caBundle of CRD %s",
			m.o.CRDName)
	}
	return nil
}
