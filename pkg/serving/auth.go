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

package serving

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// The metrics server delegates every decision to the API server, as
// kube-controller-manager does for its own /metrics: a bearer token is
// checked with a TokenReview, and the user it names with a SubjectAccessReview
// for the non-resource URL asked for (verb get on /metrics). Whoever may read
// /metrics is then decided by RBAC, e.g. the metrics-reader ClusterRole of
// artifacts/deploy bound to Prometheus' ServiceAccount.
//
// The values are those of kube-controller-manager (k8s.io/apiserver's
// DelegatingAuthenticationOptions and DelegatingAuthorizationOptions).
const (
	// metricsAuthCacheTTL is how long an answer, yes or no, to a TokenReview
	// or a SubjectAccessReview is reused. A scraper asks every 15 to 60 s,
	// so most scrapes cost the API server nothing, and a revoked binding
	// stops working within 10 s.
	metricsAuthCacheTTL = 10 * time.Second
	// metricsAuthTimeout bounds one review request to the API server.
	metricsAuthTimeout = 10 * time.Second
)

// metricsAuthRetryBackoff makes one attempt at each review, no retry: a
// review that failed fails the request (500, or 429 when refused,
// reviewlimit.go), and the scraper tries again at its next scrape.
// k8s.io/apiserver's DefaultAuthWebhookRetryBackoff (5 attempts over about
// 4 s) is for an API server's callers; here every retry of a review the API
// server could not answer would be one more request, under the
// controller's own user, to an API server already short of seats.
func metricsAuthRetryBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 1}
}

// metricsAuthClientConfig is the client configuration for the reviews: a
// client and limits of their own (CopyConfig would share kubeCfg's
// limiter), so that a scrape is never held behind the client-side rate limit
// of a busy controller, and a timeout so that a slow API server fails the
// scrape rather than hanging it. Its limits are limiter's, tried without
// waiting (reviewlimit.go); client-go's own waiting limiter is off. The
// reviews are few: at most two per scraper per cache TTL.
func metricsAuthClientConfig(kubeCfg *rest.Config, limiter *reviewLimiter) *rest.Config {
	cfg := rest.CopyConfig(kubeCfg)
	// Not rest.AddUserAgent, which starts again from the binary's name.
	cfg.UserAgent = kubeCfg.UserAgent + "/metrics-auth"
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil // QPS 0 would be client-go's default limiter
	cfg.WrapTransport = transport.Wrappers(kubeCfg.WrapTransport, limiter.wrap)
	cfg.Timeout = metricsAuthTimeout
	return cfg
}

// newMetricsAuth builds the delegating authenticator (TokenReview) and
// authorizer (SubjectAccessReview) that guard /metrics, both caching their
// answers for metricsAuthCacheTTL.
func newMetricsAuth(client kubernetes.Interface) (authenticator.Request, authorizer.Authorizer, error) {
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		// No Anonymous: a request without a valid token is refused, never
		// treated as system:anonymous. No APIAudiences: see
		// withDelegatedAuth.
		TokenAccessReviewClient:  client.AuthenticationV1(),
		TokenAccessReviewTimeout: metricsAuthTimeout,
		WebhookRetryBackoff:      metricsAuthRetryBackoff(),
		CacheTTL:                 metricsAuthCacheTTL,
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("metrics authentication: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client.AuthorizationV1(),
		AllowCacheTTL:             metricsAuthCacheTTL,
		DenyCacheTTL:              metricsAuthCacheTTL,
		WebhookRetryBackoff:       metricsAuthRetryBackoff(),
	}.New()
	if err != nil {
		return nil, nil, fmt.Errorf("metrics authorization: %w", err)
	}
	return authn, authz, nil
}

// metricsAudiences are the audiences a scraper's token must be issued for:
// the controller's own, samplecontroller.MetricsAudience, alone. A token for
// the API server (a pod's default token, a plain "kubectl create token") is
// refused, so a token a scraper holds for /metrics cannot be replayed
// against the API server, and a token stolen for the API server, nor one a
// rogue endpoint behind the Service collects, does not open /metrics.
var metricsAudiences = authenticator.Audiences{samplecontroller.MetricsAudience}

// withDelegatedAuth answers 401 to a request whose bearer token the API
// server does not vouch for (or that has none) or vouches for but not for
// audiences, 403 to one whose user may not use the method on the path, and
// passes the others to next. The request is a non-resource request: GET
// /metrics is checked as verb get on the non-resource URL /metrics, as the
// API server would check it.
//
// The audiences go in the request's context, as kube-apiserver's own
// authentication filter puts its --api-audiences there: the delegating
// token authenticator then sends them as the TokenReview's spec.audiences,
// and accepts the token only if the review's status.audiences intersect
// them. The authenticator is built with no implicit audiences
// (DelegatingAuthenticatorConfig.APIAudiences), so a review that answers
// without status.audiences, from an authenticator that ignores audiences,
// does not count as one for the metrics audience. The intersection is
// checked once more here, on the answer.
func withDelegatedAuth(
	authn authenticator.Request, authz authorizer.Authorizer, audiences authenticator.Audiences, next http.Handler,
) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger := klog.FromContext(r.Context())
		r = r.WithContext(authenticator.WithAudiences(r.Context(), audiences))
		resp, ok, err := authn.AuthenticateRequest(r)
		if writeReviewRefused(w, err) {
			return
		}
		if err == nil && ok && len(audiences.Intersect(resp.Audiences)) == 0 {
			ok, err = false, fmt.Errorf("token audiences %q are not %q", resp.Audiences, audiences)
		}
		if err != nil || !ok {
			// A missing token is the normal case of an unconfigured scraper;
			// its details are for debugging only.
			logger.V(4).Info("Metrics request not authenticated", "remoteAddr", r.RemoteAddr, "err", err)
			http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
			return
		}
		attrs := authorizer.AttributesRecord{
			User:            resp.User,
			Verb:            strings.ToLower(r.Method),
			Path:            r.URL.Path,
			ResourceRequest: false,
		}
		decision, reason, err := authz.Authorize(r.Context(), attrs)
		if writeReviewRefused(w, err) {
			return
		}
		if err != nil {
			// The SubjectAccessReview itself failed (after retries): neither
			// yes nor no, so the caller may try again.
			logger.Error(err, "Authorizing a metrics request",
				"user", resp.User.GetName(), "verb", attrs.Verb, "path", attrs.Path)
			http.Error(w, "authorization failed, try again", http.StatusInternalServerError)
			return
		}
		if decision != authorizer.DecisionAllow {
			logger.V(4).Info("Metrics request denied",
				"user", resp.User.GetName(), "verb", attrs.Verb, "path", attrs.Path, "reason", reason)
			http.Error(w, http.StatusText(http.StatusForbidden), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}
