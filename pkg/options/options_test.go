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

package options

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kube-samples/sample-controller/pkg/replicas"
	"github.com/kube-samples/sample-controller/pkg/serving"
)

// The defaults a user gets, and the command line parsed into options.
func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o := AddFlags(fs)
	if o.Workers != 8 || o.ResyncPeriod != 10*time.Hour || o.KubeAPIQPS != 0 || o.KubeAPIBurst != 0 ||
		o.Metrics != (serving.MetricsOptions{BindAddress: ":8443", Secure: true}) || o.ProbeAddr != ":8081" || o.Namespace != "" {
		t.Errorf("defaults: %+v", o)
	}
	le := o.LeaderElection
	if le != (replicas.Config{Enabled: true, Namespace: "default", Name: "sample-controller",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}) {
		t.Errorf("leader election defaults: %+v", le)
	}
	if o.Webhook != (WebhookOptions{BindAddress: ":9443", Namespace: "default", CASecretName: "sample-controller-webhook-ca",
		CAValidity: 365 * 24 * time.Hour, CertValidity: 90 * 24 * time.Hour}) {
		t.Errorf("webhook defaults: %+v", o.Webhook)
	}
	if err := fs.Parse([]string{"-namespace=team-a", "-workers=3", "-resync-period=1m", "-kube-api-qps=50",
		"-kube-api-burst=60", "-leader-elect=false", "-profiling", "-v=4", "-logging-format=json",
		"-webhook-bind-address=127.0.0.1:0", "-webhook-namespace=ops", "-webhook-ca-secret=ca",
		"-webhook-ca-validity=2h", "-webhook-cert-validity=1h"}); err != nil {
		t.Fatal(err)
	}
	if o.Namespace != "team-a" || o.Workers != 3 || o.ResyncPeriod != time.Minute || o.KubeAPIQPS != 50 ||
		o.KubeAPIBurst != 60 || o.LeaderElection.Enabled || !o.Metrics.Profiling || o.Logging.Format != "json" || o.Logging.Verbosity != 4 {
		t.Errorf("parsed: %+v, logging %+v", o, o.Logging)
	}
	if o.Webhook != (WebhookOptions{BindAddress: "127.0.0.1:0", Namespace: "ops", CASecretName: "ca",
		CAValidity: 2 * time.Hour, CertValidity: time.Hour}) {
		t.Errorf("parsed webhook options: %+v", o.Webhook)
	}
}

// Each flag whose value cannot work ends the start with a message naming it.
func TestValidateNamesEachFlagThatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // each a line of the error, in any order
	}{
		{args: nil},
		{args: []string{"-webhook-ca-validity=90s", "-webhook-cert-validity=90s"}},
		{args: []string{"-webhook-bind-address=0", "-webhook-ca-validity=-1h"}},
		{args: []string{"-webhook-ca-validity=-1h"}, want: []string{
			"-webhook-ca-validity is -1h0m0s: it must be at least 1m30s, so that a renewal, begun after two thirds " +
				"of it, has time to finish"}},
		{args: []string{"-webhook-ca-validity=0s", "-webhook-cert-validity=89s"}, want: []string{
			"-webhook-ca-validity is 0s: it must be at least 1m30s, so that a renewal, begun after two thirds " +
				"of it, has time to finish",
			"-webhook-cert-validity is 1m29s: it must be at least 1m30s, so that a renewal, begun after two thirds " +
				"of it, has time to finish"}},
		{args: []string{"-webhook-bind-address="}, want: []string{
			"-webhook-bind-address is empty: give an address such as :PORT, or 0 to disable the server"}},
		{args: []string{"-metrics-bind-address=", "-health-probe-bind-address="}, want: []string{
			"-metrics-bind-address is empty: give an address such as :PORT, or 0 to disable the server",
			"-health-probe-bind-address is empty: give an address such as :PORT, or 0 to disable the server"}},
		{args: []string{"-workers=0", "-resync-period=0s"}, want: []string{
			"-workers is 0: it must be at least 1, or no Foo is ever synced",
			"-resync-period is 0s: it must be at least 1s, client-go's shortest resync"}},
		{args: []string{"-workers=-2", "-resync-period=999ms"}, want: []string{
			"-workers is -2: it must be at least 1, or no Foo is ever synced",
			"-resync-period is 999ms: it must be at least 1s, client-go's shortest resync"}},
		{args: []string{"-workers=1", "-resync-period=1s"}},
		// The smallest durations client-go's elector takes.
		{args: []string{"-leader-elect-lease-duration=3s", "-leader-elect-renew-deadline=2s",
			"-leader-elect-retry-period=1666ms"}},
		{args: []string{"-leader-elect-lease-duration=0s", "-leader-elect-renew-deadline=-1s",
			"-leader-elect-retry-period=0s"}, want: []string{
			"-leader-elect-lease-duration is 0s: it must be greater than zero",
			"-leader-elect-renew-deadline is -1s: it must be greater than zero",
			"-leader-elect-retry-period is 0s: it must be greater than zero"}},
		{args: []string{"-leader-elect-retry-period=-1ms"}, want: []string{
			"-leader-elect-retry-period is -1ms: it must be greater than zero"}},
		{args: []string{"-leader-elect-lease-duration=10s"}, want: []string{
			"-leader-elect-renew-deadline is 10s: it must be less than -leader-elect-lease-duration (10s), " +
				"so that a leader that cannot renew gives up before a standby takes over"}},
		{args: []string{"-leader-elect-renew-deadline=2400ms"}, want: []string{
			"-leader-elect-retry-period is 2s: it must be less than -leader-elect-renew-deadline (2.4s) divided by " +
				"1.2 (client-go's jitter factor), so that the leader tries to renew more than once before it gives up"}},
		{args: []string{"-leader-elect-lease-duration=2s", "-leader-elect-renew-deadline=3s",
			"-leader-elect-retry-period=3s"}, want: []string{
			"-leader-elect-renew-deadline is 3s: it must be less than -leader-elect-lease-duration (2s), " +
				"so that a leader that cannot renew gives up before a standby takes over",
			"-leader-elect-retry-period is 3s: it must be less than -leader-elect-renew-deadline (3s) divided by " +
				"1.2 (client-go's jitter factor), so that the leader tries to renew more than once before it gives up"}},
		// The longest the own-leases policy admits, and a second more.
		{args: []string{"-leader-elect-lease-duration=10m"}},
		{args: []string{"-leader-elect-lease-duration=10m1s"}, want: []string{
			"-leader-elect-lease-duration is 10m1s: it must be at most 10m0s, the longest the own-leases " +
				"admission policy lets the controller's Leases claim"}},
		{args: []string{"-shards=256"}},
		{args: []string{"-shards=257"}, want: []string{"-shards is 257: it must be from 1 to 256"}},
		{args: []string{"-shards=16", "-shard-boundaries=weighted"}},
		{args: []string{"-shards=16", "-shard-boundaries=quantiles"}, want: []string{
			`-shard-boundaries is "quantiles": it must be equal or weighted`}},
		// Without leader election its durations are not used.
		{args: []string{"-leader-elect=false", "-leader-elect-lease-duration=0s", "-leader-elect-retry-period=1h"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o := AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if !sameLines(got, tc.want) {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}

// sameLines reports whether a and b hold the same lines, in any order.
func sameLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	left := map[string]int{}
	for _, line := range a {
		left[line]++
	}
	for _, line := range b {
		if left[line] == 0 {
			return false
		}
		left[line]--
	}
	return true
}

// The leader election durations Validate takes are exactly those client-go's
// elector takes: a start refused by Validate would have failed later, and
// one it lets through does not fail in leaderelection.NewLeaderElector.
func TestValidateTakesTheLeaderElectionDurationsClientGoTakes(t *testing.T) {
	durations := []time.Duration{-time.Second, 0, time.Millisecond, 999 * time.Millisecond, time.Second,
		1200 * time.Millisecond, 1201 * time.Millisecond, 2 * time.Second, 2400 * time.Millisecond, 10 * time.Second}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "default", "lease", nil, nil,
		resourcelock.ResourceLockConfig{Identity: "replica"})
	if err != nil {
		t.Fatal(err)
	}
	callbacks := leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}}
	for _, lease := range durations {
		for _, renew := range durations {
			for _, retry := range durations {
				o := AddFlags(flag.NewFlagSet("test", flag.ContinueOnError))
				o.LeaderElection.LeaseDuration, o.LeaderElection.RenewDeadline, o.LeaderElection.RetryPeriod = lease, renew, retry
				validateErr := o.Validate()
				_, electorErr := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{Lock: lock,
					LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, Callbacks: callbacks})
				if (validateErr == nil) != (electorErr == nil) {
					t.Errorf("lease %v, renew %v, retry %v: Validate() = %v, client-go: %v", lease, renew, retry, validateErr, electorErr)
				}
			}
		}
	}
}
