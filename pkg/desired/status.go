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

package desired

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// ReadyCondition is the Ready condition for a Foo whose Deployment is the given
// one: True once the rollout is complete with every desired replica updated
// and available, in the manner of "kubectl rollout status".
func ReadyCondition(foo *samplev1beta1.Foo, deployment *CachedDeployment) metav1.Condition {
	want := Replicas(&foo.Spec)
	st := deployment.Status
	var msg string
	switch {
	case st.ObservedGeneration < deployment.Generation:
		msg = fmt.Sprintf("Deployment %s: waiting for the deployment controller to observe the latest spec", deployment.Name)
	case st.ProgressDeadlineExceeded:
		msg = fmt.Sprintf("Deployment %s: rollout exceeded its progress deadline", deployment.Name)
	case st.UpdatedReplicas < want:
		msg = fmt.Sprintf("Deployment %s: %d of %d replicas updated", deployment.Name, st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		msg = fmt.Sprintf("Deployment %s: %d old replicas pending termination",
			deployment.Name, st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < want:
		msg = fmt.Sprintf("Deployment %s: %d of %d replicas available", deployment.Name, st.AvailableReplicas, want)
	default:
		return metav1.Condition{
			Type:    samplecontroller.ConditionReady,
			Status:  metav1.ConditionTrue,
			Reason:  samplecontroller.ReasonAvailable,
			Message: fmt.Sprintf("Deployment %s: %d of %d replicas available", deployment.Name, st.AvailableReplicas, want),
		}
	}
	return NotReady(samplecontroller.ReasonProgressing, msg)
}

// NotReady is a Ready=False condition with the given reason and message,
// the message cut to what the CRD admits (samplecontroller.CutConditionMessage):
// a problem's message may quote the API server's error, of any length, and
// a status write the CRD refuses would leave the Foo reporting nothing. The
// problem's event keeps the whole message.
func NotReady(reason, message string) metav1.Condition {
	return metav1.Condition{
		Type:    samplecontroller.ConditionReady,
		Status:  metav1.ConditionFalse,
		Reason:  reason,
		Message: samplecontroller.CutConditionMessage(message),
	}
}

// StatusFor returns the status the Foo should have: the replica counts of
// its Deployment (nil when it has none of its own), the pod selector for the
// scale subresource, and the Ready condition, all stamped with the Foo's
// generation. The Foo itself is not modified; an unchanged condition keeps
// its lastTransitionTime.
func StatusFor(
	foo *samplev1beta1.Foo, deployment *CachedDeployment, ready metav1.Condition,
) samplev1beta1.FooStatus {
	status := samplev1beta1.FooStatus{
		ObservedGeneration: foo.Generation,
		Selector:           labels.SelectorFromSet(PodLabels(foo)).String(),
		Conditions:         append([]metav1.Condition(nil), foo.Status.Conditions...),
	}
	if deployment != nil {
		status.AvailableReplicas = deployment.Status.AvailableReplicas
		status.Replicas = deployment.Status.Replicas
	}
	ready.ObservedGeneration = foo.Generation
	meta.SetStatusCondition(&status.Conditions, ready)
	return status
}

// StatusFields lists the JSON names of FooStatus's fields: what the controller
// writes, and what the installed CRD's schema must keep.
func StatusFields() []string {
	names, _ := statusFieldValues(samplev1beta1.FooStatus{})
	return names
}

// PrunedStatusFields lists, as status.<field>, the fields the controller sent
// set that the API server stored empty: what happens when the installed CRD's
// schema lacks them (it was replaced by an older one while the controller
// runs).
func PrunedStatusFields(sent, stored samplev1beta1.FooStatus) []string {
	names, sentValues := statusFieldValues(sent)
	_, storedValues := statusFieldValues(stored)
	var pruned []string
	for i, name := range names {
		if !sentValues[i].IsZero() && storedValues[i].IsZero() {
			pruned = append(pruned, "status."+name)
		}
	}
	return pruned
}

// statusFieldValues returns the JSON name and the value of each field of a
// FooStatus, in declaration order.
func statusFieldValues(status samplev1beta1.FooStatus) ([]string, []reflect.Value) {
	v := reflect.ValueOf(status)
	names := make([]string, 0, v.NumField())
	values := make([]reflect.Value, 0, v.NumField())
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		names = append(names, name)
		values = append(values, v.Field(i))
	}
	return names, values
}

// EqualIgnoringTransitionTimes reports whether two statuses are the same but
// for their conditions' lastTransitionTime.
func EqualIgnoringTransitionTimes(a, b samplev1beta1.FooStatus) bool {
	return equality.Semantic.DeepEqual(withoutTransitionTimes(a), withoutTransitionTimes(b))
}

func withoutTransitionTimes(status samplev1beta1.FooStatus) samplev1beta1.FooStatus {
	out := *status.DeepCopy()
	for i := range out.Conditions {
		out.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return out
}

// StatusPatch is the write of status to a Foo's status subresource: a JSON
// patch replacing the whole status, conditional on the Foo being at
// resourceVersion, the version the status was computed from. A Foo changed
// since is refused with 409 Conflict, rather than a stale status overwriting
// a newer one.
func StatusPatch(resourceVersion string, status samplev1beta1.FooStatus) ([]byte, error) {
	return json.Marshal([]jsonPatchOperation{
		{Op: "replace", Path: "/metadata/resourceVersion", Value: resourceVersion},
		{Op: "add", Path: "/status", Value: status},
	})
}

// jsonPatchOperation is one operation of an RFC 6902 JSON patch.
type jsonPatchOperation struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value,omitempty"`
}
