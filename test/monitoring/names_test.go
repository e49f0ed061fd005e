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

package monitoring

// The monitoring artifacts spell out names whose source is Go: the
// controller's name (objects, labels, the dashboard's file) and the reasons
// of a Foo's Ready condition. These checks hold each to its constant, so
// that a hand edit on one side fails make unit.

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

func TestMonitoringObjectsAreNamedForTheController(t *testing.T) {
	name := samplecontroller.ControllerName
	if want := Dir + "/dashboards/" + name + ".json"; DashboardFile != want {
		t.Errorf("DashboardFile is %s, want %s (the controller's name)", DashboardFile, want)
	}
	for _, obj := range rendered(t) {
		wantName := name
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			wantName = name + "-dashboard"
			var keys []string
			for key := range cm.Data {
				keys = append(keys, key)
			}
			if want := []string{name + ".json"}; !slices.Equal(keys, want) {
				t.Errorf("ConfigMap %s: data keys %v, want %v", cm.Name, keys, want)
			}
		}
		if obj.GetName() != wantName {
			t.Errorf("%T: name %q, want %q", obj, obj.GetName(), wantName)
		}
		if got := obj.GetLabels()["app.kubernetes.io/name"]; got != name {
			t.Errorf("%T %s: label app.kubernetes.io/name %q, want %q", obj, obj.GetName(), got, name)
		}
	}
}

// SampleControllerFoosNotReady leaves out the Foos whose owner must act,
// which the dashboard shows: a spec the controller refuses, a Deployment
// name another object holds. The reasons are strings in PromQL.
func TestFoosNotReadyAlertLeavesOutTheReasonsOwnersMustAct(t *testing.T) {
	rule, err := LoadPrometheusRule(root(t))
	if err != nil {
		t.Fatal(err)
	}
	var alert *monitoringv1.Rule
	for _, a := range Alerts(rule) {
		if a.Alert == "SampleControllerFoosNotReady" {
			alert = &a
		}
	}
	if alert == nil {
		t.Fatalf("%s has no alert SampleControllerFoosNotReady", RuleFile)
	}
	expr := alert.Expr.String()
	matcher := regexp.MustCompile(`reason!~"([^"]*)"`).FindAllStringSubmatch(expr, -1)
	if len(matcher) != 1 {
		t.Fatalf("SampleControllerFoosNotReady: %d reason!~ matchers in %q, want 1", len(matcher), expr)
	}
	got := strings.Split(matcher[0][1], "|")
	slices.Sort(got)
	want := []string{samplecontroller.ReasonInvalidSpec, samplecontroller.ReasonResourceExists}
	if !slices.Equal(got, want) {
		t.Errorf("SampleControllerFoosNotReady leaves out reasons %v, want %v (pkg/apis/.../well_known.go)", got, want)
	}
	for _, reason := range want {
		if !strings.Contains(alert.Annotations["description"], reason) {
			t.Errorf("SampleControllerFoosNotReady's description does not name %s, which it leaves out", reason)
		}
	}
}
