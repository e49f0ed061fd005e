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
	"net/http"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/test/framework"
)

// The controller, started as by default, serves /metrics over HTTPS to the
// callers the API server authenticates (TokenReview) and authorizes
// (SubjectAccessReview for get on /metrics); its probes stay plain HTTP
// without authentication, for the kubelet.
func TestMetricsAuthDefaultServesOnlyAuthorizedCallers(t *testing.T) {
	ensureStandardCRD(t)
	ctx := context.Background()
	ns := newNamespace(t, "metrics-auth")
	c := startController(t, "controller", controllerArgs(ns)...)
	waitControllerReady(t, c)
	foo := createFoo(t, newFoo(ns, "scraped", "scraped", nil))
	waitFooReady(t, ns, foo.Name)

	url := c.MetricsURL()
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("metrics served at %q, want https://", url)
	}
	expectStatus := func(t *testing.T, token string, want int) string {
		t.Helper()
		code, body, err := framework.FetchMetrics(ctx, url, token)
		if err != nil {
			t.Fatal(err)
		}
		if code != want {
			t.Fatalf("GET %s: %d %q, want %d", url, code, framework.Trim(body, 300), want)
		}
		return body
	}

	t.Run("no_token_is_401", func(t *testing.T) {
		expectStatus(t, "", http.StatusUnauthorized)
	})
	t.Run("token_the_api_server_rejects_is_401", func(t *testing.T) {
		expectStatus(t, "not-a-token", http.StatusUnauthorized)
	})
	t.Run("serviceaccount_without_metrics_reader_is_403", func(t *testing.T) {
		token, err := cluster.ServiceAccountToken(ctx, ns, "not-a-metrics-reader", samplecontroller.MetricsAudience)
		if err != nil {
			t.Fatal(err)
		}
		expectStatus(t, token, http.StatusForbidden)
	})
	t.Run("serviceaccount_bound_to_metrics_reader_is_200_with_metrics", func(t *testing.T) {
		// As docs/monitoring.md tells an operator to bind Prometheus.
		const sa = "prometheus"
		binding := "e2e-" + ns + "-" + sa
		if err := cluster.BindMetricsReader(ctx, binding, ns, sa); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cluster.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding, metav1.DeleteOptions{})
		})
		token, err := cluster.ServiceAccountToken(ctx, ns, sa, samplecontroller.MetricsAudience)
		if err != nil {
			t.Fatal(err)
		}
		samples, err := framework.ParseMetrics(strings.NewReader(expectStatus(t, token, http.StatusOK)))
		if err != nil {
			t.Fatal(err)
		}
		if got := reconciles(samples, "success"); got < 1 {
			t.Errorf("samplecontroller_reconcile_total{result=\"success\"} = %v after a Foo became Ready, want at least 1", got)
		}
		// The reviews above went to the real API server: the delegating
		// authenticator and authorizer count them by response code.
		authn := framework.Sum(samples, "apiserver_delegated_authn_request_total", func(l map[string]string) bool { return l["code"] == "201" })
		authz := framework.Sum(samples, "apiserver_delegated_authz_request_total", func(l map[string]string) bool { return l["code"] == "201" })
		if authn < 1 || authz < 1 {
			t.Errorf("delegated reviews answered 201: %v TokenReviews, %v SubjectAccessReviews; want at least 1 each", authn, authz)
		}
		t.Logf("reviews sent so far: %v TokenReviews, %v SubjectAccessReviews", authn, authz)
	})
	t.Run("metrics_reader_token_for_the_api_server_alone_is_401_for_the_metrics_audience_200", func(t *testing.T) {
		// A metrics reader's token as "kubectl create token" issues it, for
		// the API server's audience, is refused; the same ServiceAccount's
		// token for the metrics audience is served. The TokenReviews the
		// controller sends are repeated here to show what the API server
		// answers: not authenticated for the metrics audience, and
		// status.audiences naming it when it is.
		const sa = "audience-check"
		binding := "e2e-" + ns + "-" + sa
		if err := cluster.BindMetricsReader(ctx, binding, ns, sa); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cluster.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding, metav1.DeleteOptions{})
		})
		// Creates the ServiceAccount; the tokens used are kubectl's.
		if _, err := cluster.ServiceAccountToken(ctx, ns, sa); err != nil {
			t.Fatal(err)
		}
		apiToken := strings.TrimSpace(kubectl(t, "-n", ns, "create", "token", sa))
		metricsToken := strings.TrimSpace(kubectl(t, "-n", ns, "create", "token", sa, "--audience="+samplecontroller.MetricsAudience))

		review := func(token string) authenticationv1.TokenReviewStatus {
			t.Helper()
			r, err := cluster.Kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
				Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{samplecontroller.MetricsAudience}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return r.Status
		}
		if got := review(apiToken); got.Authenticated || len(got.Audiences) != 0 {
			t.Errorf("TokenReview of the API server's token for %q: authenticated %v, audiences %q; want false, none",
				samplecontroller.MetricsAudience, got.Authenticated, got.Audiences)
		}
		wantUser := "system:serviceaccount:" + ns + ":" + sa
		if got := review(metricsToken); !got.Authenticated || got.User.Username != wantUser ||
			!slices.Equal(got.Audiences, []string{samplecontroller.MetricsAudience}) {
			t.Errorf("TokenReview of the metrics token: authenticated %v as %q, audiences %q; want true, %q, [%q]",
				got.Authenticated, got.User.Username, got.Audiences, wantUser, samplecontroller.MetricsAudience)
		}

		expectStatus(t, apiToken, http.StatusUnauthorized)
		body := expectStatus(t, metricsToken, http.StatusOK)
		if !strings.Contains(body, "samplecontroller_reconcile_total") {
			t.Errorf("200 without the controller's series: %q", framework.Trim(body, 300))
		}
		// And the other way round: the metrics token is no good to the
		// API server, which a scraper's stolen token would otherwise be.
		asScraper, err := kubernetes.NewForConfig(&rest.Config{
			Host: cluster.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cluster.Config.CAData, CAFile: cluster.Config.CAFile},
			BearerToken: metricsToken,
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = asScraper.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("the API server with the metrics token: %v, want 401 Unauthorized", err)
		}
	})
	t.Run("plain_http_on_the_metrics_port_gets_no_metrics", func(t *testing.T) {
		// Go's TLS server answers a plain HTTP request with 400 and closes
		// the connection, which the client may see as a reset instead:
		// either way there is no unencrypted way in, even with a token.
		code, body, err := framework.FetchMetrics(ctx, "http://"+strings.TrimPrefix(url, "https://"), c.ScrapeToken())
		if err == nil && code != http.StatusBadRequest {
			t.Errorf("plain HTTP to the metrics port: %d %q, want 400 or a closed connection", code, framework.Trim(body, 300))
		}
		t.Logf("plain HTTP to the metrics port: code %d, error %v", code, err)
	})
	t.Run("probes_are_plain_http_without_token", func(t *testing.T) {
		if base := c.ProbeURL(); !strings.HasPrefix(base, "http://") {
			t.Fatalf("probes served at %q, want http://", base)
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body, err := c.Probe(ctx, path); err != nil || code != http.StatusOK {
				t.Errorf("%s without a token: %d %q %v, want 200", path, code, body, err)
			}
		}
	})
}

// -metrics-secure=false, for local runs, serves plain HTTP to anyone.
func TestMetricsAuthOffServesPlainHTTPToAnyone(t *testing.T) {
	ensureStandardCRD(t)
	ns := newNamespace(t, "metrics-plain")
	c := startController(t, "controller", controllerArgs(ns, "-metrics-secure=false")...)
	waitControllerReady(t, c)
	url := c.MetricsURL()
	if !strings.HasPrefix(url, "http://") {
		t.Fatalf("metrics served at %q, want http://", url)
	}
	code, body, err := framework.FetchMetrics(context.Background(), url, "")
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK || !strings.Contains(body, "workqueue_depth") {
		t.Errorf("GET %s without a token: %d %q, want 200 with metrics", url, code, framework.Trim(body, 300))
	}
}
