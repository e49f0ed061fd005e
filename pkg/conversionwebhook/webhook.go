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

// Package conversionwebhook serves the Foo CRD's conversion webhook: the
// API server posts it a ConversionReview whenever a client reads or writes a
// Foo in a version other than the one etcd holds it in, and it answers with
// the Foos converted by pkg/conversion. Everything else here is what serving
// that to anyone who reaches the port takes: a handler that reads a review
// as it arrives, within bounds on what it reads and writes (this file) and
// one memory budget for every review in flight (budget.go); the webhook
// started with the serving certificate of pkg/certauthority (start.go); and
// the readiness of a replica that serves the conversions its own list of
// Foos may need (readiness.go).
package conversionwebhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/conversion"
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
//     bytes read and, past that, bytes to write (see budget, and the bounds
//     on what the webhook writes below): a review holds its converted
//     objects until the last has converted (all or none), about as many
//     bytes as it read, and the objects it read and decoded are garbage the
//     collector has not necessarily reclaimed. It is one review of the largest size: that
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
// So the webhook adds to the controller's heap about
// 2 × reviewBudget × (1 + GOGC/100) at most: a review is charged what it
// read, but the JSON decoder holds it in a buffer it grows by doubling, up
// to twice that; and as much again of garbage (the buffers outgrown, the
// objects decoded and written) before the collector runs, GOGC being 100.
// Besides, maxReviewsInFlight × readChunk of buffers. With the controller's
// own baseline that is well under the Deployment's memory limit, and
// GOMEMLIMIT, set to that limit, makes the collector run sooner as the heap
// nears it.
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

// What the webhook may write. An answer echoes the review's uid, holds every
// converted object until the last has converted, and says why a review
// failed; each of those is bounded by what the webhook allows, never by what
// the caller sends, as what it reads is:
//
//   - maxUIDBytes bounds the uid, as sent: the API server's is a UID (a
//     UUID, 36 bytes). It is echoed in the answer and logged, so a longer
//     one would make the webhook write and log what the caller chose. A
//     longer one is refused (400) before any object is converted, and
//     read no further than the bound.
//   - maxAPIVersionBytes bounds desiredAPIVersion, and the review's own
//     apiVersion and kind, as sent: no served version is longer
//     (conversion.MaxAPIVersionBytes). A longer one is refused (400) as the
//     uid is; one of the right length that this webhook does not serve is
//     answered with a Failure before any object is converted, which the API
//     server passes on to the client.
//   - maxObjectBytes bounds one object, as sent: kube-apiserver takes a
//     write's body of at most 3 MiB (MaxRequestBodyBytes in
//     k8s.io/apiserver, twice what etcd stores by default), so no Foo it
//     stores, and sends here, is larger. A larger object is answered with
//     a Failure naming it, read no further than the bound: what one
//     conversion decodes and encodes at once follows it.
//   - maxObjectValues bounds the values of one object (members and
//     elements, counted as it was sent, before it is decoded): a value of a
//     few bytes as sent, {} or null among a Foo's conditions, decodes to a
//     whole struct and is written back with all its fields, a hundred bytes
//     or more: an object of {} alone is written back tens of times its
//     size, and decoding it allocates hundreds of times (the figures are in
//     docs/failure-modes.md, hostile reviews).
//     A Foo as the API server stores it has a few hundred values (its
//     metadata, managedFields, a few conditions); at the bound one
//     conversion allocates a few MiB beyond the object's size. More is a
//     Failure naming the object, before it is decoded.
//   - maxAnswerBytes bounds the converted objects of one answer, the same
//     as a review: a conversion changes a Foo's size by a few bytes, so an
//     answer as large as the largest review fits. An answer that would
//     pass it is a Failure naming the object that took it past.
//   - maxMessageBytes bounds the message of a Failure and the reason of
//     a refusal, both written back and logged: each may quote what the
//     caller sent (an apiVersion, a number that does not fit).
//
// The converted objects are charged to the budget too, for what each adds
// to the bytes its object was charged when read: a review is charged what
// it holds, the larger of what it read and what it will write, so an answer
// larger than its review cannot hold more than the budget either. They are
// encoded without HTML escaping (see conversion.Marshal): as JSON escapes
// them, `<`, `>` and `&` take six bytes each, and an object of them would be
// answered six times its size.
const (
	maxUIDBytes        = 256
	maxAPIVersionBytes = conversion.MaxAPIVersionBytes
	maxObjectBytes     = 3 << 20
	maxObjectValues    = 10000
	maxAnswerBytes     = maxReviewBytes
	maxMessageBytes    = 1 << 10
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
	return newHandler(defaultBounds, newBudget(reviewBudget, maxReviewsInFlight, maxBudgetWait))
}

// bounds are the sizes a review and its answer may have, in bytes.
type bounds struct {
	review, object, answer int64
}

var defaultBounds = bounds{review: maxReviewBytes, object: maxObjectBytes, answer: maxAnswerBytes}

// newHandler is Handler with the bounds of a test.
func newHandler(limits bounds, b *budget) *handler {
	return &handler{budget: b, logs: &logSampler{every: refusedLogEvery, now: time.Now}, bounds: limits}
}

type handler struct {
	budget *budget
	logs   *logSampler
	bounds bounds
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	logger := klog.FromContext(r.Context())
	if r.Method != http.MethodPost {
		http.Error(w, "conversion reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength > h.bounds.review {
		h.refuse(logger, w, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("a review is at most %d bytes, this one says it is %d", h.bounds.review, r.ContentLength))
		return
	}
	rc := http.NewResponseController(w)
	hold, err := h.budget.enter(func() { _ = rc.SetReadDeadline(time.Now()) })
	if err != nil {
		h.refuse(logger, w, http.StatusTooManyRequests, err.Error())
		return
	}
	defer hold.release()
	body := &chargedReader{ctx: r.Context(), r: http.MaxBytesReader(w, r.Body, h.bounds.review), h: hold, chunk: readChunk}
	in, err := readReview(body, h.bounds, func(n int64) error { return hold.charge(r.Context(), n) })
	var tooLarge *http.MaxBytesError
	var fieldTooLarge *fieldTooLargeError
	switch {
	case err != nil && hold.wasRefused():
		h.refuse(logger, w, http.StatusTooManyRequests, errOverBudget.Error())
		return
	case errors.As(err, &tooLarge):
		h.refuse(logger, w, http.StatusRequestEntityTooLarge, fmt.Sprintf("a review is at most %d bytes", h.bounds.review))
		return
	case errors.As(err, &fieldTooLarge):
		h.refuse(logger, w, http.StatusBadRequest, fieldTooLarge.Error())
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

// refuse answers a review the webhook does not convert, and logs it. The
// reason may quote what the caller sent: it is cut to maxMessageBytes.
func (h *handler) refuse(logger klog.Logger, w http.ResponseWriter, code int, reason string) {
	reason = truncate(reason, maxMessageBytes)
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
	dec         *json.Decoder
	values      *valueReader
	bounds      bounds
	charge      func(int64) error
	hasRequest  bool
	uid         types.UID
	desired     string
	haveDesired bool
	// pending are the objects read before desiredAPIVersion.
	pending   []json.RawMessage
	read      int
	converted [][]byte
	// answered is the bytes of converted, with the commas between them.
	answered int64
	result   metav1.Status
}

// errNotAReview: the body is JSON, but not a review this webhook answers.
var errNotAReview = errors.New("not a review")

// fieldTooLargeError: a field the answer would echo is longer than the
// webhook writes back; the review is refused whole (400).
type fieldTooLargeError struct {
	field string
	max   int
}

func (e *fieldTooLargeError) Error() string {
	return fmt.Sprintf("a review's %s is at most %d bytes", e.field, e.max)
}

// readReview reads a review from r, converting its objects as they come and
// stopping at the first that does not convert. charge is called with what
// each converted object adds to the bytes read of it.
func readReview(r io.Reader, limits bounds, charge func(int64) error) (*streamedReview, error) {
	values := &valueReader{r: r, stopAt: -1}
	dec := json.NewDecoder(values)
	s := &streamedReview{dec: dec, values: values, bounds: limits, charge: charge,
		result: metav1.Status{Status: metav1.StatusSuccess}}
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
			if err := s.decodeString(&s.APIVersion, "apiVersion", maxAPIVersionBytes); err != nil {
				return nil, err
			}
			if s.APIVersion != reviewAPIVersion {
				return nil, fmt.Errorf("%w: apiVersion %q", errNotAReview, s.APIVersion)
			}
		case "kind":
			if err := s.decodeString(&s.Kind, "kind", maxAPIVersionBytes); err != nil {
				return nil, err
			}
			if s.Kind != reviewKind {
				return nil, fmt.Errorf("%w: kind %q", errNotAReview, s.Kind)
			}
		case "request":
			if err := s.readRequest(); err != nil {
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
		return nil, fmt.Errorf("%w: apiVersion %q, kind %q, request: %t", errNotAReview, s.APIVersion, s.Kind,
			s.hasRequest)
	}
	// A request without a desiredAPIVersion: its objects fail to convert
	// to "", which names what is missing.
	if _, err := s.convertPending(); err != nil {
		return nil, err
	}
	return s, nil
}

// readRequest reads the request object (or null).
func (s *streamedReview) readRequest() error {
	dec := s.dec
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
			var uid string
			if err := s.decodeString(&uid, "uid", maxUIDBytes); err != nil {
				return err
			}
			s.uid = types.UID(uid)
		case "desiredAPIVersion":
			if err := s.decodeString(&s.desired, "desiredAPIVersion", maxAPIVersionBytes); err != nil {
				return err
			}
			s.haveDesired = true
			// A version not served converts nothing: refused before any
			// object is, and before the rest is read.
			if !conversion.Serves(s.desired) {
				s.fail(fmt.Sprintf("desiredAPIVersion %q: not a served version of Foo", s.desired))
				return nil
			}
			if ok, err := s.convertPending(); !ok || err != nil {
				return err
			}
		case "objects":
			if err := s.readObjects(); err != nil || s.result.Status != metav1.StatusSuccess {
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

// decodeString decodes a string field that the answer echoes or a message
// quotes, reading no more than limit bytes of it as sent (and a little for
// the colon and blanks before it): a longer one is refused before it is
// read whole.
func (s *streamedReview) decodeString(into *string, field string, limit int) error {
	tooLarge := &fieldTooLargeError{field: field, max: limit}
	err := s.decodeBounded(into, int64(limit)+fieldSlack, tooLarge)
	if err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fmt.Errorf("%w: %s is not a string", errNotAReview, field)
		}
		return err
	}
	// As sent it may have been escaped: what is written back is what
	// counts.
	if len(*into) > limit {
		return tooLarge
	}
	return nil
}

// fieldSlack is what a bounded field may take as sent beyond its bound:
// its quotes, the colon before it and a blank or two.
const fieldSlack = 8

// decodeBounded decodes the next value into v, reading at most limit bytes
// past the end of the last token; past it, the decoder is told tooLarge.
func (s *streamedReview) decodeBounded(v any, limit int64, tooLarge error) error {
	s.values.stopAt, s.values.tooLarge = s.dec.InputOffset()+limit, tooLarge
	defer func() { s.values.stopAt = -1 }()
	return s.dec.Decode(v)
}

// readObjects reads the objects array, converting each as it comes once
// desiredAPIVersion is known, else keeping it for when it is.
func (s *streamedReview) readObjects() error {
	dec := s.dec
	t, err := dec.Token()
	if err != nil || t == nil {
		return err
	}
	if t != json.Delim('[') {
		return fmt.Errorf("%w: objects is not an array", errNotAReview)
	}
	for dec.More() {
		var raw json.RawMessage
		errObject := &objectTooLargeError{}
		err := s.decodeBounded(&raw, s.bounds.object+fieldSlack, errObject)
		s.read++
		// The decoder may have read ahead of the bound before it was
		// set; what it read is as large as it can be, and is checked.
		if errors.Is(err, errObject) || int64(len(raw)) > s.bounds.object {
			// Not read further: the answer is known.
			s.fail(fmt.Sprintf("object %d: larger than %d bytes, the most the API server stores", s.read, s.bounds.object))
			return nil
		}
		if err != nil {
			return err
		}
		if countValues(raw) > maxObjectValues {
			s.fail(fmt.Sprintf("object %d: more than %d values, the most the webhook converts in one object",
				s.read, maxObjectValues))
			return nil
		}
		if !s.haveDesired {
			s.pending = append(s.pending, raw)
			continue
		}
		if ok, err := s.convert(raw, s.read); !ok || err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

// countValues counts, in valid JSON, the objects and arrays and the commas
// between values, outside strings: at least the values that decoding
// makes, empty ones included.
func countValues(raw []byte) int {
	n := 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{', c == '[', c == ',':
			n++
		}
	}
	return n
}

// objectTooLargeError: an object is larger than bounds.object; each
// object gets its own, so that one read past is told apart from another.
type objectTooLargeError struct{}

func (*objectTooLargeError) Error() string { return "object too large" }

// convertPending converts the objects kept for desiredAPIVersion, letting
// go of each as it is converted; false if one did not convert.
func (s *streamedReview) convertPending() (bool, error) {
	first := s.read - len(s.pending) + 1
	defer func() { s.pending = nil }()
	for i := range s.pending {
		if ok, err := s.convert(s.pending[i], first+i); !ok || err != nil {
			return ok, err
		}
		s.pending[i] = nil
	}
	return true, nil
}

// convert converts object number n (from 1), or records why it did not:
// all or none, so a failure drops what was converted. What the converted
// object adds to raw, which was charged as it was read, is charged before
// it is kept; an error is that charge's, the review refused.
func (s *streamedReview) convert(raw []byte, n int) (bool, error) {
	converted, err := conversion.Convert(raw, s.desired)
	if err != nil {
		// The review is not read past the object that failed, so how
		// many it holds is not known.
		s.fail(fmt.Sprintf("object %d: %v", n, err))
		return false, nil
	}
	size := int64(len(converted))
	if len(s.converted) > 0 {
		size++ // the comma before it
	}
	if s.answered+size > s.bounds.answer {
		s.fail(fmt.Sprintf("object %d: the converted objects would be larger than %d bytes, the most the webhook answers",
			n, s.bounds.answer))
		return false, nil
	}
	if grown := int64(len(converted) - len(raw)); grown > 0 {
		if err := s.charge(grown); err != nil {
			s.converted = nil
			return false, err
		}
	}
	s.answered += size
	s.converted = append(s.converted, converted)
	return true, nil
}

// fail records why the review failed, dropping what was converted.
func (s *streamedReview) fail(message string) {
	s.converted, s.pending = nil, nil
	s.result = metav1.Status{Status: metav1.StatusFailure, Message: truncate(message, maxMessageBytes)}
}

// valueReader passes reads on until stopAt (when not -1), where it returns
// tooLarge: the decoder then stops reading a value that is over its bound
// rather than buffer it whole.
type valueReader struct {
	r        io.Reader
	read     int64
	stopAt   int64
	tooLarge error
}

func (v *valueReader) Read(p []byte) (int, error) {
	if v.stopAt >= 0 {
		if v.read >= v.stopAt {
			return 0, v.tooLarge
		}
		if left := v.stopAt - v.read; int64(len(p)) > left {
			p = p[:left]
		}
	}
	n, err := v.r.Read(p)
	v.read += int64(n)
	return n, err
}

// expectDelim reads the delimiter want.
func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("%w: %s where %v was expected", errNotAReview, describe(t), want)
	}
	return nil
}

// describe names a token for a message without quoting a string or a
// number, which may be as long as the review.
func describe(t json.Token) string {
	switch t := t.(type) {
	case json.Delim:
		return t.String()
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return "null"
	}
}

// truncate cuts s to at most n bytes, at a character's start, marking the
// cut with an ellipsis.
func truncate(s string, n int) string {
	const ellipsis = "…"
	if len(s) <= n {
		return s
	}
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
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
	uid, err := conversion.Marshal(s.uid)
	if err != nil {
		return nil, err
	}
	result, err := conversion.Marshal(s.result)
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
