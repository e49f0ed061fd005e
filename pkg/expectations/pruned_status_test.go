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

package expectations

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// A pruned status is news once; the same status, whatever its conditions'
// transition times, is recognized until the Foo is forgotten.
func TestPrunedStatusIsNewsOnce(t *testing.T) {
	status := func(reason string, at time.Time) samplev1beta1.FooStatus {
		return samplev1beta1.FooStatus{Conditions: []metav1.Condition{{
			Type: samplecontroller.ConditionReady, Status: metav1.ConditionTrue, Reason: reason,
			LastTransitionTime: metav1.NewTime(at)}}}
	}
	var p PrunedStatuses
	first := status(samplecontroller.ReasonAvailable, time.Unix(100, 0))
	if p.SameAsPruned("uid-a", first) {
		t.Fatal("a status is known before any was pruned")
	}
	if !p.Remember("uid-a", first) {
		t.Error("the first pruned status is not news")
	}
	if p.Remember("uid-a", first) {
		t.Error("the same pruned status is news again")
	}
	if !p.SameAsPruned("uid-a", status(samplecontroller.ReasonAvailable, time.Unix(200, 0))) {
		t.Error("a status that differs in its transition time alone counts as another")
	}
	if p.SameAsPruned("uid-a", status(samplecontroller.ReasonProgressing, time.Unix(100, 0))) ||
		p.SameAsPruned("uid-b", first) {
		t.Error("another status, or another Foo, counts as the one pruned")
	}
	p.Forget("uid-a")
	if p.SameAsPruned("uid-a", first) {
		t.Error("a forgotten Foo's status is still known")
	}
}
