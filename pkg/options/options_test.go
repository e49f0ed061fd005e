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
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/kube-samples/sample-controller/pkg/leader"
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
	if le != (leader.Config{Enabled: true, Namespace: "default", Name: "sample-controller",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}) {
		t.Errorf("leader election defaults: %+v", le)
	}
	if o.Webhook != (WebhookOptions{BindAddress: ":9443", Namespace: "default", CASecretName: "sample-controller-webhook-ca",
		CAValidity: 10 * 365 * 24 * time.Hour, CertValidity: 90 * 24 * time.Hour}) {
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
