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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	core "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"

	"github.com/kube-samples/sample-controller/pkg/metrics"
)

const (
	// A TokenReview of a token with this prefix is held by the API server
	// stand-in until the test releases it.
	slowTokenPrefix = "slow-"
	// A TokenReview of this token is answered 429, as priority and fairness
	// answers a request past its level's queues.
	throttledToken = "token-the-api-server-throttles"
	// throttledRetryAfter is the Retry-After of that 429, in seconds.
	throttledRetryAfter = 3
)

// limitedReviews is an API server stand-in for the reviews of a metrics
// server whose client goes through a reviewLimiter, as ServeMetrics builds
// it; the fake clientset records every review that reached it.
type limitedReviews struct {
	fake    *fake.Clientset
	held    chan string   // a slow token's review arrived
	release chan struct{} // closed: the slow reviews are answered
}

func newLimitedReviews(t *testing.T) *limitedReviews {
	t.Helper()
	api := &limitedReviews{fake: reviewingClientset(), held: make(chan string, 100), release: make(chan struct{})}
	api.fake.PrependReactor("create", "tokenreviews", func(action core.Action) (bool, runtime.Object, error) {
		if action.(core.CreateAction).GetObject().(*authenticationv1.TokenReview).Spec.Token == throttledToken {
			return true, nil, apierrors.NewTooManyRequests("too many requests, please try again later", throttledRetryAfter)
		}
		return false, nil, nil
	})
	t.Cleanup(func() {
		select {
		case <-api.release:
		default:
			close(api.release)
		}
	})
	return api
}

// guarded serves a stand-in for /metrics behind withDelegatedAuth, with
// fresh caches, whose reviews go through limiter to the stand-in.
func (api *limitedReviews) guarded(t *testing.T, limiter *reviewLimiter) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("POST /apis/authentication.k8s.io/v1/tokenreviews", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if strings.HasPrefix(review.Spec.Token, slowTokenPrefix) {
			api.held <- review.Spec.Token
			<-api.release
		}
		answer, err := api.fake.AuthenticationV1().TokenReviews().Create(r.Context(), &review, metav1.CreateOptions{})
		writeAnswer(w, answer, err)
	}))
	mux.Handle("POST /apis/authorization.k8s.io/v1/subjectaccessreviews",
		answerReview(api.fake.AuthorizationV1().SubjectAccessReviews().Create))
	apiServer := httptest.NewServer(mux)
	t.Cleanup(apiServer.Close)
	client, err := kubernetes.NewForConfig(metricsAuthClientConfig(&rest.Config{Host: apiServer.URL}, limiter))
	if err != nil {
		t.Fatal(err)
	}
	authn, authz, err := newMetricsAuth(client)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(withDelegatedAuth(authn, authz, metricsAudiences, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "samplecontroller_reconcile_total 1\n")
	})))
	t.Cleanup(srv.Close)
	return srv
}

// writeAnswer writes a review's answer, or its error as the API server
// would: the status code, and a Retry-After when the status asks for one.
func writeAnswer(w http.ResponseWriter, answer runtime.Object, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if d := status.Status().Details; d != nil && d.RetryAfterSeconds > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(d.RetryAfterSeconds)))
		}
		w.WriteHeader(int(status.Status().Code))
		_ = json.NewEncoder(w).Encode(status.Status())
		return
	}
	_ = json.NewEncoder(w).Encode(answer)
}

// answered is what a GET of /metrics got.
type answered struct {
	code       int
	retryAfter string
}

// get GETs /metrics with token; an error, not t.Fatal, so that goroutines
// may call it.
func get(srv *httptest.Server, token string) (answered, error) {
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		return answered{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := srv.Client().Do(req)
	if err != nil {
		return answered{}, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return answered{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}, nil
}

// expectGet GETs /metrics with token and expects want.
func expectGet(t *testing.T, srv *httptest.Server, token string, want answered) {
	t.Helper()
	got, err := get(srv, token)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("GET /metrics with %q: %+v, want %+v", token, got, want)
	}
}

var (
	ok200        = answered{code: http.StatusOK}
	unauthorized = answered{code: http.StatusUnauthorized}
	refused429   = answered{code: http.StatusTooManyRequests, retryAfter: "1"}
)

// refusedSoFar is samplecontroller_metrics_reviews_refused_total{reason}.
func refusedSoFar(t *testing.T, reason string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.MetricsReviewsRefused.WithLabelValues(reason))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tokensReviewed lists, sorted, the tokens of the TokenReviews sent, and
// counts the SubjectAccessReviews.
func tokensReviewed(t *testing.T, client *fake.Clientset) (tokens []string, accessReviews int) {
	t.Helper()
	for _, r := range reviewsSent(t, client) {
		if r.resource == "tokenreviews" {
			tokens = append(tokens, r.token)
		} else {
			accessReviews++
		}
	}
	slices.Sort(tokens)
	return tokens, accessReviews
}

// Past the reviews in flight, a new token is answered 429 at once, and no
// review is sent; a token already reviewed is served from the cache, not
// limited; once a review ends, its slot takes the next.
func TestMetricsReviewsInFlightAreBounded(t *testing.T) {
	api := newLimitedReviews(t)
	srv := api.guarded(t, newReviewLimiter(2, 1000, 1000))
	expectGet(t, srv, readerToken, ok200)

	var wg sync.WaitGroup
	slow := make(chan answered, 2)
	for _, token := range []string{slowTokenPrefix + "1", slowTokenPrefix + "2"} {
		wg.Go(func() {
			got, err := get(srv, token)
			if err != nil {
				t.Error(err)
			}
			slow <- got
		})
	}
	for range 2 {
		select {
		case <-api.held:
		case <-time.After(30 * time.Second):
			t.Fatal("the slow reviews never reached the API server")
		}
	}

	before := refusedSoFar(t, refusedInFlight)
	for i := range 3 {
		expectGet(t, srv, fmt.Sprintf("new-%d", i), refused429)
	}
	if n := refusedSoFar(t, refusedInFlight) - before; n != 3 {
		t.Errorf("%v reviews counted refused in flight, want 3", n)
	}
	expectGet(t, srv, readerToken, ok200) // cached: not limited

	close(api.release)
	wg.Wait()
	close(slow)
	for got := range slow {
		if got != unauthorized {
			t.Errorf("slow token: %+v, want %+v", got, unauthorized)
		}
	}
	expectGet(t, srv, "after", unauthorized)

	tokens, accessReviews := tokensReviewed(t, api.fake)
	if want := []string{"after", slowTokenPrefix + "1", slowTokenPrefix + "2", readerToken}; !slices.Equal(tokens, want) || accessReviews != 1 {
		t.Errorf("TokenReviews of %q and %d SubjectAccessReviews, want %q and 1", tokens, accessReviews, want)
	}
}

// Past the reviews' rate, a new token is answered 429 and no review is
// sent; a cached answer is still served.
func TestMetricsReviewsRateIsBounded(t *testing.T) {
	api := newLimitedReviews(t)
	// A burst of 4 that does not refill within the test.
	srv := api.guarded(t, newReviewLimiter(100, 0.001, 4))
	before := refusedSoFar(t, refusedRate)
	expectGet(t, srv, readerToken, ok200) // a TokenReview and a SubjectAccessReview
	expectGet(t, srv, "new-0", unauthorized)
	expectGet(t, srv, "new-1", unauthorized)
	expectGet(t, srv, "new-2", refused429)
	expectGet(t, srv, "new-3", refused429)
	expectGet(t, srv, readerToken, ok200)
	if n := refusedSoFar(t, refusedRate) - before; n != 2 {
		t.Errorf("%v reviews counted refused by rate, want 2", n)
	}
	tokens, accessReviews := tokensReviewed(t, api.fake)
	if want := []string{"new-0", "new-1", readerToken}; !slices.Equal(tokens, want) || accessReviews != 1 {
		t.Errorf("TokenReviews of %q and %d SubjectAccessReviews, want %q and 1", tokens, accessReviews, want)
	}
}

// The SubjectAccessReview is limited too: refused, the request is 429, not
// a 500 or a 403.
func TestMetricsAccessReviewRefusedIs429(t *testing.T) {
	api := newLimitedReviews(t)
	srv := api.guarded(t, newReviewLimiter(100, 0.001, 1))
	expectGet(t, srv, readerToken, refused429)
	tokens, accessReviews := tokensReviewed(t, api.fake)
	if !slices.Equal(tokens, []string{readerToken}) || accessReviews != 0 {
		t.Errorf("TokenReviews of %q and %d SubjectAccessReviews, want only a TokenReview of %q", tokens, accessReviews, readerToken)
	}
}

// A 429 of the API server is passed on to the caller with its Retry-After,
// after one review: not retried by client-go (10 times) nor by the
// webhook's backoff, each retry one more request in a full flow.
func TestMetricsReviewThrottledByTheAPIServerIsNotRetried(t *testing.T) {
	api := newLimitedReviews(t)
	srv := api.guarded(t, newReviewLimiter(100, 1000, 1000))
	before := refusedSoFar(t, refusedAPIServer)
	start := time.Now()
	expectGet(t, srv, throttledToken, answered{code: http.StatusTooManyRequests, retryAfter: strconv.Itoa(throttledRetryAfter)})
	if waited := time.Since(start); waited >= throttledRetryAfter*time.Second {
		t.Errorf("answered after %v: the review waited out a Retry-After", waited)
	}
	if n := refusedSoFar(t, refusedAPIServer) - before; n != 1 {
		t.Errorf("%v reviews counted refused by the API server, want 1", n)
	}
	tokens, accessReviews := tokensReviewed(t, api.fake)
	if !slices.Equal(tokens, []string{throttledToken}) || accessReviews != 0 {
		t.Errorf("TokenReviews of %q and %d SubjectAccessReviews, want one TokenReview of %q", tokens, accessReviews, throttledToken)
	}
}
