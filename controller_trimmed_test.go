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

package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// A sync decides the same over trimmed Foos as over complete ones: the same
// API calls, with the same bodies, the same events and the same error. So
// the informer transform keeps every field of a Foo a sync reads. (A
// Deployment is always cached as a desired.CachedDeployment, which has no
// other fields to read; here each case shows that its decision, written out,
// is reached from the CachedDeployment of a Deployment as a cluster serves
// it.) The objects carry what a cluster adds (served), so that the trim has
// something to drop.
func TestSyncDecidesTheSameOverTrimmedCache(t *testing.T) {
	for name, tc := range map[string]struct {
		setup      func(t *testing.T, f *fixture) *samplev1beta1.Foo
		wantWrites []string
	}{
		"missing Deployment": {
			setup: func(_ *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 1)
				f.foos = append(f.foos, foo)
				return foo
			},
			wantWrites: []string{"create deployments test-deployment", "patch foos/status test application/json-patch+json"},
		},
		"in sync and Ready": {
			setup: func(t *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 2)
				d := testfixtures.OwnedDeployment(t, foo)
				f.foos = append(f.foos, testfixtures.WithSyncedStatus(t, foo, d))
				f.deployments = append(f.deployments, d)
				return foo
			},
			wantWrites: nil,
		},
		"Ready, status not yet written": {
			setup: func(t *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 2)
				f.foos = append(f.foos, foo)
				f.deployments = append(f.deployments, testfixtures.OwnedDeployment(t, foo))
				return foo
			},
			wantWrites: []string{"patch foos/status test application/json-patch+json"},
		},
		"not Ready: progress deadline exceeded": {
			setup: func(t *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 2)
				d := testfixtures.OwnedDeployment(t, foo)
				d.Status.AvailableReplicas = 1
				d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
					Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "test-deployment-5d4f8c7b9" has timed out progressing.`}}
				f.foos = append(f.foos, foo)
				f.deployments = append(f.deployments, d)
				return foo
			},
			wantWrites: []string{"patch foos/status test application/json-patch+json"},
		},
		"not Ready: rollout not observed yet": {
			setup: func(t *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 2)
				d := testfixtures.OwnedDeployment(t, foo)
				d.Generation = 2
				f.foos = append(f.foos, foo)
				f.deployments = append(f.deployments, d)
				return foo
			},
			wantWrites: []string{"patch foos/status test application/json-patch+json"},
		},
		"drifted replicas": {
			setup: func(t *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 3)
				d := testfixtures.OwnedDeployment(t, testfixtures.NewFoo("test", 1))
				f.foos = append(f.foos, foo)
				f.deployments = append(f.deployments, d)
				return foo
			},
			wantWrites: []string{"patch deployments test-deployment application/apply-patch+yaml", "patch foos/status test application/json-patch+json"},
		},
		"drifted image": {
			setup: func(t *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 1)
				d := testfixtures.OwnedDeployment(t, foo)
				d.Spec.Template.Spec.Containers[0].Image = "busybox"
				f.foos = append(f.foos, testfixtures.WithSyncedStatus(t, foo, d))
				f.deployments = append(f.deployments, d)
				return foo
			},
			wantWrites: []string{"patch deployments test-deployment application/apply-patch+yaml"},
		},
		"drifted labels": {
			setup: func(t *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 1)
				d := testfixtures.OwnedDeployment(t, foo)
				delete(d.Spec.Template.Labels, samplecontroller.LabelController)
				f.foos = append(f.foos, testfixtures.WithSyncedStatus(t, foo, d))
				f.deployments = append(f.deployments, d)
				return foo
			},
			wantWrites: []string{"patch deployments test-deployment application/apply-patch+yaml"},
		},
		"name taken by another Foo's Deployment": {
			setup: func(t *testing.T, f *fixture) *samplev1beta1.Foo {
				first, second := testfixtures.NewFoo("first", 1), testfixtures.NewFoo("second", 1)
				second.Spec.Deployment.Name = first.Spec.Deployment.Name
				d := testfixtures.OwnedDeployment(t, first)
				f.foos = append(f.foos, testfixtures.WithSyncedStatus(t, first, d), second)
				f.deployments = append(f.deployments, d)
				return second
			},
			wantWrites: []string{"patch foos/status second application/json-patch+json"},
		},
		"name taken by a Deployment no Foo controls": {
			setup: func(t *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 1)
				d := testfixtures.OwnedDeployment(t, foo)
				d.OwnerReferences = nil
				f.foos = append(f.foos, foo)
				f.deployments = append(f.deployments, d)
				return foo
			},
			wantWrites: []string{"patch foos/status test application/json-patch+json"},
		},
		"renamed Foo with its stale Deployment": {
			setup: func(t *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 1)
				old := testfixtures.OwnedDeployment(t, foo)
				foo.Spec.Deployment.Name = "renamed"
				foo.Generation = 2
				f.foos = append(f.foos, foo)
				f.deployments = append(f.deployments, old)
				return foo
			},
			wantWrites: []string{"create deployments renamed", "delete deployments test-deployment", "patch foos/status test application/json-patch+json"},
		},
		"invalid spec": {
			setup: func(_ *testing.T, f *fixture) *samplev1beta1.Foo {
				foo := testfixtures.NewFoo("test", 11)
				f.foos = append(f.foos, foo)
				return foo
			},
			wantWrites: []string{"patch foos/status test application/json-patch+json"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			complete := syncOutcomeOf(t, tc.setup, true)
			trimmed := syncOutcomeOf(t, tc.setup, false)
			if strings.Join(complete.writes, "; ") != strings.Join(tc.wantWrites, "; ") {
				t.Errorf("over complete Foos the sync wrote %q, want %q", complete.writes, tc.wantWrites)
			}
			if diff := complete.diff(trimmed); diff != "" {
				t.Errorf("the sync decided differently over trimmed Foos:\n%s", diff)
			}
		})
	}
}

// syncOutcome is what a sync did: every API call (reads included) with its
// body, the events and the error.
type syncOutcome struct {
	writes []string
	calls  []string
	events []string
	err    string
}

func (a syncOutcome) diff(b syncOutcome) string {
	var out []string
	for _, part := range []struct {
		name string
		a, b []string
	}{{"API calls", a.calls, b.calls}, {"events", a.events, b.events}, {"error", []string{a.err}, []string{b.err}}} {
		if strings.Join(part.a, "\n") != strings.Join(part.b, "\n") {
			out = append(out, fmt.Sprintf("%s, complete Foos:\n  %s\n%s, trimmed Foos:\n  %s",
				part.name, strings.Join(part.a, "\n  "), part.name, strings.Join(part.b, "\n  ")))
		}
	}
	return strings.Join(out, "\n")
}

// syncOutcomeOf sets up a fixture with served objects, caches them complete
// or trimmed, syncs the Foo setup returns once and reports what it did.
func syncOutcomeOf(t *testing.T, setup func(*testing.T, *fixture) *samplev1beta1.Foo, untrimmedFoos bool) syncOutcome {
	t.Helper()
	f := newFixture(t)
	f.untrimmedFoos = untrimmedFoos
	foo := setup(t, f)
	for _, o := range f.foos {
		servedFoo(o)
	}
	for _, d := range f.deployments {
		servedDeployment(d)
	}
	var outcome syncOutcome
	if err := f.sync(foo); err != nil {
		outcome.err = err.Error()
	}
	for _, a := range writes(append(f.kubeclient.Actions(), f.client.Actions()...)) {
		outcome.writes = append(outcome.writes, describe(a))
	}
	for _, a := range append(f.kubeclient.Actions(), f.client.Actions()...) {
		outcome.calls = append(outcome.calls, describe(a)+" "+actionBody(t, a))
	}
	for len(f.recorder.Events) > 0 {
		outcome.events = append(outcome.events, <-f.recorder.Events)
	}
	return outcome
}

// transitionTime matches a condition's lastTransitionTime: the wall clock
// at the sync, which two syncs need not share.
var transitionTime = regexp.MustCompile(`"lastTransitionTime":"[^"]*"`)

// actionBody renders what an action sends: the object created or updated,
// the patch, the delete options.
func actionBody(t *testing.T, a core.Action) string {
	t.Helper()
	var body interface{}
	switch a := a.(type) {
	case core.CreateAction: // or a core.UpdateAction: the two have the same methods
		body = a.GetObject()
	case core.PatchAction:
		return transitionTime.ReplaceAllString(string(a.GetPatch()), `"lastTransitionTime":"(sync time)"`)
	case core.DeleteAction:
		body = a.GetDeleteOptions()
	default:
		return ""
	}
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return transitionTime.ReplaceAllString(string(data), `"lastTransitionTime":"(sync time)"`)
}

// servedDeployment adds to d what a cluster adds to a Deployment: the API
// server's defaults and managedFields, kubectl's annotation, the deployment
// controller's revision and conditions, another team's label, owner and
// sidecar.
func servedDeployment(d *appsv1.Deployment) {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	d.CreationTimestamp = created
	d.Labels["team"] = "payments"
	d.Annotations = map[string]string{
		"deployment.kubernetes.io/revision":                "1",
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"apps/v1","kind":"Deployment"}`,
	}
	d.OwnerReferences = append([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "audit", UID: "uid-audit"}}, d.OwnerReferences...)
	d.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: samplecontroller.ControllerName, Operation: metav1.ManagedFieldsOperationApply,
		APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)}}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%"))}}
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-02T03:04:05Z"}
	pod := &d.Spec.Template.Spec
	pod.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	pod.Containers = append(pod.Containers, corev1.Container{Name: "log-shipper", Image: "fluent-bit:3"})
	pod.RestartPolicy = corev1.RestartPolicyAlways
	d.Status.ReadyReplicas = d.Status.AvailableReplicas
	d.Status.Conditions = append([]appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
		Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.", LastUpdateTime: created, LastTransitionTime: created}},
		d.Status.Conditions...)
}

// servedFoo adds to foo what a cluster adds: managedFields, kubectl's
// annotation, a label, a finalizer, a resourceVersion.
func servedFoo(foo *samplev1beta1.Foo) {
	foo.ResourceVersion = "42"
	foo.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	foo.Labels = map[string]string{"team": "payments"}
	foo.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"Foo"}`}
	foo.Finalizers = []string{"example.com/audit"}
	foo.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "samplecontroller.k8s.io/v1beta1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}
}
