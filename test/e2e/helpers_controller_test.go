//go:build e2e

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

package e2e

// The controller process: its flags, credentials, probes, metrics, log and
// leader election Lease.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-samples/sample-controller/pkg/freshfirst"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/test/framework"
)

// controllerArgs are the flags of a controller confined to one namespace
// and not competing for a Lease with anyone.
func controllerArgs(ns string, extra ...string) []string {
	return append([]string{"-namespace=" + ns, "-leader-elect=false"}, extra...)
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates with a
// fresh token of the ServiceAccount ns/name (kubectl create token), valid
// for an hour, to the suite's API server, and returns its path.
func serviceAccountKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	return serviceAccountKubeconfigFor(t, ns, name, time.Hour)
}

// serviceAccountKubeconfigFor is serviceAccountKubeconfig with a token
// valid for the given duration.
func serviceAccountKubeconfigFor(t *testing.T, ns, name string, valid time.Duration) string {
	t.Helper()
	token := strings.TrimSpace(kubectl(t, "create", "token", name, "-n", ns, "--duration="+valid.String()))
	if token == "" {
		t.Fatalf("kubectl create token %s -n %s printed no token", name, ns)
	}
	ca := cluster.Config.CAData
	if len(ca) == 0 && cluster.Config.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cluster.Config.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	user := "system:serviceaccount:" + ns + ":" + name
	config := clientcmdapi.NewConfig()
	config.Clusters["local"] = &clientcmdapi.Cluster{Server: cluster.Config.Host, CertificateAuthorityData: ca}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user, Namespace: ns}
	config.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitControllerReady waits until the controller answers /readyz with 200
// (its caches are synced) and, when it serves the conversion webhook, the
// stand-in for the webhook's Service sends it calls.
func waitControllerReady(t *testing.T, c *framework.Controller) {
	t.Helper()
	eventually(t, convergeTimeout, c.Name+" /readyz", func(ctx context.Context) (bool, error) {
		if c.Exited() {
			return false, fmt.Errorf("controller exited: %s", framework.Trim(c.Log(), 2000))
		}
		code, body, err := c.Probe(ctx, "/readyz")
		if err != nil {
			return false, err
		}
		if code != http.StatusOK {
			return false, fmt.Errorf("/readyz: %d: %s", code, body)
		}
		if !cluster.WebhookEndpointReady(c) {
			return false, errors.New("ready, but not yet an endpoint of the webhook's Service")
		}
		return true, nil
	})
}

// scrape reads the controller's /metrics.
func scrape(t *testing.T, c *framework.Controller) []framework.Sample {
	t.Helper()
	return scrapeURL(t, c.MetricsURL())
}

// scrapeURL is scrape of the controller serving metricsURL.
func scrapeURL(t *testing.T, metricsURL string) []framework.Sample {
	t.Helper()
	var samples []framework.Sample
	eventually(t, time.Minute, "the controller's metrics", func(ctx context.Context) (bool, error) {
		var err error
		samples, err = framework.ScrapeURL(ctx, metricsURL)
		return err == nil, err
	})
	return samples
}

// writeRequests is the controller's write requests to the API server.
func writeRequests(samples []framework.Sample) float64 {
	return framework.Sum(samples, "rest_client_requests_total", func(l map[string]string) bool {
		return framework.IsWriteVerb(l["method"])
	}) - scrapeReviews(samples)
}

// createRequests is the controller's create (POST) requests.
func createRequests(samples []framework.Sample) float64 {
	return framework.Sum(samples, "rest_client_requests_total", func(l map[string]string) bool {
		return l["method"] == "POST"
	}) - scrapeReviews(samples)
}

// scrapeReviews is the TokenReviews and SubjectAccessReviews that checked
// scrapes of /metrics (apiserver_delegated_authn_request_total and
// apiserver_delegated_authz_request_total). They are creates too, counted by
// rest_client_requests_total with the controller's own, but they are the
// scrapes' cost: the counts above leave them out.
func scrapeReviews(samples []framework.Sample) float64 {
	all := func(map[string]string) bool { return true }
	return framework.Sum(samples, "apiserver_delegated_authn_request_total", all) +
		framework.Sum(samples, "apiserver_delegated_authz_request_total", all)
}

// reconciles sums the controller's Foo syncs with the given result
// ("success", "error"; "" for all).
func reconciles(samples []framework.Sample, result string) float64 {
	return framework.Sum(samples, metrics.Subsystem+"_reconcile_total", func(l map[string]string) bool {
		return result == "" || l["result"] == result
	})
}

// expectExitSaying waits for the controller to exit, and fails the test
// unless it exited non-zero with every one of wants in its log.
func expectExitSaying(t *testing.T, c *framework.Controller, timeout time.Duration, wants ...string) {
	t.Helper()
	code, err := c.Wait(timeout)
	if err != nil {
		t.Fatalf("waiting for the controller to exit: %v", err)
	}
	log := c.Log()
	if code == 0 {
		t.Fatalf("exit code 0, want non-zero; log:\n%s", framework.Trim(log, 3000))
	}
	for _, want := range wants {
		if !strings.Contains(log, want) {
			t.Errorf("log does not say %q:\n%s", want, framework.Trim(log, 3000))
		}
	}
	t.Logf("exit code %d", code)
}

// queueDepth is workqueue_depth of the controller's Foo queues: the one
// workers take from and the backlog behind it.
func queueDepth(samples []framework.Sample) float64 {
	return framework.Sum(samples, "workqueue_depth", func(l map[string]string) bool {
		return l["name"] == freshfirst.QueueName || l["name"] == freshfirst.BacklogQueueName
	})
}

// leaderGauge returns leader_election_master_status{name=id} and whether
// the series is there at all.
func leaderGauge(samples []framework.Sample, id string) (float64, bool) {
	for _, s := range samples {
		if s.Name == "leader_election_master_status" && s.Labels["name"] == id {
			return s.Value, true
		}
	}
	return 0, false
}

// grepLines returns the lines of text that re matches.
func grepLines(text string, re *regexp.Regexp) []string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if re.MatchString(line) {
			lines = append(lines, line)
		}
	}
	return lines
}

var identityRE = regexp.MustCompile(`"Waiting to become leader".* identity="([^"]+)"`)

// leaderElectionIdentity returns the holderIdentity the controller uses in
// the Lease, from its start-up log line.
func leaderElectionIdentity(t *testing.T, c *framework.Controller) string {
	t.Helper()
	return identityFromLog(t, c, identityRE)
}

// identityFromLog waits for the controller to log the line re matches, and
// returns the identity re captures.
func identityFromLog(t *testing.T, c *framework.Controller, re *regexp.Regexp) string {
	t.Helper()
	var identity string
	eventually(t, convergeTimeout, c.Name+" to log its identity", func(context.Context) (bool, error) {
		if m := re.FindStringSubmatch(c.Log()); m != nil {
			identity = m[1]
			return true, nil
		}
		if c.Exited() {
			return false, fmt.Errorf("controller exited: %s", framework.Trim(c.Log(), 2000))
		}
		return false, nil
	})
	return identity
}

func leaseHolderOf(lease *coordinationv1.Lease) string {
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func describeLease(lease *coordinationv1.Lease) string {
	s := lease.Spec
	transitions := "<nil>"
	if s.LeaseTransitions != nil {
		transitions = fmt.Sprint(*s.LeaseTransitions)
	}
	format := func(t *metav1.MicroTime) string {
		if t == nil {
			return "<nil>"
		}
		return t.Format("15:04:05.000")
	}
	return fmt.Sprintf("%s/%s{holder=%q transitions=%s acquired=%s renewed=%s}",
		lease.Namespace, lease.Name, leaseHolderOf(lease), transitions, format(s.AcquireTime), format(s.RenewTime))
}
