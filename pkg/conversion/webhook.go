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

package conversion

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Path is where the webhook is served; the CRD's
// spec.conversion.webhook.clientConfig names it.
const Path = "/convert"

// What the webhook may hold. Anyone who reaches the port may POST to it, so
// what a review costs is bounded by what the webhook allows, never by what
// the caller sends or says it will send:
//
//   - maxReviewBytes bounds one review. The API server converts a list in
//     one review, so a review is as large as the largest list of Foos a
//     client reads in the other version: every Foo of a cluster at the
//     largest scale the benchmarks run (make bench's curve), with room for
//     each Foo to grow by half and for a few more Foos than the curve's
//     largest step. A larger body is refused (413) unread; no larger, as
//     the budget below, and so the memory the webhook may take, follows it.
//   - reviewBudget bounds what all the reviews in flight hold at once, in
//     bytes read (see budget): a review holds its converted objects until
//     the last has converted (all or none), about as many bytes as it read,
//     and the objects it read and decoded are garbage the collector has not
//     necessarily reclaimed. It is one review of the largest size: that
//     one must fit, and as reviews in flight are not expected to be large
//     at once, more would only let a flood hold more (one review of the
//     largest size beside a flood of smaller ones is the one refused,
//     being the largest holder).
//   - maxReviewsInFlight bounds the reviews, each of which also holds a
//     decoder's buffer and a goroutine beside what it is charged for;
//     past it a review is answered 429 with Retry-After. The API server
//     does not retry a conversion call, so a 429 to it fails a client's
//     request: the cap is well above the calls the API servers make at
//     once (one per request in the other version being served), and it is
//     the budget, not the cap, that holds a flood of large reviews back.
//
// So the webhook adds to the controller's heap at most
// reviewBudget × (1 + GOGC/100) (what is held, and as much again of garbage
// before the collector runs, GOGC being 100) plus
// maxReviewsInFlight × readChunk of buffers: with the controller's own
// baseline, well under the Deployment's memory limit, and GOMEMLIMIT, set
// to that limit, makes the collector run sooner as the heap nears it.
// docs/failure-modes.md has the figures, measured under attack.
const (
	maxReviewBytes     = 24 << 20
	reviewBudget       = maxReviewBytes
	maxReviewsInFlight = 32
	// readChunk is the most one read of a body asks for, so that a
	// review is charged about what it read, not a buffer's size.
	readChunk = 32 << 10
	// maxBudgetWait bounds how long a review waits for larger ones to let
	// go of the budget; well under the API server's timeout of a
	// conversion call (30 s).
	maxBudgetWait = 5 * time.Second
	// retryAfter is the Retry-After of a 429, in seconds: the API server
	// does not retry a conversion call, but other callers may.
	retryAfter = "1"
	// refusedLogEvery is how often at most a refused review is logged;
	// the line says how many were not.
	refusedLogEvery = 10 * time.Second
)

// reviewAPIVersion is the one ConversionReview version the CRD lists in
// conversionReviewVersions.
const reviewAPIVersion = "apiextensions.k8s.io/v1"

// reviewKind is the kind of the body the API server posts and expects back.
const reviewKind = "ConversionReview"

// Handler serves conversion reviews (apiextensions.k8s.io/v1
// ConversionReview: the request's objects, converted in order to its
// desiredAPIVersion, answered under its UID). A review whose objects do not
// all convert is answered with a Failure naming the first that did not: the
// API server then fails the client's request with that message rather than
// return a partial list.
//
// The review is read as it arrives, each object converted as soon as it has
// been read, and reading stops at the first that does not convert: a body
// of a million numbers costs one number. The API server sends uid,
// desiredAPIVersion, then objects; objects that come before
// desiredAPIVersion are kept as they came, within the same bounds, until it
// does.
func Handler() http.Handler {
	return newHandler(maxReviewBytes, newBudget(reviewBudget, maxReviewsInFlight, maxBudgetWait))
}

// newHandler is Handler with the bounds of a test.
func newHandler(maxBytes int64, b *budget) *handler {
	return &handler{budget: b, logs: &logSampler{every: refusedLogEvery, now: time.Now}, maxBytes: maxBytes}
}

type handler struct {
	budget   *budget
	logs     *logSampler
	maxBytes int64
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	logger := klog.FromContext(r.Context())
	if r.Method != http.MethodPost {
		http.Error(w, "conversion reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength > h.maxBytes {
		h.refuse(logger, w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("a review is at most %d bytes, this one says it is %d", h.maxBytes, r.ContentLength))
		return
	}
	rc := http.NewResponseController(w)
	hold, err := h.budget.enter(func() { _ = rc.SetReadDeadline(time.Now()) })
	if err != nil {
		h.refuse(logger, w, http.StatusTooManyRequests, err.Error())
		return
	}
	defer hold.release()
	body := &chargedReader{ctx: r.Context(), r: http.MaxBytesReader(w, r.Body, h.maxBytes), h: hold, chunk: readChunk}
	in, err := readReview(body)
	var tooLarge *http.MaxBytesError
	switch {
	case err != nil && hold.wasRefused():
		h.refuse(logger, w, http.StatusTooManyRequests, errOverBudget.Error())
		return
	case errors.As(err, &tooLarge):
		h.refuse(logger, w, http.StatusRequestEntityTooLarge, fmt.Sprintf("a review is at most %d bytes", h.maxBytes))
		return
	case err != nil:
		h.refuse(logger, w, http.StatusBadRequest, fmt.Sprintf("not a %s %s with a request: %v",
			reviewAPIVersion, reviewKind, err))
		return
	}
	if in.result.Status != metav1.StatusSuccess {
		h.logRefused(logger, "uid", in.uid, "reason", in.result.Message)
	}
	out, err := in.response()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(out.size()))
	_, _ = out.WriteTo(w)
}

// refuse answers a review the webhook does not convert, and logs it.
func (h *handler) refuse(logger klog.Logger, w http.ResponseWriter, code int, reason string) {
	h.logRefused(logger, "code", code, "reason", reason)
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", retryAfter)
	}
	http.Error(w, reason, code)
}

// logRefused logs a refused review, sampled: a flood of them must not flood
// the logs.
func (h *handler) logRefused(logger klog.Logger, keysAndValues ...any) {
	ok, suppressed := h.logs.allow()
	if !ok {
		return
	}
	logger.Error(nil, "Refused a conversion review",
		append(keysAndValues, "notLoggedSinceLast", suppressed)...)
}

// streamedReview is what readReview read of a review: its type and UID,
// and either every object converted or why one was not.
type streamedReview struct {
	metav1.TypeMeta
	hasRequest  bool
	uid         types.UID
	desired     string
	haveDesired bool
	// pending are the objects read before desiredAPIVersion.
	pending   []json.RawMessage
	read      int
	converted [][]byte
	result    metav1.Status
}

// errNotAReview: the body is JSON, but not a review this webhook answers.
var errNotAReview = errors.New("not a review")

// readReview reads a review from r, converting its objects as they come and
// stopping at the first that does not convert.
func readReview(r io.Reader) (*streamedReview, error) {
	dec := json.NewDecoder(r)
	s := &streamedReview{result: metav1.Status{Status: metav1.StatusSuccess}}
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch key {
		case "apiVersion":
			if err := dec.Decode(&s.APIVersion); err != nil {
				return nil, err
			}
			if s.APIVersion != reviewAPIVersion {
				return nil, fmt.Errorf("%w: apiVersion %q", errNotAReview, s.APIVersion)
			}
		case "kind":
			if err := dec.Decode(&s.Kind); err != nil {
				return nil, err
			}
			if s.Kind != reviewKind {
				return nil, fmt.Errorf("%w: kind %q", errNotAReview, s.Kind)
			}
		case "request":
			if err := s.readRequest(dec); err != nil {
				return nil, err
			}
			if s.result.Status != metav1.StatusSuccess {
				// Nothing after the object that failed is read: the
				// answer is known.
				return s, nil
			}
		default:
			if err := skipValue(dec); err != nil {
				return nil, err
			}
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	if s.APIVersion == "" || s.Kind == "" || !s.hasRequest {
		return nil, fmt.Errorf("%w: apiVersion %q, kind %q, request: %t", errNotAReview, s.APIVersion, s.Kind, s.hasRequest)
	}
	// A request without a desiredAPIVersion: its objects fail to convert
	// to "", which names what is missing.
	s.convertPending()
	return s, nil
}

// readRequest reads the request object (or null).
func (s *streamedReview) readRequest(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if t != json.Delim('{') {
		return fmt.Errorf("%w: the request is not an object", errNotAReview)
	}
	s.hasRequest = true
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		switch key {
		case "uid":
			if err := dec.Decode(&s.uid); err != nil {
				return err
			}
		case "desiredAPIVersion":
			if err := dec.Decode(&s.desired); err != nil {
				return err
			}
			s.haveDesired = true
			if !s.convertPending() {
				return nil
			}
		case "objects":
			if err := s.readObjects(dec); err != nil || s.result.Status != metav1.StatusSuccess {
				return err
			}
		default:
			if err := skipValue(dec); err != nil {
				return err
			}
		}
	}
	return expectDelim(dec, '}')
}

// readObjects reads the objects array, converting each as it comes once
// desiredAPIVersion is known, else keeping it for when it is.
func (s *streamedReview) readObjects(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil || t == nil {
		return err
	}
	if t != json.Delim('[') {
		return fmt.Errorf("%w: objects is not an array", errNotAReview)
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		s.read++
		if !s.haveDesired {
			s.pending = append(s.pending, raw)
			continue
		}
		if !s.convert(raw, s.read) {
			return nil
		}
	}
	return expectDelim(dec, ']')
}

// convertPending converts the objects kept for desiredAPIVersion, letting
// go of each as it is converted; false if one did not convert.
func (s *streamedReview) convertPending() bool {
	first := s.read - len(s.pending) + 1
	for i := range s.pending {
		if !s.convert(s.pending[i], first+i) {
			s.pending = nil
			return false
		}
		s.pending[i] = nil
	}
	s.pending = nil
	return true
}

// convert converts object number n (from 1), or records why it did not:
// all or none, so a failure drops what was converted.
func (s *streamedReview) convert(raw []byte, n int) bool {
	converted, err := Convert(raw, s.desired)
	if err != nil {
		s.converted = nil
		// The review is not read past the object that failed, so how
		// many it holds is not known.
		s.result = metav1.Status{Status: metav1.StatusFailure, Message: fmt.Sprintf("object %d: %v", n, err)}
		return false
	}
	s.converted = append(s.converted, converted)
	return true
}

// expectDelim reads the delimiter want.
func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("%w: %v where %v was expected", errNotAReview, t, want)
	}
	return nil
}

// skipValue reads past one value token by token, holding none of it.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// encodedResponse is the answer to a review in pieces, written out in
// turn, so that the converted objects are not copied into one buffer.
type encodedResponse [][]byte

// response encodes the answer: the ConversionReview under the request's
// UID, with the converted objects (none on a Failure) and the result.
func (s *streamedReview) response() (encodedResponse, error) {
	uid, err := json.Marshal(s.uid)
	if err != nil {
		return nil, err
	}
	result, err := json.Marshal(s.result)
	if err != nil {
		return nil, err
	}
	head := `{"kind":"` + reviewKind + `","apiVersion":"` + reviewAPIVersion + `","response":{"uid":`
	out := encodedResponse{[]byte(head), uid}
	if s.result.Status != metav1.StatusSuccess {
		out = append(out, []byte(`,"convertedObjects":null`))
	} else {
		out = append(out, []byte(`,"convertedObjects":[`))
		for i, obj := range s.converted {
			if i > 0 {
				out = append(out, []byte(","))
			}
			out = append(out, obj)
		}
		out = append(out, []byte("]"))
	}
	return append(out, []byte(`,"result":`), result, []byte("}}\n")), nil
}

func (e encodedResponse) size() int {
	n := 0
	for _, b := range e {
		n += len(b)
	}
	return n
}

// WriteTo writes the pieces in turn.
func (e encodedResponse) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, b := range e {
		m, err := w.Write(b)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
