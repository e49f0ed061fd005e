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

package conversionwebhook

// What a caller of the webhook can make it hold: the bounds of webhook.go
// and budget.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const reviewHead = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u",` +
	`"desiredAPIVersion":"samplecontroller.k8s.io/v1alpha1","objects":[`

// countingReader counts what is read of r.
type countingReader struct {
	r    io.Reader
	read int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// numbers is the hostile body: objects that are "1,1,1,…", size bytes in all,
// made as they are read rather than held.
func numbers(size int64) io.Reader {
	tail := "]}}"
	ones := io.LimitReader(repeatReader("1,"), size-int64(len(reviewHead))-int64(len(tail))-1)
	return io.MultiReader(strings.NewReader(reviewHead), ones, strings.NewReader("1"+tail))
}

type repeatReader string

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r[i%len(r)]
	}
	return len(p) - len(p)%len(r), nil
}

// A review of 12 MiB whose objects are numbers, the body that took a replica
// from 63 to 882 MiB when the webhook read it whole, is refused once its
// first object has been read: the webhook reads a few KiB of it, not 12 MiB.
func TestHostileReviewOfNumbersIsRefusedAfterItsFirstObject(t *testing.T) {
	body := &countingReader{r: numbers(12 << 20)}
	req := httptest.NewRequest(http.MethodPost, Path, body)
	req.ContentLength = 12 << 20
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	want := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"u","convertedObjects":null,` +
		`"result":{"metadata":{},"status":"Failure","message":"object 1: reading apiVersion and kind: ` +
		`json: cannot unmarshal number into Go value of type struct { APIVersion string \"json:\\\"apiVersion\\\"\"; ` +
		`Kind string \"json:\\\"kind\\\"\" }"}}}`
	if got := strings.TrimSpace(rec.Body.String()); rec.Code != http.StatusOK || got != want {
		t.Errorf("got %d %s\nwant 200 %s", rec.Code, got, want)
	}
	// The decoder reads ahead of the object it decodes, at most one read
	// of readChunk.
	if body.read > readChunk {
		t.Errorf("read %d bytes of the hostile review, want at most %d", body.read, readChunk)
	}
	t.Logf("read %d bytes of a %d-byte review", body.read, 12<<20)
}

// A review larger than the cap is refused 413: unread when it says how
// large it is, cut at the cap when it does not (chunked).
func TestReviewLargerThanTheCapIsRefused(t *testing.T) {
	h := newHandler(bounds{review: 1 << 10, object: maxObjectBytes, answer: maxAnswerBytes}, newBudget(1<<20, 4, time.Second))
	big := reviewHead + strings.Repeat(" ", 2<<10) + "]}}"
	for _, length := range []int64{int64(len(big)), -1} {
		body := &countingReader{r: strings.NewReader(big)}
		req := httptest.NewRequest(http.MethodPost, Path, body)
		req.ContentLength = length
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestEntityTooLarge {
			t.Errorf("Content-Length %d: got %d %s, want 413", length, rec.Code, rec.Body)
		}
		if length > 0 && body.read != 0 {
			t.Errorf("Content-Length %d: read %d bytes, want 0", length, body.read)
		}
		if length < 0 && body.read > 1<<10+1 {
			t.Errorf("chunked: read %d bytes, want at most the cap and one", body.read)
		}
	}
}

// Past maxReviews in flight, a review is answered 429 with Retry-After, and
// is admitted again once one in flight ends.
func TestReviewPastTheInFlightCapGets429WithRetryAfter(t *testing.T) {
	b := newBudget(1<<20, 2, time.Second)
	h := newHandler(bounds{review: 1 << 20, object: maxObjectBytes, answer: maxAnswerBytes}, b)
	var wg sync.WaitGroup
	writers := make([]*io.PipeWriter, 0, 2)
	codes := make(chan int, 2)
	for range 2 {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, pr))
			codes <- rec.Code
		}()
	}
	waitFor(t, "two reviews in flight", func() bool { return inFlight(b) == 2 })

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, strings.NewReader(reviewHead+"]}}")))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("third review: got %d, Retry-After %q; want 429, Retry-After 1", rec.Code, rec.Header().Get("Retry-After"))
	}

	for _, pw := range writers {
		_, _ = io.WriteString(pw, reviewHead+"]}}")
		_ = pw.Close()
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("a review in flight ended %d, want 200", code)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path, strings.NewReader(reviewHead+"]}}")))
	if rec.Code != http.StatusOK || inFlight(b) != 0 {
		t.Errorf("after the two ended: got %d with %d in flight, want 200 with 0", rec.Code, inFlight(b))
	}
}

func inFlight(b *budget) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.holders)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
	}
}

// betaFoo is Foo number i as the API server sends it in v1beta1, and
// alphaFoo as the webhook returns it in v1alpha1.
func betaFoo(i int) string {
	return fmt.Sprintf(`{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","metadata":{"name":"foo-%d",`+
		`"namespace":"ns","uid":"uid-%d","resourceVersion":"%d","generation":1},"spec":{"deployment":{"name":"web-%d"},`+
		`"replicas":%d},"status":{"availableReplicas":%d,"observedGeneration":1}}`, i, i, 1000+i, i, i%10+1, i%10+1)
}

// A list of 1,000 Foos, read in v1alpha1, converts whole, in order, each
// object exactly.
func TestThousandFooReviewConvertsExactly(t *testing.T) {
	var objects []string
	for i := 1; i <= 1000; i++ {
		objects = append(objects, betaFoo(i))
	}
	code, got := post(t, http.MethodPost, reviewHead+strings.Join(objects, ",")+"]}}")
	var out struct {
		Response struct {
			UID              string            `json:"uid"`
			ConvertedObjects []json.RawMessage `json:"convertedObjects"`
			Result           struct{ Status string }
		}
	}
	if err := json.Unmarshal([]byte(got), &out); err != nil || code != http.StatusOK {
		t.Fatalf("got %d %.300s: %v", code, got, err)
	}
	if r := out.Response; r.UID != "u" || r.Result.Status != "Success" || len(r.ConvertedObjects) != 1000 {
		t.Fatalf("uid %q, result %q, %d objects; want u, Success, 1000", r.UID, r.Result.Status, len(r.ConvertedObjects))
	}
	for i, want := range map[int]string{
		1: `{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1alpha1","metadata":{"name":"foo-1","namespace":"ns",` +
			`"uid":"uid-1","resourceVersion":"1001","generation":1},"spec":{"deploymentName":"web-1","replicas":2},` +
			`"status":{"availableReplicas":2,"observedGeneration":1}}`,
		1000: `{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1alpha1","metadata":{"name":"foo-1000","namespace":"ns",` +
			`"uid":"uid-1000","resourceVersion":"2000","generation":1},"spec":{"deploymentName":"web-1000","replicas":1},` +
			`"status":{"availableReplicas":1,"observedGeneration":1}}`,
	} {
		if got := string(out.Response.ConvertedObjects[i-1]); got != want {
			t.Errorf("object %d:\ngot  %s\nwant %s", i, got, want)
		}
	}
}

// The fields of a review may come in any order: the objects before
// desiredAPIVersion, the type after the request, unknown fields anywhere.
func TestReviewFieldsInAnotherOrderStillConvert(t *testing.T) {
	code, got := post(t, http.MethodPost, `{"request":{"objects":[`+betaFoo(1)+`,`+betaFoo(2)+`],"extra":{"a":[1,{"b":2}]},`+
		`"desiredAPIVersion":"samplecontroller.k8s.io/v1alpha1","uid":"late"},"kind":"ConversionReview",`+
		`"apiVersion":"apiextensions.k8s.io/v1"}`)
	want := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"late","convertedObjects":[` +
		`{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1alpha1","metadata":{"name":"foo-1","namespace":"ns",` +
		`"uid":"uid-1","resourceVersion":"1001","generation":1},"spec":{"deploymentName":"web-1","replicas":2},` +
		`"status":{"availableReplicas":2,"observedGeneration":1}},` +
		`{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1alpha1","metadata":{"name":"foo-2","namespace":"ns",` +
		`"uid":"uid-2","resourceVersion":"1002","generation":1},"spec":{"deploymentName":"web-2","replicas":3},` +
		`"status":{"availableReplicas":3,"observedGeneration":1}}],"result":{"metadata":{},"status":"Success"}}}`
	if code != http.StatusOK || got != want {
		t.Errorf("got %d %s\nwant 200 %s", code, got, want)
	}
	// Objects kept for a desiredAPIVersion that never comes fail to
	// convert to "", the first named.
	code, got = post(t, http.MethodPost, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview",`+
		`"request":{"uid":"none","objects":[`+betaFoo(1)+`]}}`)
	want = `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"none","convertedObjects":null,` +
		`"result":{"metadata":{},"status":"Failure","message":"object 1: cannot convert to \"\": not a served version of Foo"}}}`
	if code != http.StatusOK || got != want {
		t.Errorf("without desiredAPIVersion: got %d %s\nwant 200 %s", code, got, want)
	}
}

// A refused review is logged at most once per interval, the line saying
// how many were not.
func TestRefusedReviewsAreLoggedAtMostOncePerInterval(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	s := &logSampler{every: 10 * time.Second, now: func() time.Time { return now }}
	type line struct {
		ok         bool
		suppressed int
	}
	got := make([]line, 0, 8)
	for _, at := range []time.Duration{0, time.Second, 2 * time.Second, 9 * time.Second, 10 * time.Second,
		15 * time.Second, 20 * time.Second, 60 * time.Second} {
		now = start.Add(at)
		ok, n := s.allow()
		got = append(got, line{ok, n})
	}
	want := []line{{true, 0}, {false, 0}, {false, 0}, {false, 0}, {true, 3}, {false, 0}, {true, 1}, {true, 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// When the budget is full, the review that holds the most gives way, not a
// smaller one asking: an attack with large reviews exhausts it only for
// itself.
func TestLargestReviewGivesWayToASmallerOne(t *testing.T) {
	ctx := context.Background()
	b := newBudget(100, 10, 5*time.Second)
	large, _ := b.enter(nil)
	unblocked := make(chan struct{})
	large.unblock = func() { close(unblocked) }
	small, _ := b.enter(nil)
	if err := large.charge(ctx, 80); err != nil {
		t.Fatal(err)
	}
	if err := small.charge(ctx, 10); err != nil {
		t.Fatal(err)
	}
	granted := make(chan error, 1)
	go func() { granted <- small.charge(ctx, 20) }()
	<-unblocked // the large one is told to stop reading
	if err := large.charge(ctx, 1); !errors.Is(err, errOverBudget) {
		t.Errorf("the large review's next charge: %v, want errOverBudget", err)
	}
	large.release()
	if err := <-granted; err != nil {
		t.Errorf("the small review's charge: %v, want it granted", err)
	}
	if b.used != 30 {
		t.Errorf("budget used %d, want 30", b.used)
	}

	// The largest asking is itself refused, at once.
	other, _ := b.enter(nil)
	if err := other.charge(ctx, 60); err != nil {
		t.Fatal(err)
	}
	if err := other.charge(ctx, 20); !errors.Is(err, errOverBudget) {
		t.Errorf("the largest asking: %v, want errOverBudget", err)
	}
}
