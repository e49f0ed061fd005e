//go:build e2e

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

package e2e

// The events the controller records on Foos.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// fooEvents lists the events recorded on the Foo with this uid, optionally
// only those with the given reason.
func fooEvents(ctx context.Context, ns string, uid string, reason string) ([]corev1.Event, error) {
	selector := fields.Set{"involvedObject.uid": uid}
	if reason != "" {
		selector["reason"] = reason
	}
	list, err := cluster.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector.AsSelector().String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func describeEvents(events []corev1.Event) string {
	lines := make([]string, 0, len(events))
	for _, e := range events {
		lines = append(lines, fmt.Sprintf("%s %s count=%d source=%s: %s", e.Type, e.Reason, e.Count, e.Source.Component, e.Message))
	}
	return "[" + strings.Join(lines, "; ") + "]"
}

// waitEvent waits until the Foo has at least one event with this reason.
func waitEvent(t *testing.T, foo *samplev1beta1.Foo, reason string) {
	t.Helper()
	eventually(t, convergeTimeout, fmt.Sprintf("a %s event on Foo %s", reason, foo.Name), func(ctx context.Context) (bool, error) {
		events, err := fooEvents(ctx, foo.Namespace, string(foo.UID), reason)
		if err != nil {
			return false, err
		}
		return len(events) > 0, nil
	})
}

// expectOneEvent checks that the Foo has exactly one event with this reason,
// of type eventType, from the controller, recorded once (count 1).
func expectOneEvent(t *testing.T, foo *samplev1beta1.Foo, eventType, reason string) corev1.Event {
	t.Helper()
	events, err := fooEvents(context.Background(), foo.Namespace, string(foo.UID), reason)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 {
		t.Fatalf("Foo %s: %d %s events, want exactly 1: %s", foo.Name, len(events), reason, describeEvents(events))
	}
	e := events[0]
	if e.Type != eventType || e.Count != 1 || e.Source.Component != samplecontroller.ControllerName {
		t.Fatalf("Foo %s: event %s, want type %s, count 1, source %s", foo.Name, describeEvents(events), eventType, samplecontroller.ControllerName)
	}
	return e
}

// waitEventCount waits until the Foo has exactly one event with this reason
// and message, seen count times (the event recorder folds repeats of an
// event into one Event with a count).
func waitEventCount(t *testing.T, foo *samplev1beta1.Foo, reason, message string, count int32) {
	t.Helper()
	eventually(t, convergeTimeout, fmt.Sprintf("event %s %q on Foo %s, count %d", reason, message, foo.Name, count), func(ctx context.Context) (bool, error) {
		events, err := fooEvents(ctx, foo.Namespace, string(foo.UID), reason)
		if err != nil {
			return false, err
		}
		var matching []corev1.Event
		for _, e := range events {
			if e.Message == message {
				matching = append(matching, e)
			}
		}
		if len(matching) != 1 || matching[0].Count != count || matching[0].Source.Component != samplecontroller.ControllerName {
			return false, fmt.Errorf("events %s", describeEvents(events))
		}
		return true, nil
	})
}
