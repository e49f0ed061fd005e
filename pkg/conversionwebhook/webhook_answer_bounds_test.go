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

// What a caller of the webhook can make it write: the bounds on the uid,
// desiredAPIVersion, each object and the answer (webhook.go), and the
// converted objects charged to the budget.

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serve sends body to h, as a client that does not say how long it is, and
// returns the status and the answer.
func serve(h http.Handler, body io.Reader) (int, string) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, Path, body)
	req.ContentLength = -1
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// endless is a reader of s over and over, for ever: a review that would go
// on past every bound.
func endless(s string) io.Reader { return repeatReader(s) }

// A uid longer than 256 bytes is refused 400, read no further than a few
// hundred bytes past its start, and nothing after it is read or converted:
// a uid of 20 MiB of `<`, echoed back as JSON escapes it, was an answer of
// 120 MiB. A uid of 256 bytes, the most, is answered.
func TestUIDLongerThan256BytesIsRefusedUnread(t *testing.T) {
	head := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"`
	body := &countingReader{r: io.MultiReader(strings.NewReader(head), endless("<"))}
	code, got := serve(Handler(), body)
	if want := "a review's uid is at most 256 bytes\n"; code != http.StatusBadRequest || got != want {
		t.Errorf("a uid of `<` for ever: got %d %q, want 400 %q", code, got, want)
	}
	// The decoder's first read is of 512 bytes; the uid's bound stops it
	// before a second.
	if body.read > 512 {
		t.Errorf("read %d bytes of the review, want at most 512", body.read)
	}

	// One byte over, the bound is checked on the uid as decoded.
	uid257 := strings.Repeat("<", 257)
	code, got = serve(Handler(), strings.NewReader(head+uid257+`","desiredAPIVersion":`+
		`"samplecontroller.k8s.io/v1alpha1","objects":[`+betaFoo(1)+`]}}`))
	if want := "a review's uid is at most 256 bytes\n"; code != http.StatusBadRequest || got != want {
		t.Errorf("a uid of 257 bytes: got %d %q, want 400 %q", code, got, want)
	}

	uid256 := strings.Repeat("<", 256)
	code, got = serve(Handler(), strings.NewReader(head+uid256+`","desiredAPIVersion":`+
		`"samplecontroller.k8s.io/v1alpha1","objects":[]}}`))
	want := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"` + uid256 +
		`","convertedObjects":[],"result":{"metadata":{},"status":"Success"}}}` + "\n"
	if code != http.StatusOK || got != want {
		t.Errorf("a uid of 256 bytes: got %d %s\nwant 200 %s", code, got, want)
	}
	// 256 bytes of uid, each written as one.
	if len(got) != 411 {
		t.Errorf("the answer is %d bytes, want 411", len(got))
	}
}

// A desiredAPIVersion longer than a group and a version can be is refused
// 400, unread past its bound; one of the right length that the webhook does
// not serve is a Failure that says so, before any object is converted or
// read.
func TestDesiredAPIVersionNotServedIsRefusedBeforeAnyObject(t *testing.T) {
	head := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u",` +
		`"desiredAPIVersion":"`
	body := &countingReader{r: io.MultiReader(strings.NewReader(head), endless("&"))}
	code, got := serve(Handler(), body)
	if want := "a review's desiredAPIVersion is at most 317 bytes\n"; code != http.StatusBadRequest || got != want {
		t.Errorf("a desiredAPIVersion of `&` for ever: got %d %q, want 400 %q", code, got, want)
	}
	if body.read > 512 {
		t.Errorf("read %d bytes of the review, want at most 512", body.read)
	}

	code, got = serve(Handler(), strings.NewReader(head+strings.Repeat("v", 318)+`","objects":[]}}`))
	if want := "a review's desiredAPIVersion is at most 317 bytes\n"; code != http.StatusBadRequest || got != want {
		t.Errorf("a desiredAPIVersion of 318 bytes: got %d %q, want 400 %q", code, got, want)
	}

	// Not served: the objects after it, here a review of numbers that
	// would each fail, are not read.
	body = &countingReader{r: io.MultiReader(strings.NewReader(head+`samplecontroller.k8s.io/v9","objects":[`),
		endless("1,"))}
	code, got = serve(Handler(), body)
	want := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"u","convertedObjects":null,` +
		`"result":{"metadata":{},"status":"Failure",` +
		`"message":"desiredAPIVersion \"samplecontroller.k8s.io/v9\": not a served version of Foo"}}}` + "\n"
	if code != http.StatusOK || got != want {
		t.Errorf("an unserved desiredAPIVersion: got %d %s\nwant 200 %s", code, got, want)
	}
	if body.read > 512 {
		t.Errorf("read %d bytes of the review, want at most 512", body.read)
	}

	// Objects sent before it are kept, not converted, and dropped.
	code, got = serve(Handler(), strings.NewReader(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview",`+
		`"request":{"uid":"u","objects":[`+betaFoo(1)+`],"desiredAPIVersion":"samplecontroller.k8s.io/v9"}}`))
	if code != http.StatusOK || got != want {
		t.Errorf("an unserved desiredAPIVersion after the objects: got %d %s\nwant 200 %s", code, got, want)
	}
}

// A Foo whose annotation is `<` throughout is answered at its own size, `<`
// written as one byte, not as the six of \u003c.
func TestObjectOfAngleBracketsIsAnsweredAtItsOwnSize(t *testing.T) {
	note := strings.Repeat("<", 1000)
	object := `{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","metadata":{"name":"lt",` +
		`"annotations":{"note":"` + note + `"}},"spec":{"deployment":{"name":"d"}},"status":{"availableReplicas":0}}`
	code, got := serve(Handler(), strings.NewReader(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview",`+
		`"request":{"uid":"5f0e3c2a-1b7d-4c55-9a8e-2f6d1c0b9e41","desiredAPIVersion":"samplecontroller.k8s.io/v1alpha1",`+
		`"objects":[`+object+`]}}`))
	converted := `{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1alpha1","metadata":{"name":"lt",` +
		`"annotations":{"note":"` + note + `"}},"spec":{"deploymentName":"d"},"status":{"availableReplicas":0}}`
	want := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{` +
		`"uid":"5f0e3c2a-1b7d-4c55-9a8e-2f6d1c0b9e41","convertedObjects":[` + converted + `],` +
		`"result":{"metadata":{},"status":"Success"}}}` + "\n"
	if code != http.StatusOK || got != want {
		t.Errorf("got %d %s\nwant 200 %s", code, got, want)
	}
	// The object was sent in 1,180 bytes and is answered in 1,176 (the
	// Deployment's name moved up a level, v1alpha1 is a byte longer than
	// v1beta1); with `<` as \u003c, it was 6,176.
	if len(object) != 1180 || len(converted) != 1176 || len(got) != 1367 {
		t.Errorf("sent an object of %d bytes, answered %d in %d; want 1180, 1176 in 1367",
			len(object), len(converted), len(got))
	}
}

// An object larger than the API server stores is a Failure naming it, read
// no further than the bound: a Foo with an annotation of 20 MiB of `<`,
// which the webhook once read whole, converted and answered six times over.
func TestObjectLargerThanTheBoundIsRefusedUnread(t *testing.T) {
	head := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u",` +
		`"desiredAPIVersion":"samplecontroller.k8s.io/v1alpha1","objects":[` +
		`{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","metadata":{"name":"big","annotations":{"note":"`
	tail := `"}},"spec":{"deployment":{"name":"d"}}}]}}`
	body := &countingReader{r: io.MultiReader(strings.NewReader(head),
		io.LimitReader(endless("<"), 20<<20), strings.NewReader(tail))}
	code, got := serve(Handler(), body)
	want := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"u","convertedObjects":null,` +
		`"result":{"metadata":{},"status":"Failure",` +
		`"message":"object 1: larger than 3145728 bytes, the most the API server stores"}}}` + "\n"
	if code != http.StatusOK || got != want {
		t.Errorf("got %d %s\nwant 200 %s", code, got, want)
	}
	// 3 MiB of the object, and what came before it.
	if body.read > 3<<20+1<<10 {
		t.Errorf("read %d bytes of the review, want at most 3 MiB and 1 KiB", body.read)
	}

	// The bound is on the object as sent: at it the object converts, one
	// byte under it does not.
	object := betaFoo(1)
	review := reviewHead + object + `]}}`
	for _, tc := range []struct {
		bound int64
		want  string
	}{
		{int64(len(object)), `"status":{"availableReplicas":2,"observedGeneration":1}}],"result":{"metadata":{},"status":"Success"}}}`},
		// The bound is the object's length less one: 267 bytes here, fewer
		// in a copy whose group is shorter (hack/new-controller).
		{int64(len(object)) - 1, `"convertedObjects":null,"result":{"metadata":{},"status":"Failure",` +
			fmt.Sprintf(`"message":"object 1: larger than %d bytes, the most the API server stores"}}}`, len(object)-1)},
	} {
		h := newHandler(bounds{review: 1 << 20, object: tc.bound, answer: 1 << 20}, newBudget(1<<20, 4, time.Second))
		code, got := serve(h, strings.NewReader(review))
		if code != http.StatusOK || !strings.HasSuffix(got, tc.want+"\n") {
			t.Errorf("an object of %d bytes, bound %d: got %d %s\nwant 200 ending %s", len(object), tc.bound, code, got, tc.want)
		}
	}
}

// The converted objects are bounded as they are converted: the object that
// would take them past the bound is a Failure naming it, and what was
// converted before it is dropped.
func TestAnswerLargerThanTheBoundIsRefused(t *testing.T) {
	// A v1alpha1 Foo grows by 4 bytes in v1beta1: spec.deploymentName
	// becomes spec.deployment.name (5), v1alpha1 v1beta1 (-1).
	alphaFoo := `{"apiVersion":"samplecontroller.k8s.io/v1alpha1","kind":"Foo","metadata":{"name":"a"},` +
		`"spec":{"deploymentName":"d"},"status":{"availableReplicas":0}}`
	betaFoo := `{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1beta1","metadata":{"name":"a"},` +
		`"spec":{"deployment":{"name":"d"}},"status":{"availableReplicas":0}}`
	if len(alphaFoo) != 149 || len(betaFoo) != 153 {
		t.Fatalf("the Foos are %d and %d bytes, want 149 and 153", len(alphaFoo), len(betaFoo))
	}
	review := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u",` +
		`"desiredAPIVersion":"samplecontroller.k8s.io/v1beta1","objects":[` + alphaFoo + `,` + alphaFoo + `]}}`
	for _, tc := range []struct {
		answer int64
		want   string
	}{
		// Two objects and the comma between them.
		{307, `"convertedObjects":[` + betaFoo + `,` + betaFoo + `],"result":{"metadata":{},"status":"Success"}}}`},
		{306, `"convertedObjects":null,"result":{"metadata":{},"status":"Failure",` +
			`"message":"object 2: the converted objects would be larger than 306 bytes, the most the webhook answers"}}}`},
		// The object that read in 149 bytes would be answered in 153.
		{152, `"convertedObjects":null,"result":{"metadata":{},"status":"Failure",` +
			`"message":"object 1: the converted objects would be larger than 152 bytes, the most the webhook answers"}}}`},
	} {
		h := newHandler(bounds{review: 1 << 20, object: 1 << 20, answer: tc.answer}, newBudget(1<<20, 4, time.Second))
		code, got := serve(h, strings.NewReader(review))
		if code != http.StatusOK || !strings.HasSuffix(got, tc.want+"\n") {
			t.Errorf("answer bound %d: got %d %s\nwant 200 ending %s", tc.answer, code, got, tc.want)
		}
	}
}

// A converted object is charged to the budget for what it adds to the bytes
// read of it, and a review whose answer does not fit the budget is refused
// 429 as one whose body does not: the budget bounds what a review writes as
// well as what it reads.
func TestWhatAnAnswerAddsIsChargedToTheBudget(t *testing.T) {
	alphaFoo := func(name string) string {
		return `{"apiVersion":"samplecontroller.k8s.io/v1alpha1","kind":"Foo","metadata":{"name":"` + name + `"},` +
			`"spec":{"deploymentName":"d"}}`
	}
	var charges []int64
	refuse := errors.New("refused")
	charge := func(n int64) error {
		charges = append(charges, n)
		if len(charges) == 2 {
			return refuse
		}
		return nil
	}
	// To v1beta1 each grows by 4 bytes (spec.deployment.name, 5, and
	// v1beta1, -1) and the status it lacked (,"status":{"availableReplicas":0},
	// 33): 37. One already in v1beta1 is answered as sent, and charged
	// nothing more.
	in := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u",` +
		`"desiredAPIVersion":"samplecontroller.k8s.io/v1beta1","objects":[` + alphaFoo("a") + `,` + betaFoo(2) + `,` +
		alphaFoo("b") + `,` + alphaFoo("c") + `]}}`
	_, err := readReview(strings.NewReader(in), defaultBounds, charge)
	if !errors.Is(err, refuse) || len(charges) != 2 || charges[0] != 37 || charges[1] != 37 {
		t.Errorf("got %v after charges %v, want the refusal after charges [37 37]", err, charges)
	}

	// Through the handler: a review of 512 bytes, read at once (the
	// decoder's first read asks for 512), whose object grows by 37 bytes.
	// The name pads it to 512 bytes: 242 bytes here, more in a copy whose
	// group is shorter (hack/new-controller).
	reviewOf := func(name string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u",` +
			`"desiredAPIVersion":"samplecontroller.k8s.io/v1beta1","objects":[` + alphaFoo(name) + `]}}`
	}
	review := reviewOf(strings.Repeat("x", 512-len(reviewOf(""))))
	if len(review) != 512 {
		t.Fatalf("the review is %d bytes, want 512", len(review))
	}
	for _, tc := range []struct {
		budget int64
		code   int
	}{{512 + 37, http.StatusOK}, {512 + 36, http.StatusTooManyRequests}} {
		b := newBudget(tc.budget, 4, time.Second)
		code, got := serve(newHandler(defaultBounds, b), strings.NewReader(review))
		if code != tc.code {
			t.Errorf("budget %d: got %d %s, want %d", tc.budget, code, got, tc.code)
		}
		if b.used != 0 {
			t.Errorf("budget %d: %d bytes still held after the review, want 0", tc.budget, b.used)
		}
	}
}

// An object of more values than a Foo has is a Failure naming it, before it
// is decoded: each {} among a Foo's conditions, three bytes as sent, is a
// condition of five fields written back, a hundred bytes and more held.
func TestObjectOfMoreValuesThanAFooHasIsRefused(t *testing.T) {
	// 15: five objects and ten commas.
	if n := countValues([]byte(betaFoo(1))); n != 15 {
		t.Errorf("a Foo as the API server sends it: %d values, want 15", n)
	}
	// Braces and commas inside strings, escaped quotes among them, are
	// not counted: three objects and arrays, two commas.
	if n := countValues([]byte(`{"a":"{,[\"{,","b":["x",{}]}`)); n != 5 {
		t.Errorf("values with strings of braces and commas: %d, want 5", n)
	}
	conditions := func(n int) string {
		return `{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","status":{"conditions":[` +
			strings.Repeat(`{},`, n-1) + `{}]}}`
	}
	// n conditions: 2n+4 values (n+3 objects and arrays, n+1 commas).
	for _, tc := range []struct {
		conditions int
		want       string
	}{
		{4998, `"result":{"metadata":{},"status":"Success"}}}`},
		{4999, `"convertedObjects":null,"result":{"metadata":{},"status":"Failure",` +
			`"message":"object 1: more than 10000 values, the most the webhook converts in one object"}}}`},
	} {
		code, got := serve(Handler(), strings.NewReader(reviewHead+conditions(tc.conditions)+`]}}`))
		if code != http.StatusOK || !strings.HasSuffix(got, tc.want+"\n") {
			t.Errorf("%d conditions: got %d %.300s…\nwant 200 ending %s", tc.conditions, code, got, tc.want)
		}
	}
}
