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

package prunedstatus

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

// A pruned status is news once; the same status, whatever its conditions'
// transition times, is recognized until the Foo's memory is forgotten.
func TestPrunedStatusIsNewsOnce(t *testing.T) {
	var m Memory
	status := func(reason string, at time.Time) samplev1alpha1.FooStatus {
		return samplev1alpha1.FooStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{
			Type: samplecontroller.ConditionReady, Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(at)}}}
	}
	first := status("Available", time.Unix(100, 0))
	if m.SameAsPruned("uid-a", first) {
		t.Fatal("an empty memory knows a status")
	}
	if !m.Remember("uid-a", first) {
		t.Error("the first pruned status is not news")
	}
	if m.Remember("uid-a", first) {
		t.Error("the same pruned status is news again")
	}
	if !m.SameAsPruned("uid-a", status("Available", time.Unix(200, 0))) {
		t.Error("a new transition time makes the status a different one")
	}
	if m.SameAsPruned("uid-a", status("Progressing", time.Unix(100, 0))) || m.SameAsPruned("uid-b", first) {
		t.Error("another status, or another Foo, counts as the one pruned")
	}
	m.Forget("uid-a")
	if m.SameAsPruned("uid-a", first) {
		t.Error("a forgotten Foo's status is still known")
	}
}
