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

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/serving"
	"github.com/kube-samples/sample-controller/test/framework"
)

const (
	// The replicas' leader election, short so that the flood outlasts
	// several lease durations within a minute.
	floodLeaseDuration = 6 * time.Second
	floodRenewDeadline = 4 * time.Second
	floodRetryPeriod   = time.Second
	// floodAtLeast is how long the flood lasts at least: two and a half
	// lease durations. It goes on until the Foo changed in it is applied.
	floodAtLeast = 15 * time.Second
	// floodCap ends a flood whose Foo was never applied: the test fails.
	floodCap = 3 * time.Minute
	// flooders per replica, each sending a new random token per request:
	// fewer than the metrics server's connections (32), so that a scraper
	// is not kept out of the port.
	flooders = 24
)

// A flood of /metrics requests, each with a new random bearer token, from
// many clients at both replicas, for longer than a lease duration, while
// the controller's ServiceAccount has few seats at the API server (the
// throttle of the fault tests, a busy cluster's share): the leader keeps its
// Lease (same holder, no renewal gap as long as its fence window, no
// transition), and applies a Foo changed during the flood. What keeps it:
// the FlowSchema of artifacts/deploy sends the Lease requests to the
// leader-election priority level, away from the reviews, and each replica
// sends a bounded number of reviews, answering the rest 429.
func TestLeaderKeepsLeaseThroughMetricsFlood(t *testing.T) {
	ensureStandardCRD(t)
	applyDeployArtifacts(t)
	kubeconfig := serviceAccountKubeconfig(t, deployNamespace, deployServiceAccount)
	level := throttleServiceAccount(t)
	ns := newNamespace(t, "flood")
	leases := cluster.Kube.CoordinationV1().Leases(deployNamespace)

	start := func(name string) *replica {
		c := startController(t, name, "-kubeconfig="+kubeconfig, "-namespace="+ns,
			"-leader-elect=true", "-leader-elect-namespace="+deployNamespace, "-leader-elect-id="+deployName,
			"-webhook-namespace="+deployNamespace, // where the webhook Role lets it keep its CA
			"-leader-elect-lease-duration="+floodLeaseDuration.String(),
			"-leader-elect-renew-deadline="+floodRenewDeadline.String(),
			"-leader-elect-retry-period="+floodRetryPeriod.String())
		return &replica{Controller: c, identity: leaderElectionIdentity(t, c)}
	}
	replicas := []*replica{start("replica-a"), start("replica-b")}
	for _, r := range replicas {
		waitControllerReady(t, r.Controller)
	}
	var leader *replica
	eventually(t, convergeTimeout, "a leader", func(ctx context.Context) (bool, error) {
		lease, err := leases.Get(ctx, deployName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, r := range replicas {
			if leaseHolderOf(lease) == r.identity {
				leader = r
				return true, nil
			}
		}
		return false, fmt.Errorf("lease %s", describeLease(lease))
	})
	foo := createFoo(t, newFoo(ns, "flooded", "flooded", int32p(1)))
	waitFooReady(t, ns, foo.Name)
	before, err := leases.Get(context.Background(), deployName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	apiBefore, err := cluster.ScrapeAPIServer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s leads: lease %s", leader.Name, describeLease(before))

	// The Lease, read by the admin until the flood is over.
	sampler := sampleLease(t, leases, deployName)

	// The flood.
	flooding, stopFlood := context.WithCancel(context.Background())
	var codes sync.Map     // status code (or noAnswer, closedByServer) → *atomic.Int64
	var firstErrs sync.Map // noAnswer, closedByServer → the first such error
	var flood sync.WaitGroup
	floodStart := time.Now()
	// Each flooder keeps its connection, so that its requests cost it no
	// TLS handshake: as many as this machine can send.
	floodClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the replicas' self-signed certificates
		MaxIdleConnsPerHost: flooders,
	}}
	for _, r := range replicas {
		url := r.MetricsURL()
		for range flooders {
			flood.Go(func() {
				for flooding.Err() == nil {
					code, err := fetchWithToken(flooding, floodClient, url, randomToken())
					if flooding.Err() != nil {
						return // cut short by the end of the flood
					}
					if err != nil {
						code = noAnswer
						if connectionClosedByServer(err) {
							code = closedByServer
						}
						firstErrs.LoadOrStore(code, err)
					}
					n, _ := codes.LoadOrStore(code, new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
				}
			})
		}
	}
	t.Cleanup(func() { stopFlood(); flood.Wait() })

	// A lease duration into the flood, the user scales the Foo; the flood
	// goes on until its Deployment follows, and at least floodAtLeast.
	time.Sleep(floodLeaseDuration)
	patch := []byte(`{"spec":{"replicas":3}}`)
	if _, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Patch(context.Background(), foo.Name,
		types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	scaled := time.Now()
	var followed time.Duration
	eventually(t, floodCap, "the Deployment to follow the Foo, during the flood", func(ctx context.Context) (bool, error) {
		d, err := cluster.Kube.AppsV1().Deployments(ns).Get(ctx, "flooded", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
			return false, fmt.Errorf("Deployment replicas %v, want 3", d.Spec.Replicas)
		}
		followed = time.Since(scaled)
		return true, nil
	})
	if rest := floodAtLeast - time.Since(floodStart); rest > 0 {
		time.Sleep(rest)
	}
	stopFlood()
	flood.Wait()
	flooded := time.Since(floodStart)
	// One more renewal after the flood, then the Lease is judged.
	time.Sleep(2 * floodRetryPeriod)
	observed := sampler.Stop()

	answers := map[int]int64{}
	codes.Range(func(k, v any) bool {
		answers[k.(int)] = v.(*atomic.Int64).Load()
		return true
	})
	apiAfter, err := cluster.ScrapeAPIServer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tokenReviews := apiRequests(apiAfter, "tokenreviews") - apiRequests(apiBefore, "tokenreviews")
	rejected := rejectedRequests(apiAfter, level) - rejectedRequests(apiBefore, level)
	t.Logf("flood of %v by %d clients: answers by status %v (%d: no answer, %d: the server closed the "+
		"connection); the Deployment followed the Foo %v after it was scaled; "+
		"the API server was sent %.0f TokenReviews, and rejected %.0f requests of priority level %s",
		flooded.Round(100*time.Millisecond), len(replicas)*flooders, answers, noAnswer, closedByServer,
		followed.Round(100*time.Millisecond),
		tokenReviews, rejected, level)

	// The leader kept its Lease throughout.
	expectRenewedThroughout(t, before, observed, floodRenewDeadline+floodRetryPeriod)
	for _, r := range replicas {
		if r.Exited() {
			t.Errorf("%s exited during the flood", r.Name)
		}
		if lost := grepLines(r.Log(), lostLeadershipRE); len(lost) > 0 {
			t.Errorf("%s: %q", r.Name, lost)
		}
	}

	// The flood was answered, 401 or 429, never let in. A kept-alive
	// connection may be closed under a request sent on it: past its
	// connection limit the port sheds the oldest idle one (pkg/serving),
	// and a client sends the request again on a new connection.
	if answers[http.StatusUnauthorized] == 0 || answers[http.StatusTooManyRequests] == 0 {
		t.Errorf("answers by status %v: want both 401s (tokens reviewed and refused) and 429s (reviews past the bounds)", answers)
	}
	for code, n := range answers {
		switch code {
		case http.StatusUnauthorized, http.StatusTooManyRequests:
		case closedByServer:
			err, _ := firstErrs.Load(code)
			t.Logf("%d requests found their connection closed by the server, the first: %v", n, err)
		default:
			err, _ := firstErrs.Load(code)
			t.Errorf("%d answers with status %d to random tokens, want only 401 and 429 (first error, if any: %v)",
				n, code, err)
		}
	}
	// Each replica sends at most its burst and its rate of reviews; the
	// scraper's are a few more.
	const scraperReviews = 10
	bound := float64(len(replicas)) * (serving.MetricsReviewBurst + serving.MetricsReviewQPS*math.Ceil(flooded.Seconds()+2*floodRetryPeriod.Seconds()))
	if tokenReviews > bound+scraperReviews {
		t.Errorf("%.0f TokenReviews in %v, more than %.0f: the reviews are not bounded", tokenReviews, flooded, bound+scraperReviews)
	}
	// The servers stayed up and count what they refused.
	for _, r := range replicas {
		refused := framework.Sum(scrape(t, r.Controller), metrics.Subsystem+"_metrics_reviews_refused_total",
			func(map[string]string) bool { return true })
		t.Logf("%s refused %.0f reviews", r.Name, refused)
		if refused == 0 {
			t.Errorf("%s counted no refused review", r.Name)
		}
	}
	waitFooReady(t, ns, foo.Name)
}

// fetchWithToken GETs url with token and returns the status code, the body
// read and dropped so that the connection is kept.
func fetchWithToken(ctx context.Context, client *http.Client, url, token string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// What a flooder's request got instead of a status code.
const (
	noAnswer       = -1 // an error other than the connection's end
	closedByServer = -2 // the server closed the connection the request was sent on
)

// connectionClosedByServer reports whether err is the end of the
// connection a request was sent on, closed by the server: the transport
// reads EOF or a reset where the answer should be.
func connectionClosedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		strings.Contains(err.Error(), "server closed idle connection")
}

// randomToken is a bearer token nobody issued, new each time: never in the
// metrics server's cache.
func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "flood." + base64.RawURLEncoding.EncodeToString(b)
}

// apiRequests sums apiserver_request_total of a resource.
func apiRequests(samples []framework.Sample, resource string) float64 {
	return framework.Sum(samples, "apiserver_request_total", func(l map[string]string) bool {
		return l["resource"] == resource
	})
}
