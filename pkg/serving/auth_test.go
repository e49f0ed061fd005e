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
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

const (
	readerToken   = "token-of-prometheus"
	readerUser    = "system:serviceaccount:monitoring:prometheus"
	profilerToken = "token-of-a-profiler"
	profilerUser  = "system:serviceaccount:default:profiler"
	otherToken    = "token-of-someone-else"
	otherUser     = "system:serviceaccount:default:someone-else"
	// readerAPIToken is readerUser's token for the API server alone, as a
	// pod's default token or a plain "kubectl create token".
	readerAPIToken = "token-of-prometheus-for-the-api-server"
	// agnosticToken is one the API server authenticates without saying for
	// which audiences (status.audiences empty), as an authenticator that
	// ignores audiences would answer.
	agnosticToken = "token-without-audiences"
	// apiServerAudience is the API server's own audience (its
	// --api-audiences), what a TokenReview without spec.audiences asks for.
	apiServerAudience = "https://kubernetes.default.svc"
)

// tokenAudience is whom each token was issued for.
var tokenAudience = map[string]string{
	readerToken: samplecontroller.MetricsAudience, profilerToken: samplecontroller.MetricsAudience,
	otherToken: samplecontroller.MetricsAudience, readerAPIToken: apiServerAudience,
}

// nonResourceGrants is what RBAC grants each user: verb get on these
// non-resource URLs. readerUser has the metrics-reader ClusterRole;
// profilerUser has the profile-reader ClusterRole of docs/monitoring.md.
var nonResourceGrants = map[string][]string{
	readerUser:   {"/metrics"},
	profilerUser: {"/debug/pprof/*"},
}

// nonResourceURLMatches is RBAC's rule for nonResourceURLs
// (k8s.io/kubernetes/pkg/apis/rbac/v1.NonResourceURLMatches): equal, or a
// prefix when the rule ends in "*".
func nonResourceURLMatches(rule, path string) bool {
	return rule == "*" || rule == path ||
		(strings.HasSuffix(rule, "*") && strings.HasPrefix(path, strings.TrimSuffix(rule, "*")))
}

// reviewingClientset is a fake clientset whose reactors play the API
// server's part: TokenReviews know five tokens and, as kube-apiserver does,
// authenticate one only for the audiences asked for (spec.audiences, or its
// own when none are) that it was issued for, and say which in
// status.audiences (agnosticToken excepted); SubjectAccessReviews allow get
// on the non-resource URLs of nonResourceGrants, as RBAC would, and nothing
// else.
func reviewingClientset() *fake.Clientset {
	users := map[string]string{readerToken: readerUser, profilerToken: profilerUser, otherToken: otherUser,
		readerAPIToken: readerUser, agnosticToken: readerUser}
	client := fake.NewClientset()
	client.PrependReactor("create", "tokenreviews", func(action core.Action) (bool, runtime.Object, error) {
		review := action.(core.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		user, ok := users[review.Spec.Token]
		if !ok {
			return true, review, nil
		}
		status := authenticationv1.TokenReviewStatus{
			Authenticated: true,
			User:          authenticationv1.UserInfo{Username: user, Groups: []string{"system:serviceaccounts"}},
		}
		if review.Spec.Token != agnosticToken {
			asked := review.Spec.Audiences
			if len(asked) == 0 {
				asked = []string{apiServerAudience}
			}
			if !slices.Contains(asked, tokenAudience[review.Spec.Token]) {
				review.Status.Error = "token audiences are invalid for the target audiences"
				return true, review, nil
			}
			status.Audiences = []string{tokenAudience[review.Spec.Token]}
		}
		review.Status = status
		return true, review, nil
	})
	client.PrependReactor("create", "subjectaccessreviews", func(action core.Action) (bool, runtime.Object, error) {
		review := action.(core.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		if nr := review.Spec.NonResourceAttributes; nr != nil && nr.Verb == "get" {
			for _, rule := range nonResourceGrants[review.Spec.User] {
				review.Status.Allowed = review.Status.Allowed || nonResourceURLMatches(rule, nr.Path)
			}
		}
		return true, review, nil
	})
	return client
}

// reviewServer is an API server that answers the reviews sent to it with the
// fake clientset, which records them as actions. The delegating
// authenticator and authorizer post their reviews through the typed
// clients' RESTClient, which a fake clientset does not have, so they must be
// given a real clientset talking HTTP; this is where it talks to.
func reviewServer(t *testing.T, fakeClient *fake.Clientset) kubernetes.Interface {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("POST /apis/authentication.k8s.io/v1/tokenreviews",
		answerReview(fakeClient.AuthenticationV1().TokenReviews().Create))
	mux.Handle("POST /apis/authorization.k8s.io/v1/subjectaccessreviews",
		answerReview(fakeClient.AuthorizationV1().SubjectAccessReviews().Create))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// answerReview decodes a posted review, has create answer it, and writes the
// answer back.
func answerReview[T runtime.Object](create func(context.Context, T, metav1.CreateOptions) (T, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review T
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer, err := create(r.Context(), review, metav1.CreateOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	})
}

// guardedServer serves a stand-in for /metrics behind withDelegatedAuth,
// with a fresh authenticator and authorizer (so fresh caches) asking the
// reviewing fake clientset it returns.
func guardedServer(t *testing.T) (*httptest.Server, *fake.Clientset) {
	t.Helper()
	return guardedServerOf(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "samplecontroller_reconcile_total 1\n")
	}))
}

// guardedServerOf is guardedServer serving handler.
func guardedServerOf(t *testing.T, handler http.Handler) (*httptest.Server, *fake.Clientset) {
	t.Helper()
	fakeClient := reviewingClientset()
	authn, authz, err := newMetricsAuth(reviewServer(t, fakeClient))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(withDelegatedAuth(authn, authz, metricsAudiences, handler))
	t.Cleanup(srv.Close)
	return srv, fakeClient
}

// getMetrics GETs /metrics with an optional bearer token and returns the
// status code and body.
func getMetrics(t *testing.T, srv *httptest.Server, token string) (int, string) {
	t.Helper()
	return getPath(t, srv, "/metrics", token)
}

// getPath GETs path with an optional bearer token, following redirects, and
// returns the status code and body.
func getPath(t *testing.T, srv *httptest.Server, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// review is what one action sent: the token of a TokenReview, or the user,
// groups and non-resource attributes of a SubjectAccessReview.
type review struct {
	resource string
	token    string
	user     string
	groups   []string
	nonRes   authorizationv1.NonResourceAttributes
}

// reviewsSent lists the reviews in the fake clientset's actions, failing on
// any action that is not the create of a review.
func reviewsSent(t *testing.T, client *fake.Clientset) []review {
	t.Helper()
	var out []review
	for _, a := range client.Actions() {
		create, ok := a.(core.CreateAction)
		if !ok || a.GetVerb() != "create" {
			t.Errorf("unexpected action %s %s", a.GetVerb(), a.GetResource())
			continue
		}
		switch obj := create.GetObject().(type) {
		case *authenticationv1.TokenReview:
			// Every review asks for the metrics audience alone.
			if want := []string{samplecontroller.MetricsAudience}; !slices.Equal(obj.Spec.Audiences, want) {
				t.Errorf("TokenReview of %q asks for audiences %q, want %q", obj.Spec.Token, obj.Spec.Audiences, want)
			}
			out = append(out, review{resource: "tokenreviews", token: obj.Spec.Token})
		case *authorizationv1.SubjectAccessReview:
			r := review{resource: "subjectaccessreviews", user: obj.Spec.User, groups: obj.Spec.Groups}
			if obj.Spec.NonResourceAttributes != nil {
				r.nonRes = *obj.Spec.NonResourceAttributes
			} else {
				t.Errorf("SubjectAccessReview of a resource: %+v", obj.Spec.ResourceAttributes)
			}
			out = append(out, r)
		default:
			t.Errorf("unexpected create of %s", a.GetResource())
		}
	}
	return out
}

func TestMetricsAuthStatusAndReviews(t *testing.T) {
	getMetricsReview := authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}
	// The authenticator adds system:authenticated to the groups the
	// TokenReview returned, as the API server does.
	groups := []string{"system:serviceaccounts", "system:authenticated"}
	for _, tc := range []struct {
		name        string
		token       string
		wantCode    int
		wantReviews []review
	}{
		{
			name:     "no token is 401 without asking the API server",
			wantCode: http.StatusUnauthorized,
		},
		{
			name:        "unknown token is 401 after a TokenReview",
			token:       "not-a-token",
			wantCode:    http.StatusUnauthorized,
			wantReviews: []review{{resource: "tokenreviews", token: "not-a-token"}},
		},
		{
			name:        "token of a metrics reader for the API server's audience alone is 401",
			token:       readerAPIToken,
			wantCode:    http.StatusUnauthorized,
			wantReviews: []review{{resource: "tokenreviews", token: readerAPIToken}},
		},
		{
			name:        "token authenticated without audiences is 401",
			token:       agnosticToken,
			wantCode:    http.StatusUnauthorized,
			wantReviews: []review{{resource: "tokenreviews", token: agnosticToken}},
		},
		{
			name:     "user without get on /metrics is 403",
			token:    otherToken,
			wantCode: http.StatusForbidden,
			wantReviews: []review{
				{resource: "tokenreviews", token: otherToken},
				{resource: "subjectaccessreviews", user: otherUser, groups: groups, nonRes: getMetricsReview},
			},
		},
		{
			name:     "user allowed to get /metrics is 200",
			token:    readerToken,
			wantCode: http.StatusOK,
			wantReviews: []review{
				{resource: "tokenreviews", token: readerToken},
				{resource: "subjectaccessreviews", user: readerUser, groups: groups, nonRes: getMetricsReview},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, fakeClient := guardedServer(t)
			code, body := getMetrics(t, srv, tc.token)
			if code != tc.wantCode {
				t.Errorf("status %d, want %d; body %q", code, tc.wantCode, body)
			}
			if wantBody := code == http.StatusOK; wantBody != (body == "samplecontroller_reconcile_total 1\n") {
				t.Errorf("status %d with body %q", code, body)
			}
			if got := reviewsSent(t, fakeClient); !reflect.DeepEqual(got, tc.wantReviews) {
				t.Errorf("reviews sent:\n%+v\nwant:\n%+v", got, tc.wantReviews)
			}
		})
	}
}

// A scraper asks every few seconds; within the cache TTL its requests cost
// the API server nothing, whether they are allowed or denied.
func TestMetricsAuthCachesReviews(t *testing.T) {
	srv, fakeClient := guardedServer(t)
	for _, token := range []string{readerToken, otherToken} {
		for range 3 {
			getMetrics(t, srv, token)
		}
	}
	if n := len(reviewsSent(t, fakeClient)); n != 4 {
		t.Errorf("%d reviews for 3 requests each of 2 users, want 4 (one TokenReview and one SubjectAccessReview per user)", n)
	}
}

// Other methods are other verbs: get on /metrics does not allow them.
func TestMetricsAuthChecksTheRequestVerb(t *testing.T) {
	srv, fakeClient := guardedServer(t)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+readerToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /metrics: %d, want 403", resp.StatusCode)
	}
	reviews := reviewsSent(t, fakeClient)
	if len(reviews) != 2 || reviews[1].nonRes != (authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "post"}) {
		t.Errorf("reviews sent: %+v, want a SubjectAccessReview of post /metrics", reviews)
	}
}

// With profiling on, each profile is authorized on its own path: the
// SubjectAccessReview names the request path, so RBAC's /debug/pprof/*
// grants the profiles, and get on /metrics does not.
func TestProfilesAreAuthorizedOnTheirOwnPath(t *testing.T) {
	for _, tc := range []struct {
		name, token, path string
		wantCode          int
	}{
		{name: "profile reader gets the index", token: profilerToken, path: "/debug/pprof/", wantCode: http.StatusOK},
		{name: "profile reader gets the heap profile", token: profilerToken, path: "/debug/pprof/heap", wantCode: http.StatusOK},
		{name: "metrics reader is refused the heap profile", token: readerToken, path: "/debug/pprof/heap", wantCode: http.StatusForbidden},
		{name: "profile reader is refused /metrics", token: profilerToken, path: "/metrics", wantCode: http.StatusForbidden},
		// The mux would redirect it to /debug/pprof/, but it is refused
		// first: /debug/pprof/* does not match it.
		{name: "without the trailing slash is not under /debug/pprof/*", token: profilerToken, path: "/debug/pprof", wantCode: http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, fakeClient := guardedServerOf(t, metricsHandler(true))
			code, body := getPath(t, srv, tc.path, tc.token)
			if code != tc.wantCode {
				t.Errorf("GET %s: status %d, want %d; body %.200q", tc.path, code, tc.wantCode, body)
			}
			reviews := reviewsSent(t, fakeClient)
			want := authorizationv1.NonResourceAttributes{Path: tc.path, Verb: "get"}
			if len(reviews) != 2 || reviews[1].nonRes != want {
				t.Errorf("reviews sent: %+v, want a TokenReview and a SubjectAccessReview of %+v", reviews, want)
			}
		})
	}
}

// The review names the path as requested, so a path with ".." could match a
// prefix rule it leads out of; the mux serves only clean paths, redirecting
// the others, and the redirect is authorized on its own.
func TestDotDotOutOfAProfilePathIsAuthorizedWhereItLeads(t *testing.T) {
	srv, fakeClient := guardedServerOf(t, metricsHandler(true))
	code, body := getPath(t, srv, "/debug/pprof/../../metrics", profilerToken)
	if code != http.StatusForbidden {
		t.Errorf("status %d, want 403; body %.200q", code, body)
	}
	var paths []string
	for _, r := range reviewsSent(t, fakeClient) {
		if r.resource == "subjectaccessreviews" {
			paths = append(paths, r.nonRes.Path)
		}
	}
	if len(paths) == 0 || paths[len(paths)-1] != "/metrics" {
		t.Errorf("SubjectAccessReviews of %q, want the last one of /metrics", paths)
	}
}

// The reviews' client must not share the controller's rate limiter, nor
// wait forever on a slow API server.
func TestMetricsAuthClientHasItsOwnLimiterAndTimeout(t *testing.T) {
	kubeCfg := &rest.Config{Host: "https://example.invalid", QPS: 5, Burst: 10, UserAgent: "sample-controller"}
	kubeCfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(kubeCfg.QPS, kubeCfg.Burst)
	cfg := metricsAuthClientConfig(kubeCfg, newReviewLimiter(1, 1, 1))
	if cfg.RateLimiter != nil || cfg.QPS >= 0 {
		t.Errorf("the reviews have client-go's waiting rate limiter (QPS %v, limiter %v), not only their own", cfg.QPS, cfg.RateLimiter)
	}
	if cfg.WrapTransport == nil {
		t.Error("the reviews' transport is not limited")
	}
	if cfg.Timeout != metricsAuthTimeout || cfg.UserAgent != "sample-controller/metrics-auth" || cfg.Host != kubeCfg.Host {
		t.Errorf("config: timeout %v, user agent %q, host %q", cfg.Timeout, cfg.UserAgent, cfg.Host)
	}
	if kubeCfg.Timeout != 0 || kubeCfg.UserAgent != "sample-controller" {
		t.Error("the controller's config was modified")
	}
}
