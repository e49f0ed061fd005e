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
	"fmt"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/klog/v2"
)

// Path is where the webhook is served; the CRD's
// spec.conversion.webhook.clientConfig names it.
const Path = "/convert"

// maxReviewBytes bounds a request body. The API server converts a list in
// one review, so a review is as large as the largest list of Foos a client
// reads in the other version, not as one object, which etcd bounds.
const maxReviewBytes = 64 << 20

// review is apiextensions.k8s.io/v1 ConversionReview, the body the API
// server posts and expects back: the request's objects, converted in order
// to desiredAPIVersion, under the request's UID. Written out here, as this
// module does not depend on the apiextensions types for a handful of fields.
type review struct {
	metav1.TypeMeta `json:",inline"`
	Request         *reviewRequest  `json:"request,omitempty"`
	Response        *reviewResponse `json:"response,omitempty"`
}

type reviewRequest struct {
	UID               types.UID              `json:"uid"`
	DesiredAPIVersion string                 `json:"desiredAPIVersion"`
	Objects           []runtime.RawExtension `json:"objects"`
}

type reviewResponse struct {
	UID              types.UID              `json:"uid"`
	ConvertedObjects []runtime.RawExtension `json:"convertedObjects"`
	Result           metav1.Status          `json:"result"`
}

// reviewAPIVersion is the one ConversionReview version the CRD lists in
// conversionReviewVersions.
const reviewAPIVersion = "apiextensions.k8s.io/v1"

// Handler serves conversion reviews. A review whose objects do not all
// convert is answered with a Failure naming the first that did not: the API
// server then fails the client's request with that message rather than
// return a partial list.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger := klog.FromContext(r.Context())
		if r.Method != http.MethodPost {
			http.Error(w, "conversion reviews are POSTed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
		if err != nil {
			http.Error(w, fmt.Sprintf("reading the review: %v", err), http.StatusBadRequest)
			return
		}
		var in review
		if err := json.Unmarshal(body, &in); err != nil || in.Request == nil {
			http.Error(w, fmt.Sprintf("not a ConversionReview with a request: %v", err), http.StatusBadRequest)
			return
		}
		if in.APIVersion != reviewAPIVersion || in.Kind != "ConversionReview" {
			http.Error(w, fmt.Sprintf("a %s ConversionReview is expected, not %s %s",
				reviewAPIVersion, in.APIVersion, in.Kind), http.StatusBadRequest)
			return
		}
		resp := convertAll(in.Request)
		if resp.Result.Status != metav1.StatusSuccess {
			logger.Error(nil, "Refused a conversion", "uid", resp.UID, "reason", resp.Result.Message)
		}
		out, err := json.Marshal(review{TypeMeta: in.TypeMeta, Response: resp})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	})
}

// convertAll converts a request's objects, all or none.
func convertAll(req *reviewRequest) *reviewResponse {
	resp := &reviewResponse{UID: req.UID, ConvertedObjects: make([]runtime.RawExtension, 0, len(req.Objects))}
	for i, obj := range req.Objects {
		converted, err := Convert(obj.Raw, req.DesiredAPIVersion)
		if err != nil {
			resp.ConvertedObjects = nil
			resp.Result = metav1.Status{Status: metav1.StatusFailure,
				Message: fmt.Sprintf("object %d of %d: %v", i+1, len(req.Objects), err)}
			return resp
		}
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: converted})
	}
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return resp
}
