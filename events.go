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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Events, recorded without losing a Warning.
//
// client-go's event broadcaster queues 1,000 events and, when its queue is
// full, drops the next ones silently, whatever their type: a cold start over
// 10,000 Foos recorded 3,590 of its 10,000 "Created" Events. So the
// controller queues its events itself. A Warning says something a user must
// act on, comes once per problem, and is never dropped for lack of room; a
// Normal event (a Deployment created, updated, deleted) comes once per
// change, and at most maxQueuedNormalEvents wait: beyond that the newest is
// dropped and counted in samplecontroller_events_dropped_total. One writer
// sends them, Warnings first, through client-go's event correlator (which
// counts repeats of an event on one object rather than create it again) to
// the API server.

// maxQueuedNormalEvents bounds the Normal events waiting to be written; the
// size of client-go's queue, so that memory under a burst is as before.
const maxQueuedNormalEvents = 1000

// eventWriteAttempts and eventRetryInterval are how often, and how long
// apart, the writer tries an event the API server did not answer; client-go's
// figures (12 tries, about 10 s apart).
const (
	eventWriteAttempts = 12
	eventRetryInterval = 10 * time.Second
)

// eventQueue holds the events waiting to be written.
type eventQueue struct {
	mu       sync.Mutex
	warnings []*corev1.Event
	normals  []*corev1.Event
	closed   bool
	// wake has room for one signal: "there may be events".
	wake chan struct{}
}

func newEventQueue() *eventQueue {
	return &eventQueue{wake: make(chan struct{}, 1)}
}

// add queues an event; a Normal event finding maxQueuedNormalEvents waiting
// is dropped and counted, as is any event added after close.
func (q *eventQueue) add(event *corev1.Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		eventsDropped.WithLabelValues(event.Type).Inc()
		return
	case event.Type == corev1.EventTypeWarning:
		q.warnings = append(q.warnings, event)
	case len(q.normals) >= maxQueuedNormalEvents:
		eventsDropped.WithLabelValues(event.Type).Inc()
		return
	default:
		q.normals = append(q.normals, event)
	}
	select {
	case q.wake <- struct{}{}:
	default: // a signal is pending already
	}
}

// next returns the oldest Warning, else the oldest Normal event; it waits
// for one while the queue is open and empty, and returns false once it is
// closed and empty.
func (q *eventQueue) next() (*corev1.Event, bool) {
	for {
		q.mu.Lock()
		var event *corev1.Event
		switch {
		case len(q.warnings) > 0:
			event, q.warnings = q.warnings[0], q.warnings[1:]
		case len(q.normals) > 0:
			event, q.normals = q.normals[0], q.normals[1:]
		}
		closed := q.closed
		q.mu.Unlock()
		if event != nil {
			return event, true
		}
		if closed {
			return nil, false
		}
		<-q.wake
	}
}

// close lets next return false once the queue is empty.
func (q *eventQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// eventRecorder is the controller's record.EventRecorder: it builds the
// event as client-go's recorder does and queues it.
type eventRecorder struct {
	scheme *runtime.Scheme
	source corev1.EventSource
	queue  *eventQueue
	logger klog.Logger
}

var _ record.EventRecorder = &eventRecorder{}

func (r *eventRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.record(object, nil, eventtype, reason, message)
}

func (r *eventRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.record(object, nil, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (r *eventRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	r.record(object, annotations, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// record builds the event and queues it. An event that cannot be built is
// logged: a bug, not something a retry fixes.
func (r *eventRecorder) record(object runtime.Object, annotations map[string]string, eventtype, reason, message string) {
	ref, err := reference.GetReference(r.scheme, object)
	if err != nil {
		r.logger.Error(err, "Could not construct reference, will not record event", "eventType", eventtype, "reason", reason, "message", message)
		return
	}
	if !util.ValidateEventType(eventtype) {
		r.logger.Error(nil, "Unsupported event type", "eventType", eventtype, "reason", reason)
		return
	}
	now := metav1.Now()
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:        util.GenerateEventName(ref.Name, now.UnixNano()),
			Namespace:   namespace,
			Annotations: annotations,
		},
		InvolvedObject:      *ref,
		Reason:              reason,
		Message:             message,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                eventtype,
		Source:              r.source,
		ReportingController: r.source.Component,
		ReportingInstance:   r.source.Host,
	}
	r.logger.V(4).Info("Event occurred", "object", klog.KRef(ref.Namespace, ref.Name), "kind", ref.Kind,
		"type", eventtype, "reason", reason, "message", message)
	r.queue.add(event)
}

// eventWriter writes the queued events to the API server, one at a time.
type eventWriter struct {
	queue      *eventQueue
	sink       record.EventSink
	correlator *record.EventCorrelator
	// retryInterval is eventRetryInterval, shorter in tests.
	retryInterval time.Duration
}

func newEventWriter(queue *eventQueue, sink record.EventSink) *eventWriter {
	return &eventWriter{queue: queue, sink: sink, correlator: record.NewEventCorrelator(clock.RealClock{}), retryInterval: eventRetryInterval}
}

// run writes events until the queue is closed and empty. Once ctx is done,
// each remaining event gets one attempt, so that the events of the last
// syncs still go out and shutdown is not held up by an API server that does
// not answer.
func (w *eventWriter) run(ctx context.Context) {
	for {
		event, ok := w.queue.next()
		if !ok {
			return
		}
		w.write(ctx, event)
	}
}

// write sends one event through the correlator, retrying while the API
// server does not answer.
func (w *eventWriter) write(ctx context.Context, event *corev1.Event) {
	logger := klog.FromContext(ctx)
	result, err := w.correlator.EventCorrelate(event)
	if err != nil {
		logger.Error(err, "Event correlation failed", "event", klog.KObj(event))
	}
	if result == nil || result.Skip {
		return
	}
	for attempt := 1; ; attempt++ {
		retry, err := w.send(result)
		if !retry {
			if err != nil {
				logger.Error(err, "Server rejected event, not retrying", "event", klog.KObj(event), "reason", event.Reason)
			}
			return
		}
		if attempt >= eventWriteAttempts || ctx.Err() != nil {
			logger.Error(err, "Unable to write event, giving up", "event", klog.KObj(event), "reason", event.Reason, "attempts", attempt)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(w.retryInterval):
		}
	}
}

// send writes the correlated event once: a patch of the existing event when
// it repeats one, else a create. It reports whether to retry: only when the
// API server did not answer; an answer that refuses the event will not
// change.
func (w *eventWriter) send(result *record.EventCorrelateResult) (bool, error) {
	event := result.Event
	var written *corev1.Event
	var err error
	if event.Count > 1 {
		written, err = w.sink.Patch(event, result.Patch)
	}
	if event.Count <= 1 || util.IsKeyNotFoundError(err) {
		event.ResourceVersion = ""
		written, err = w.sink.Create(event)
	}
	if err == nil {
		w.correlator.UpdateState(written)
		return false, nil
	}
	return !isFinal(err), err
}

// isFinal tells whether sending the event again cannot succeed: the API
// server answered and refused it, or the request cannot be built. Anything
// else (no answer, a transport error) may pass on a retry.
func isFinal(err error) bool {
	var status apierrors.APIStatus
	var construction *rest.RequestConstructionError
	return errors.As(err, &status) || errors.As(err, &construction)
}
