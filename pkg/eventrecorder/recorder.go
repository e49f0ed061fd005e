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

// Package eventrecorder records the controller's events through client-go's
// event broadcaster, two of them: one for Warnings, one for Normal events.
//
// Why not upstream's one broadcaster: it queues 1,000 events and, when its
// queue is full, drops the next ones whatever their type, with a log line
// and no metric: a cold start over many Foos lost most of its "Created"
// events (docs/performance.md), and a Warning (something a user must act on,
// once per problem) recorded during such a burst was lost with them. Here
// Warnings and Normal events wait apart, so a burst of Normal events cannot
// crowd out a Warning; each kind admits at most maxWaiting events waiting to
// be written, so client-go's queue never overflows and every drop is ours,
// counted in samplecontroller_events_dropped_total{type}. Sharded, each
// shard's Recorder brings its share of that bound to its replica's WaitingEvents,
// and the shards a replica holds share the room they brought, for in a cold
// start every shard's writer falls behind at once: a replica holding 4 of 12
// shards holds at most a third of the events one replica of all the Foos
// does, as it holds a third of the Foos. A shard released takes back its
// room and gives back that of the events it never wrote. Shutdown, called once
// the workers stopped, waits for the events already recorded (those of the
// last syncs among them) before it shuts the broadcasters down.
//
// Everything else is client-go's: building the event, the correlator that
// counts repeats on one object rather than create them again, the retries.
// The correlator remembers the last objects it saw, defaultObjects for
// one replica of all the Foos, a shard's share of it for a shard's.
package eventrecorder

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/metrics"
)

// maxWaiting bounds the events of one type recorded and not yet taken by the
// writers of one replica of all the Foos: client-go's queue length, so that
// its queue never drops one. A shard's Recorder brings its share (roomOf).
const maxWaiting = 1000

// WaitingEvents counts the events of each type recorded and not yet taken by their
// writers, over the Recorders that share it, and holds them to the room those
// Recorders brought: at most maxWaiting, for all the shards.
type WaitingEvents struct {
	warnings, normals atomic.Int64
	room              atomic.Int64
}

// NewWaitingEvents returns a WaitingEvents to share among Recorders.
func NewWaitingEvents() *WaitingEvents { return &WaitingEvents{} }

// defaultObjects is how many objects the correlator of one replica of all
// the Foos remembers: client-go's own default (record's maxLruCacheEntries).
const defaultObjects = 4096

// objectsOf is how many objects the correlator of one of shards shards
// remembers: its share of defaultObjects, rounded up.
func objectsOf(shards int) int { return (defaultObjects + shards - 1) / shards }

// roomOf is how many events of a type one of shards shards may hold waiting:
// its share of maxWaiting, rounded down, so that the shards of a replica
// holding them all never hold more than client-go's queue takes.
func roomOf(shards int) int64 { return max(1, int64(maxWaiting/shards)) }

// Interface is what a Recorder does, for those that hold one: record
// events, and at Shutdown write those still waiting, for at most timeout.
type Interface interface {
	record.EventRecorder
	Shutdown(ctx context.Context, timeout time.Duration)
}

// Recorder is a record.EventRecorder whose Warnings never wait behind Normal
// events and whose drops are counted.
type Recorder struct {
	scheme   *runtime.Scheme
	logger   klog.Logger
	warnings *lane
	normals  *lane
	// shared is the replica's, which the Recorders of its other shards share;
	// room is what this one brought to it, taken back at Shutdown.
	shared   *WaitingEvents
	room     int64
	shutdown sync.Once
}

var _ record.EventRecorder = &Recorder{}

// lane is one broadcaster, for one event type.
type lane struct {
	eventType   string
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	// mu guards closed against a record racing Shutdown.
	mu     sync.RWMutex
	closed bool
	// waiting counts the events recorded that the writer has not taken
	// yet; writing counts the writes to the API server in progress.
	waiting, writing atomic.Int64
	// shared counts those of every lane of its type that shares the
	// replica's WaitingEvents, room how many it holds.
	shared, room *atomic.Int64
	// takeMu guards released: once the broadcaster is shut down, the
	// events it never took leave the shared count, and none twice.
	takeMu   sync.Mutex
	released bool
}

// New returns a Recorder writing events about objects of scheme, as
// component, to the Events of client, for a controller of one of shards
// shards (0 or 1: all the objects): its correlators remember the last
// objects of each type of event, and its events waiting count in shared, the
// replica's WaitingEvents (nil: one of its own), each its share of one replica's.
func New(ctx context.Context, client typedcorev1.EventsGetter, scheme *runtime.Scheme, component string, shards int,
	shared *WaitingEvents,
) *Recorder {
	// Not record.WithContext(ctx): the broadcasters must outlive ctx to
	// write the events of the syncs finished during shutdown.
	ctx = context.WithoutCancel(ctx)
	if shared == nil {
		shared = NewWaitingEvents()
	}
	shards = max(1, shards)
	room, objects := roomOf(shards), objectsOf(shards)
	shared.room.Add(room)
	sink := &typedcorev1.EventSinkImpl{Interface: client.Events("")}
	return &Recorder{
		scheme:   scheme,
		logger:   klog.FromContext(ctx),
		warnings: newLane(ctx, corev1.EventTypeWarning, &shared.warnings, &shared.room, sink, scheme, component, objects),
		normals:  newLane(ctx, corev1.EventTypeNormal, &shared.normals, &shared.room, sink, scheme, component, objects),
		shared:   shared,
		room:     room,
	}
}

func newLane(ctx context.Context, eventType string, shared, room *atomic.Int64, sink record.EventSink,
	scheme *runtime.Scheme, component string, objects int,
) *lane {
	l := &lane{eventType: eventType, shared: shared, room: room}
	l.broadcaster = record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
		// The correlator sees each event the writer takes, once, first
		// thing: the event no longer waits.
		KeyFunc: func(event *corev1.Event) (string, string) {
			l.take()
			return record.EventAggregatorByReasonFunc(event)
		},
		LRUCacheSize: objects,
	}))
	l.broadcaster.StartStructuredLogging(4)
	l.broadcaster.StartRecordingToSink(&countingSink{EventSink: sink, writing: &l.writing})
	l.recorder = l.broadcaster.NewRecorder(scheme, corev1.EventSource{Component: component})
	return l
}

// Event is AnnotatedEventf without annotations, the message taken as is.
func (r *Recorder) Event(object runtime.Object, eventtype, reason, message string) {
	r.AnnotatedEventf(object, nil, eventtype, reason, "%s", message)
}

// Eventf is AnnotatedEventf without annotations.
func (r *Recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.AnnotatedEventf(object, nil, eventtype, reason, messageFmt, args...)
}

// AnnotatedEventf records the event on the broadcaster of its type, or
// drops and counts it when the WaitingEvents's room for that type is full, or once
// Shutdown began.
func (r *Recorder) AnnotatedEventf(
	object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...interface{},
) {
	l := r.normals
	switch eventtype {
	case corev1.EventTypeWarning:
		l = r.warnings
	case corev1.EventTypeNormal:
	default:
		r.logger.Error(nil, "Unsupported event type, not recording event", "eventType", eventtype, "reason", reason)
		return
	}
	// client-go logs and skips an object it cannot reference; it must not
	// count as waiting then.
	if _, err := reference.GetReference(r.scheme, object); err != nil {
		r.logger.Error(err, "Could not construct reference, not recording event", "eventType", eventtype, "reason", reason)
		return
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || l.shared.Add(1) > l.room.Load() {
		if !l.closed {
			l.shared.Add(-1)
		}
		metrics.EventsDropped.WithLabelValues(eventtype).Inc()
		return
	}
	l.waiting.Add(1)
	l.recorder.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
}

// Shutdown stops taking events, waits at most timeout for those recorded
// before to be written (or given up by client-go after its retries), shuts
// the broadcasters down, and takes its room back from the WaitingEvents.
func (r *Recorder) Shutdown(ctx context.Context, timeout time.Duration) {
	// Once: a second Shutdown must not take the room back twice.
	r.shutdown.Do(func() { r.shutDown(ctx, timeout) })
}

func (r *Recorder) shutDown(ctx context.Context, timeout time.Duration) {
	lanes := []*lane{r.warnings, r.normals}
	for _, l := range lanes {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
	}
	// Idle on two polls in a row: between taking an event and writing it,
	// the writer correlates it, for microseconds.
	idleBefore := false
	err := wait.PollUntilContextTimeout(context.WithoutCancel(ctx), 10*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) {
			idle := true
			for _, l := range lanes {
				idle = idle && l.waiting.Load() == 0 && l.writing.Load() == 0
			}
			done := idle && idleBefore
			idleBefore = idle
			return done, nil
		})
	if err != nil {
		klog.FromContext(ctx).Info("Events not all written at shutdown")
	}
	for _, l := range lanes {
		l.broadcaster.Shutdown()
		l.release()
	}
	r.shared.room.Add(-r.room)
}

// take counts an event taken by the writer out of the lane and the shared count.
func (l *lane) take() {
	l.takeMu.Lock()
	defer l.takeMu.Unlock()
	if !l.released {
		l.waiting.Add(-1)
		l.shared.Add(-1)
	}
}

// release gives the shared count back the events the writer never took:
// those still waiting when Shutdown gave up are dropped with the broadcaster
// (which its writer may yet take, uncounted), and a count shared with the
// Recorders of other shards must not keep them for the replica's life.
func (l *lane) release() {
	l.takeMu.Lock()
	defer l.takeMu.Unlock()
	l.released = true
	l.shared.Add(-l.waiting.Swap(0))
}

// countingSink counts the writes in progress.
type countingSink struct {
	record.EventSink
	writing *atomic.Int64
}

func (s *countingSink) Create(event *corev1.Event) (*corev1.Event, error) {
	s.writing.Add(1)
	defer s.writing.Add(-1)
	return s.EventSink.Create(event)
}

func (s *countingSink) Update(event *corev1.Event) (*corev1.Event, error) {
	s.writing.Add(1)
	defer s.writing.Add(-1)
	return s.EventSink.Update(event)
}

func (s *countingSink) Patch(event *corev1.Event, data []byte) (*corev1.Event, error) {
	s.writing.Add(1)
	defer s.writing.Add(-1)
	return s.EventSink.Patch(event, data)
}
