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

// Package metrics is the controller's own metrics, served on /metrics with
// client-go's (workqueue, REST client, leader election), which it registers
// too: how syncs end and how long they take, the events dropped, and the Foos
// by readiness.
//
// Why not only client-go's: its workqueue metrics say how much work waits,
// not how it ends. A sync that found the cache behind the controller's own
// status write ("deferred") and one answered 409 ("conflict") are both
// normal at scale (a cold start over 10,000 Foos defers thousands), and an
// alert on errors must not count them; samplecontroller_foos lets a platform
// team alert on Foos not Ready for long, with the reason, without a label
// per Foo.
package metrics

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	// These register client-go's own metrics with the same registry, as
	// kube-controller-manager does: workqueue depth, adds, latency, work
	// duration, retries, unfinished and longest-running work; REST client
	// requests and latency; the leader election status gauge.
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/expectations"
)

// reasonLabel is the label that says why, on every metric that has one.
const reasonLabel = "reason"

// Subsystem prefixes the name of each of the controller's own metrics
// (samplecontroller_reconcile_total, ...): the one source of the prefix the
// alerts and the dashboard of artifacts/monitoring select, which
// test/monitoring holds them to.
const Subsystem = "samplecontroller"

// The controller's own metrics, served on /metrics with client-go's.
var (
	ReconcileTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: Subsystem,
		Name:      "reconcile_total",
		Help: "Foo syncs, by result: success; " +
			"conflict (the cache was behind: a write was answered 409; the Foo is retried); " +
			"deferred (the cache still held a Foo the API server had replaced, by the controller's own last status " +
			"write or, on a new leader, by a change its takeover relist found: the sync wrote no status, and in the " +
			"second case nothing at all, as the write would be answered 409 or undo that change; not an error, and " +
			"not retried with backoff: the Foo is synced again when the watch brings the newer Foo); " +
			"error (the Foo is retried with backoff).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})

	reconcileDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: Subsystem,
		Name:      "reconcile_duration_seconds",
		Help:      "How long one Foo sync takes, API calls included.",
		// 1 ms to ~16 s: a sync that reads only the cache takes microseconds,
		// one that writes takes a few API round trips.
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	})

	// EventsDropped counts the events not recorded, by type (pkg/eventrecorder).
	EventsDropped = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: Subsystem,
		Name:      "events_dropped_total",
		Help: "Events not recorded, by type: events that found 1000 of their type waiting to be written, " +
			"and events recorded after shutdown began. " +
			"Warnings and Normal events wait apart: a burst of Normal events never drops a Warning.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"type"})

	// WebhookForeignCAs counts the CAs of the webhook's CA Secret that its
	// signing CA did not endorse (pkg/certauthority).
	WebhookForeignCAs = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: Subsystem,
		Name:      "webhook_foreign_cas",
		Help: "CAs in trusted.crt of the conversion webhook's CA Secret that its signing CA did not endorse, " +
			"as this replica last read it: written by someone other than the controller, and left out of the " +
			"CRD's caBundle. Anything but 0 is worth a look.",
		StabilityLevel: metrics.ALPHA,
	})

	// WebhookRefusedCAs counts the CAs of the webhook's CA Secret that the
	// controller could not have made, by role and reason (pkg/certauthority).
	WebhookRefusedCAs = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem: Subsystem,
		Name:      "webhook_refused_cas",
		Help: "CAs of the conversion webhook's CA Secret that the controller could not have made, as this replica " +
			"last read it, and so does not trust, by ca: signing (ca.crt: the replica keeps the CAs it had and writes " +
			"nothing) or endorsed (in trusted.crt, left out of the CRD's caBundle); and by reason: key (not ECDSA " +
			"P-256), subject, issuer (not self-signed), not_yet_valid (starts in the future), lifetime (valid longer " +
			"than -webhook-ca-validity, and than the 10 years of an earlier release's CA where it could be one: " +
			"endorsed, or signing with no ca.sig), and for the signing CA unendorsed (no CA the replica trusts " +
			"endorsed it in ca.sig, as the replica that makes a CA does). Anything but 0: someone other than the " +
			"controller wrote the Secret.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"ca", reasonLabel})

	// MetricsReviewsRefused counts the reviews that guard /metrics not
	// sent, or refused by the API server, by reason (pkg/serving).
	MetricsReviewsRefused = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: Subsystem,
		Name:      "metrics_reviews_refused_total",
		Help: "Requests to the metrics server answered 429 because the TokenReview or SubjectAccessReview they needed " +
			"was not sent or was refused, by reason: in_flight (as many reviews as allowed were waiting on the API server), " +
			"rate (the reviews' rate limit was spent), api_server (the API server answered 429). " +
			"Rising: something sends /metrics many tokens it has not reviewed, e.g. a flood of random ones.",
		StabilityLevel: metrics.ALPHA,
	}, []string{reasonLabel})

	// The shards of -shards (pkg/replicas), set by a sharded replica alone.
	Shards = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem: Subsystem,
		Name:      "shards",
		Help: "How many shards the Foos are split into (-shards), as this replica was told; not served by an " +
			"unsharded replica. The sum of samplecontroller_shards_held over the replicas falls short of it while a " +
			"shard has no holder.",
		StabilityLevel: metrics.ALPHA,
	})
	ShardsHeld = metrics.NewGauge(&metrics.GaugeOpts{
		Subsystem:      Subsystem,
		Name:           "shards_held",
		Help:           "The shards whose Lease this replica holds, and whose Foos it reconciles.",
		StabilityLevel: metrics.ALPHA,
	})
	ShardHandovers = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: Subsystem,
		Name:      "shard_handovers_total",
		Help: "Shards this replica took or gave up, by event: acquired (it took the shard's Lease), released (it " +
			"gave the shard up to the replica it is now assigned to, its workers done), lost (its Lease was taken, " +
			"or not renewed within the renew deadline: its writes had stopped at the fence).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"event"})
	ShardTakeoverDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: Subsystem,
		Name:      "shard_takeover_seconds",
		Help: "For each shard this replica took from another, the time from the previous holder's last renewal or " +
			"release, as this replica saw it, to this replica's caches of the shard holding a full list, when it " +
			"starts to reconcile it.",
		// 0.5 s to ~68 min: a release is taken at the next retry period, a
		// dead holder's Lease after the lease duration, and the list takes
		// what the shard's objects take.
		Buckets:        metrics.ExponentialBuckets(0.5, 2, 14),
		StabilityLevel: metrics.ALPHA,
	})
	ShardFiltering = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Subsystem: Subsystem,
		Name:      "shard_filtering",
		Help: "1 for who filters this replica's shards: server (the API server applies the shardSelector, " +
			"ShardedListAndWatch) or client (it sends every object, and the replica drops the other shards').",
		StabilityLevel: metrics.ALPHA,
	}, []string{"mode"})
)

func init() {
	legacyregistry.MustRegister(ReconcileTotal, reconcileDuration, EventsDropped, WebhookForeignCAs, WebhookRefusedCAs,
		MetricsReviewsRefused, Shards, ShardsHeld, ShardHandovers, ShardTakeoverDuration, ShardFiltering)
}

// ObserveSync records the result and duration of one sync, given the error
// it returned, and returns that result (SyncResult): the worker acts on the
// outcome it counted.
func ObserveSync(err error, d time.Duration) string {
	result := SyncResult(err)
	ReconcileTotal.WithLabelValues(result).Inc()
	reconcileDuration.Observe(d.Seconds())
	return result
}

// The results of a sync, as samplecontroller_reconcile_total counts them.
const (
	SyncSucceeded = "success"
	// SyncDeferred: the cache held a Foo the API server had replaced: by
	// the controller's own last status write (the sync wrote no status), or
	// before a takeover (it wrote nothing) (expectations.ErrCacheBehind).
	// processNextWorkItem forgets the key, as a retry before the watch
	// event that brings the newer Foo, which queues it, would find the same
	// cache.
	SyncDeferred = "deferred"
	// SyncConflict: a write was answered 409, the cache was behind.
	SyncConflict = "conflict"
	SyncFailed   = "error"
)

// SyncResult classifies the error a sync returned.
func SyncResult(err error) string {
	switch {
	case err == nil:
		return SyncSucceeded
	case errors.Is(err, expectations.ErrCacheBehind):
		return SyncDeferred
	case apierrors.IsConflict(err):
		return SyncConflict
	default:
		return SyncFailed
	}
}

// fooReadinessDesc describes samplecontroller_foos: how many Foos there are
// by their Ready condition's status and reason. A platform team alerts on
// Foos not Ready for long, and sees why, without a label per Foo.
var fooReadinessDesc = metrics.NewDesc(Subsystem+"_foos",
	"Foos by the status and reason of their Ready condition "+
		"(ready=\"Unknown\", reason=\"\" before the controller reported one), "+
		"counted in this replica's cache at scrape time: every replica, leader or standby, serves it.",
	[]string{"ready", reasonLabel}, nil, metrics.ALPHA, "")

// fooReadinessCollector counts the cached Foos at each scrape: no API call,
// and no state to keep in step with the cache.
type fooReadinessCollector struct {
	metrics.BaseStableCollector
	list func(labels.Selector) ([]*samplev1beta1.Foo, error)
}

// NewFooReadinessCollector returns the collector of samplecontroller_foos,
// counting the Foos list returns: a FooLister's List, or a sharded replica's
// over the shards it holds.
func NewFooReadinessCollector(list func(labels.Selector) ([]*samplev1beta1.Foo, error)) metrics.StableCollector {
	return &fooReadinessCollector{list: list}
}

func (c *fooReadinessCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- fooReadinessDesc
}

func (c *fooReadinessCollector) CollectWithStability(ch chan<- metrics.Metric) {
	cached, err := c.list(labels.Everything())
	if err != nil {
		return // a cache lister does not fail
	}
	type readiness struct{ ready, reason string }
	counts := map[readiness]int{}
	for _, foo := range cached {
		r := readiness{ready: string(metav1.ConditionUnknown)}
		if cond := meta.FindStatusCondition(foo.Status.Conditions, samplecontroller.ConditionReady); cond != nil {
			r = readiness{ready: string(cond.Status), reason: cond.Reason}
		}
		counts[r]++
	}
	for r, n := range counts {
		ch <- metrics.NewLazyConstMetric(fooReadinessDesc, metrics.GaugeValue, float64(n), r.ready, r.reason)
	}
}

// ownedCachedDesc describes samplecontroller_owned_cached: the objects of
// each kind a Foo owns in this replica's caches.
var ownedCachedDesc = metrics.NewDesc(Subsystem+"_owned_cached",
	"Objects of each kind a Foo owns (by resource, e.g. deployments) in this replica's caches at scrape time: "+
		"those the controller manages, in the namespaces it watches; sharded, in the shards this replica holds.",
	[]string{"resource"}, nil, metrics.ALPHA, "")

// ownedCachedCollector counts the cached owned objects at each scrape.
type ownedCachedCollector struct {
	metrics.BaseStableCollector
	count func() map[string]int
}

// NewOwnedCachedCollector returns the collector of
// samplecontroller_owned_cached, counting what count returns: the cached
// objects by resource.
func NewOwnedCachedCollector(count func() map[string]int) metrics.StableCollector {
	return &ownedCachedCollector{count: count}
}

func (c *ownedCachedCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- ownedCachedDesc
}

func (c *ownedCachedCollector) CollectWithStability(ch chan<- metrics.Metric) {
	for resource, n := range c.count() {
		ch <- metrics.NewLazyConstMetric(ownedCachedDesc, metrics.GaugeValue, float64(n), resource)
	}
}

// Caches is what a controller's caches tell the metrics (the repository root's Controller is one): the Foos of a
// selector it holds, and how many objects of each kind a Foo owns it holds, by resource.
type Caches interface {
	CachedFoos(selector labels.Selector) ([]*samplev1beta1.Foo, error)
	OwnedCached() map[string]int
}

// NewCachesCollectors returns the collectors of samplecontroller_foos and samplecontroller_owned_cached, each
// summing, at each scrape, what the controllers hold: one per shard a replica holds, sharded.
func NewCachesCollectors[C Caches](controllers func() []C) []metrics.StableCollector {
	return []metrics.StableCollector{
		NewFooReadinessCollector(func(selector labels.Selector) ([]*samplev1beta1.Foo, error) {
			var foos []*samplev1beta1.Foo
			for _, c := range controllers() {
				cached, err := c.CachedFoos(selector)
				if err != nil {
					return nil, err
				}
				foos = append(foos, cached...)
			}
			return foos, nil
		}),
		NewOwnedCachedCollector(func() map[string]int {
			counts := map[string]int{}
			for _, c := range controllers() {
				for resource, n := range c.OwnedCached() {
					counts[resource] += n
				}
			}
			return counts
		}),
	}
}
