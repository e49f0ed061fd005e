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
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/kube-samples/sample-controller/pkg/metrics"
)

// Anyone who can reach the metrics port can make this replica send the API
// server a TokenReview: one per bearer token not seen within the cache TTL.
// The reviews go out under the controller's ServiceAccount, the same user
// as its Lease renewals, so API Priority and Fairness queues them in one
// flow unless a FlowSchema sends the Lease elsewhere (artifacts/deploy's
// does). A flood of random tokens must therefore cost the API server a
// bounded number of reviews, however many callers there are: past the
// bounds below, a caller gets 429 with Retry-After, and no review is sent.
// An answer the caches hold is never limited, so a scraper whose token was
// reviewed goes on being served through a flood; a scraper whose answer has
// expired may be refused until the flood ends, and scrapes again.
const (
	// MetricsReviewsInFlight bounds the reviews (TokenReviews and
	// SubjectAccessReviews) waiting on the API server at once, per replica.
	MetricsReviewsInFlight = 4
	// MetricsReviewQPS and MetricsReviewBurst bound the reviews sent per
	// second. A scraper costs at most two reviews per cache TTL (10 s).
	MetricsReviewQPS   = 5
	MetricsReviewBurst = 10
	// metricsReviewRetryAfter is the Retry-After of a refused request.
	metricsReviewRetryAfter = time.Second
)

// The reasons a review is refused, the label values of
// samplecontroller_metrics_reviews_refused_total.
const (
	refusedInFlight  = "in_flight"
	refusedRate      = "rate"
	refusedAPIServer = "api_server"
)

// reviewRefusedError is a review not sent (in_flight, rate) or refused by
// the API server (api_server, 429): the caller is answered 429.
type reviewRefusedError struct {
	reason     string
	retryAfter time.Duration
}

func (e *reviewRefusedError) Error() string {
	return fmt.Sprintf("metrics review refused (%s), retry after %v", e.reason, e.retryAfter)
}

// reviewLimiter bounds the reviews of the metrics server's client: at most
// inFlight at once, and a token bucket, both tried without waiting. It sits
// in the client's transport, under the delegating authenticator's and
// authorizer's caches, so that only the reviews actually sent count.
type reviewLimiter struct {
	slots chan struct{}
	rate  flowcontrol.RateLimiter
}

func newReviewLimiter(inFlight int, qps float32, burst int) *reviewLimiter {
	return &reviewLimiter{slots: make(chan struct{}, inFlight), rate: flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
}

// wrap is a transport.WrapperFunc for the reviews' client.
//
// A refusal is an error of the transport, not a response: client-go retries
// neither it (a POST) nor, k8s.io/apiserver's webhook, any error that is not
// an API status. A 429 of the API server is turned into the same error, for
// the same reason: client-go would retry it up to 10 times after its
// Retry-After, and the webhook again per attempt, each retry one more
// request in the very flow that is full.
func (l *reviewLimiter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		select {
		case l.slots <- struct{}{}:
		default:
			return nil, refuse(refusedInFlight, metricsReviewRetryAfter)
		}
		defer func() { <-l.slots }()
		if !l.rate.TryAccept() {
			return nil, refuse(refusedRate, metricsReviewRetryAfter)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			return resp, err
		}
		retryAfter := metricsReviewRetryAfter
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			retryAfter = time.Duration(s) * time.Second
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, refuse(refusedAPIServer, retryAfter)
	})
}

func refuse(reason string, retryAfter time.Duration) error {
	metrics.MetricsReviewsRefused.WithLabelValues(reason).Inc()
	return &reviewRefusedError{reason: reason, retryAfter: retryAfter}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// writeReviewRefused answers 429 with Retry-After, and reports true, when
// err is (or wraps) a refused review.
func writeReviewRefused(w http.ResponseWriter, err error) bool {
	refused := asReviewRefused(err)
	if refused == nil {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(refused.retryAfter.Round(time.Second)/time.Second)))
	http.Error(w, "too many requests to review, try again later", http.StatusTooManyRequests)
	return true
}

// asReviewRefused finds a refused review in err, inside the aggregate the
// authenticator's union makes too (which errors.As does not look into).
func asReviewRefused(err error) *reviewRefusedError {
	var refused *reviewRefusedError
	if errors.As(err, &refused) {
		return refused
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			if refused := asReviewRefused(e); refused != nil {
				return refused
			}
		}
	}
	return nil
}
