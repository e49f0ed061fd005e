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
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

func TestReadyCondition(t *testing.T) {
	foo := testfixtures.NewFoo("test", 3)
	for name, tc := range map[string]struct {
		mutate func(*appsv1.Deployment)
		status metav1.ConditionStatus
		reason string
		msg    string
	}{
		"rolled out": {func(*appsv1.Deployment) {}, metav1.ConditionTrue, samplecontroller.ReasonAvailable,
			"Deployment test-deployment: 3 of 3 replicas available"},
		"spec not observed yet": {func(d *appsv1.Deployment) { d.Generation = 2 }, metav1.ConditionFalse, samplecontroller.ReasonProgressing,
			"Deployment test-deployment: waiting for the deployment controller to observe the latest spec"},
		"scaling up": {func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 }, metav1.ConditionFalse, samplecontroller.ReasonProgressing,
			"Deployment test-deployment: 1 of 3 replicas updated"},
		"old pods terminating": {func(d *appsv1.Deployment) { d.Status.Replicas = 4 }, metav1.ConditionFalse, samplecontroller.ReasonProgressing,
			"Deployment test-deployment: 1 old replicas pending termination"},
		"not yet available": {func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 }, metav1.ConditionFalse, samplecontroller.ReasonProgressing,
			"Deployment test-deployment: 2 of 3 replicas available"},
		"progress deadline exceeded": {func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas = 0
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
		}, metav1.ConditionFalse, samplecontroller.ReasonProgressing, "Deployment test-deployment: rollout exceeded its progress deadline"},
	} {
		t.Run(name, func(t *testing.T) {
			d := testfixtures.OwnedDeployment(t, foo)
			tc.mutate(d)
			got := ReadyCondition(foo, CacheDeployment(d))
			if got.Type != samplecontroller.ConditionReady || got.Status != tc.status || got.Reason != tc.reason || got.Message != tc.msg {
				t.Errorf("got %s/%s %q, want %s/%s %q", got.Status, got.Reason, got.Message, tc.status, tc.reason, tc.msg)
			}
		})
	}
}

// Statuses that differ in their conditions' transition times alone are equal
// (a pruned status is recognized, expectations.PrunedStatuses); any other
// difference is one.
func TestEqualIgnoringTransitionTimes(t *testing.T) {
	status := func(reason string, at time.Time) samplev1beta1.FooStatus {
		return samplev1beta1.FooStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{
			Type: samplecontroller.ConditionReady, Status: metav1.ConditionTrue, Reason: reason,
			LastTransitionTime: metav1.NewTime(at)}}}
	}
	first := status(samplecontroller.ReasonAvailable, time.Unix(100, 0))
	if !EqualIgnoringTransitionTimes(first, status(samplecontroller.ReasonAvailable, time.Unix(200, 0))) {
		t.Error("a new transition time makes the status a different one")
	}
	if EqualIgnoringTransitionTimes(first, status(samplecontroller.ReasonProgressing, time.Unix(100, 0))) {
		t.Error("another reason counts as the same status")
	}
	if !first.Conditions[0].LastTransitionTime.Equal(ptr.To(metav1.NewTime(time.Unix(100, 0)))) {
		t.Error("the comparison modified the status it was given")
	}
}

// An unchanged condition keeps its lastTransitionTime; a changed one gets a
// new one. The Foo passed in is not modified.
func TestNewFooStatusKeepsTransitionTime(t *testing.T) {
	foo := testfixtures.NewFoo("test", 1)
	d := CacheDeployment(testfixtures.OwnedDeployment(t, foo))
	long := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	foo.Status.Conditions = []metav1.Condition{{Type: samplecontroller.ConditionReady, Status: metav1.ConditionTrue,
		Reason: samplecontroller.ReasonAvailable, LastTransitionTime: long}}

	same := StatusFor(foo, d, ReadyCondition(foo, d))
	if got := same.Conditions[0].LastTransitionTime; !got.Equal(&long) {
		t.Errorf("unchanged condition moved its transition time to %v", got)
	}
	changed := StatusFor(foo, nil, NotReady(samplecontroller.ReasonResourceExists, "taken"))
	if got := changed.Conditions[0].LastTransitionTime; got.Equal(&long) {
		t.Error("changed condition kept its old transition time")
	}
	if changed.AvailableReplicas != 0 || changed.Selector != "app=nginx,controller=test" || changed.ObservedGeneration != 1 {
		t.Errorf("status without a Deployment: %+v", changed)
	}
	if foo.Status.Conditions[0].Status != metav1.ConditionTrue || foo.Status.Conditions[0].Message != "" {
		t.Errorf("StatusFor modified the Foo: %+v", foo.Status.Conditions[0])
	}
}

// A refused write's message quotes the API server's error, which may be of
// any length: the Ready condition keeps its first 1023 characters and "…",
// characters and not bytes, as the CRD's rule counts them, so that the
// status write is admitted. A message at the bound is kept whole.
func TestNotReadyCutsAMessageToTheCRDsBound(t *testing.T) {
	refused := func(denial string) string {
		return RefusedProblem("create", "Deployment", "web", errors.New(denial)).Message
	}
	for name, tc := range map[string]struct{ message, want string }{
		// "Cannot create Deployment web: " is 30 characters.
		"at the bound": {refused(strings.Repeat("x", 994)), "Cannot create Deployment web: " + strings.Repeat("x", 994)},
		"one over": {refused(strings.Repeat("x", 995)),
			"Cannot create Deployment web: " + strings.Repeat("x", 993) + "…"},
		"two-byte characters, 40,000 bytes": {refused(strings.Repeat("é", 20000)),
			"Cannot create Deployment web: " + strings.Repeat("é", 993) + "…"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := NotReady(samplecontroller.ReasonFailedCreate, tc.message).Message; got != tc.want {
				t.Errorf("message of %d characters, want %d: %q", utf8.RuneCountInString(got), utf8.RuneCountInString(tc.want), got)
			}
		})
	}
}

// The messages the controller composes itself fit the bound whole at their
// longest (the name-taken one, with two names of 253 characters, has 594):
// only an error it quotes is ever cut. A bound lowered under them fails here.
func TestTheControllersOwnMessagesAreNeverCut(t *testing.T) {
	longest := strings.Repeat("a", 253) // a Foo's and a Deployment's name, at most
	foo := testfixtures.NewFoo(longest, 10)
	takenBy := &metav1.ObjectMeta{Name: longest, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: samplev1beta1.SchemeGroupVersion.String(), Kind: samplecontroller.FooKind,
		Name: strings.Repeat("b", 253), UID: "uid-other", Controller: ptr.To(true)}}}
	rollingOut := &CachedDeployment{ObjectMeta: metav1.ObjectMeta{Name: longest, Generation: 2},
		Status: Rollout{ObservedGeneration: 1}} // the longest rollout message
	for name, message := range map[string]string{
		"name taken by another Foo": NameTakenProblem("Deployment", takenBy).Message,
		"rollout":                   ReadyCondition(foo, rollingOut).Message,
	} {
		if got := NotReady(samplecontroller.ReasonProgressing, message).Message; got != message {
			t.Errorf("%s: %d characters, cut to MaxConditionMessageLength (%d): %q",
				name, utf8.RuneCountInString(message), samplecontroller.MaxConditionMessageLength, got)
		}
	}
}
