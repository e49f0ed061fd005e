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
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	samplescheme "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/scheme"
)

// fakeEventSink records the events written; the first failures calls of
// Create fail with err.
type fakeEventSink struct {
	mu       sync.Mutex
	created  []*corev1.Event
	failures int
	err      error
	calls    int
}

func (s *fakeEventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.calls <= s.failures {
		return nil, s.err
	}
	s.created = append(s.created, e)
	return e, nil
}

func (s *fakeEventSink) Update(e *corev1.Event) (*corev1.Event, error) { return e, nil }

func (s *fakeEventSink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return e, nil }

func droppedEvents(t *testing.T, eventType string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(eventsDropped.WithLabelValues(eventType))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// newTestRecorder returns a recorder queueing on a new queue.
func newTestRecorder(t *testing.T) (*eventRecorder, *eventQueue) {
	t.Helper()
	if err := samplescheme.AddToScheme(scheme.Scheme); err != nil {
		t.Fatal(err)
	}
	queue := newEventQueue()
	logger, _ := ktesting.NewTestContext(t)
	return &eventRecorder{scheme: scheme.Scheme, source: corev1.EventSource{Component: samplev1alpha1.ControllerName}, queue: queue, logger: logger}, queue
}

// When the Normal events waiting fill the queue, the next Normal event is
// dropped and counted, and a Warning is still queued, and written first.
func TestWarningIsWrittenWhenNormalEventsOverflow(t *testing.T) {
	recorder, queue := newTestRecorder(t)
	normalBefore, warningBefore := droppedEvents(t, corev1.EventTypeNormal), droppedEvents(t, corev1.EventTypeWarning)

	// One Foo per event: the correlator would hold back repeats on one
	// object, which is not what this test is about.
	for i := range 1001 {
		recorder.Eventf(newFoo(fmt.Sprintf("foo-%04d", i), 1), corev1.EventTypeNormal, samplev1alpha1.ReasonSynced, "Created Deployment %d", i)
	}
	recorder.Event(newFoo("broken", 1), corev1.EventTypeWarning, samplev1alpha1.ReasonResourceExists, "taken")
	if got := droppedEvents(t, corev1.EventTypeNormal) - normalBefore; got != 1 {
		t.Errorf("%v Normal events counted as dropped, want 1 (the 1001st)", got)
	}

	queue.close()
	sink := &fakeEventSink{}
	ctx := testContext(t)
	newEventWriter(queue, sink).run(ctx)
	if got := droppedEvents(t, corev1.EventTypeWarning) - warningBefore; got != 0 {
		t.Errorf("%v Warnings dropped, want 0", got)
	}
	if len(sink.created) != 1001 {
		t.Fatalf("%d events written, want 1001: the Warning and the first 1000 Normal events", len(sink.created))
	}
	first := sink.created[0]
	if first.Type != corev1.EventTypeWarning || first.Reason != samplev1alpha1.ReasonResourceExists || first.InvolvedObject.Name != "broken" ||
		first.InvolvedObject.Kind != "Foo" || first.Source.Component != samplev1alpha1.ControllerName || first.Namespace != "default" {
		t.Errorf("first event written: %+v, want the Warning about Foo broken", first)
	}
	if second, last := sink.created[1], sink.created[1000]; second.Message != "Created Deployment 0" || last.Message != "Created Deployment 999" {
		t.Errorf("Normal events written from %q to %q, want from the first to the 1000th", second.Message, last.Message)
	}
}

// An event the API server did not answer is sent again; one it refused is
// not, since it would be refused again.
func TestEventIsRetriedOnlyWithoutAnAnswer(t *testing.T) {
	for name, tc := range map[string]struct {
		err       error
		wantCalls int
		wantWrote int
	}{
		"no answer twice, then written": {err: errors.New("connection refused"), wantCalls: 3, wantWrote: 1},
		"refused":                       {err: apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "x", errors.New("no")), wantCalls: 1, wantWrote: 0},
	} {
		t.Run(name, func(t *testing.T) {
			recorder, queue := newTestRecorder(t)
			recorder.Event(newFoo("test", 1), corev1.EventTypeWarning, samplev1alpha1.ReasonResourceExists, "taken")
			queue.close()
			sink := &fakeEventSink{failures: 2, err: tc.err}
			writer := newEventWriter(queue, sink)
			writer.retryInterval = time.Millisecond
			writer.run(testContext(t))
			if sink.calls != tc.wantCalls || len(sink.created) != tc.wantWrote {
				t.Errorf("%d calls, %d events written; want %d and %d", sink.calls, len(sink.created), tc.wantCalls, tc.wantWrote)
			}
		})
	}
}

// Once the queue is closed, run returns when the events queued before are
// written: the events of the last syncs go out at shutdown.
func TestEventWriterDrainsTheQueueOnClose(t *testing.T) {
	recorder, queue := newTestRecorder(t)
	sink := &fakeEventSink{}
	done := make(chan struct{})
	ctx := testContext(t)
	go func() {
		defer close(done)
		newEventWriter(queue, sink).run(ctx)
	}()
	recorder.Event(newFoo("a", 1), corev1.EventTypeNormal, samplev1alpha1.ReasonSynced, "one")
	recorder.Event(newFoo("b", 1), corev1.EventTypeNormal, samplev1alpha1.ReasonSynced, "two")
	queue.close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not return within 10 s of close")
	}
	if len(sink.created) != 2 || sink.created[0].Message != "one" || sink.created[1].Message != "two" {
		t.Errorf("written: %d events, want one and two in order", len(sink.created))
	}
}

// testContext returns a context logging to t.
func testContext(t *testing.T) context.Context {
	_, ctx := ktesting.NewTestContext(t)
	return ctx
}
