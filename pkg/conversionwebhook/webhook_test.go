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

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// post sends body to the handler and returns the status and the response.
func post(t *testing.T, method, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(method, Path, strings.NewReader(body)))
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

// The API server's review comes back under its UID, the objects converted
// in order.
func TestReviewIsAnsweredUnderItsUIDWithTheObjectsInOrder(t *testing.T) {
	code, got := post(t, http.MethodPost, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview",`+
		`"request":{"uid":"r1","desiredAPIVersion":"samplecontroller.k8s.io/v1alpha1","objects":[`+
		`{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","metadata":{"name":"one"},"spec":{"deployment":{"name":"d1"}}},`+
		`{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","metadata":{"name":"two"},"spec":{"deployment":{"name":"d2"}}}]}}`)
	want := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"r1","convertedObjects":[` +
		`{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1alpha1","metadata":{"name":"one"},"spec":{"deploymentName":"d1"},"status":{"availableReplicas":0}},` +
		`{"kind":"Foo","apiVersion":"samplecontroller.k8s.io/v1alpha1","metadata":{"name":"two"},"spec":{"deploymentName":"d2"},"status":{"availableReplicas":0}}],` +
		`"result":{"metadata":{},"status":"Success"}}}`
	if code != http.StatusOK || got != want {
		t.Errorf("got %d %s\nwant 200 %s", code, got, want)
	}
}

// One object that does not convert fails the whole review, with a message
// the API server passes on to the client, and no partial list.
func TestReviewWithAnObjectThatDoesNotConvertFailsWhole(t *testing.T) {
	code, got := post(t, http.MethodPost, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview",`+
		`"request":{"uid":"r2","desiredAPIVersion":"samplecontroller.k8s.io/v1beta1","objects":[`+
		`{"apiVersion":"samplecontroller.k8s.io/v1alpha1","kind":"Foo","metadata":{"name":"one"}},`+
		`{"apiVersion":"samplecontroller.k8s.io/v9","kind":"Foo","metadata":{"name":"two"}}]}}`)
	want := `{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1","response":{"uid":"r2","convertedObjects":null,` +
		`"result":{"metadata":{},"status":"Failure",` +
		`"message":"object 2: cannot convert from \"samplecontroller.k8s.io/v9\": not a served version of Foo"}}}`
	if code != http.StatusOK || got != want {
		t.Errorf("got %d %s\nwant 200 %s", code, got, want)
	}
}

// What is not a v1 ConversionReview POSTed is a client error.
func TestWhatIsNotAReviewIsABadRequest(t *testing.T) {
	for _, tc := range []struct {
		method, body string
		code         int
	}{
		{http.MethodGet, "", http.StatusMethodNotAllowed},
		{http.MethodPost, "{", http.StatusBadRequest},
		{http.MethodPost, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`, http.StatusBadRequest},
		{http.MethodPost, `{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","request":{}}`,
			http.StatusBadRequest},
	} {
		if code, body := post(t, tc.method, tc.body); code != tc.code {
			t.Errorf("%s %q: got %d (%s), want %d", tc.method, tc.body, code, body, tc.code)
		}
	}
}
