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

package main

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	// These register client-go's own metrics with the same registry, as
	// kube-controller-manager does: workqueue depth, adds, latency, work
	// duration, retries, unfinished and longest-running work; REST client
	// requests and latency; the leader election status gauge.
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
)

// The controller's own metrics, served on /metrics with client-go's.
var (
	reconcileTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "samplecontroller",
		Name:           "reconcile_total",
		Help:           "Foo syncs, by result: success; conflict (the cache was behind: a write was answered 409; the Foo is retried); deferred (no status written because the cache had not yet seen the controller's own last status write; the Foo is synced again when it does); error (the Foo is retried with backoff).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})

	reconcileDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: "samplecontroller",
		Name:      "reconcile_duration_seconds",
		Help:      "How long one Foo sync takes, API calls included.",
		// 1 ms to ~16 s: a sync that reads only the cache takes microseconds,
		// one that writes takes a few API round trips.
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	})
)

func init() {
	legacyregistry.MustRegister(reconcileTotal, reconcileDuration)
}

// observeReconcile records the outcome and duration of one sync.
func observeReconcile(d time.Duration, err error) {
	result := "success"
	switch {
	case errors.Is(err, errAwaitingStatusEcho):
		result = "deferred"
	case apierrors.IsConflict(err):
		result = "conflict"
	case err != nil:
		result = "error"
	}
	reconcileTotal.WithLabelValues(result).Inc()
	reconcileDuration.Observe(d.Seconds())
}
