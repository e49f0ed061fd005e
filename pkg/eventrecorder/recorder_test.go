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

package eventrecorder

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplescheme "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/scheme"
	"github.com/kube-samples/sample-controller/pkg/metrics"
)

func droppedEvents(t *testing.T, eventType string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.EventsDropped.WithLabelValues(eventType))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// eventServer is a fake clientset that records the events created, and
// whose Normal event creates wait until release is closed. (They wait
// outside the fake: it runs one action at a time.)
type eventServer struct {
	client *fake.Clientset
	// blocked receives each Normal event create once it waits.
	blocked chan struct{}
	release chan struct{}

	mu      sync.Mutex
	created []*corev1.Event
}

func newEventServer(t *testing.T) *eventServer {
	t.Helper()
	if err := samplescheme.AddToScheme(scheme.Scheme); err != nil {
		t.Fatal(err)
	}
	s := &eventServer{client: fake.NewClientset(), blocked: make(chan struct{}, 1), release: make(chan struct{})}
	s.client.PrependReactor("create", "events", func(action core.Action) (bool, runtime.Object, error) {
		event := action.(core.CreateAction).GetObject().(*corev1.Event)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.created = append(s.created, event)
		return true, event, nil
	})
	return s
}

func (s *eventServer) Events(namespace string) typedcorev1.EventInterface {
	return &heldEvents{EventInterface: s.client.CoreV1().Events(namespace), server: s}
}

// heldEvents holds Normal event creates until the server releases them.
type heldEvents struct {
	typedcorev1.EventInterface
	server *eventServer
}

// CreateWithEventNamespace is what client-go's EventSinkImpl calls, without
// a context, to write an event.
func (h *heldEvents) CreateWithEventNamespace(event *corev1.Event) (*corev1.Event, error) {
	if event.Type == corev1.EventTypeNormal {
		select {
		case h.server.blocked <- struct{}{}:
		default:
		}
		<-h.server.release
	}
	return h.CreateWithEventNamespaceWithContext(context.Background(), event)
}

// recordHeld records a Normal event with message about Foo name on
// recorder, and waits at most 10 s until the API server holds its create:
// the recorder's writer is busy then, and its next events wait.
func (s *eventServer) recordHeld(t *testing.T, recorder *Recorder, name, message string) {
	t.Helper()
	recorder.Event(testfixtures.NewFoo(name, 1), corev1.EventTypeNormal, samplecontroller.ReasonSynced, message)
	select {
	case <-s.blocked:
	case <-time.After(10 * time.Second):
		t.Fatalf("the Normal event %q did not reach the API server within 10 s", message)
	}
}

// written returns the events created so far.
func (s *eventServer) written() []*corev1.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*corev1.Event(nil), s.created...)
}

// waitWritten waits at most 10 s for n events to be created.
func (s *eventServer) waitWritten(t *testing.T, n int) []*corev1.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		written := s.written()
		if len(written) >= n {
			return written
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events written within 10 s, want %d", len(written), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// While the API server holds a Normal event, 1,000 more wait and the next
// is dropped and counted; a Warning recorded then is still written, at once.
func TestWarningIsWrittenWhenNormalEventsOverflow(t *testing.T) {
	ctx := testContext(t)
	server := newEventServer(t)
	recorder := New(ctx, server, scheme.Scheme, samplecontroller.ControllerName, 0, nil)
	normalBefore, warningBefore := droppedEvents(t, corev1.EventTypeNormal), droppedEvents(t, corev1.EventTypeWarning)

	// One Foo per event: the correlator holds back repeats on one object,
	// which is not what this test is about.
	server.recordHeld(t, recorder, "foo-held", "Created Deployment held")
	for i := range 1001 {
		recorder.Eventf(testfixtures.NewFoo(fmt.Sprintf("foo-%04d", i), 1), corev1.EventTypeNormal, samplecontroller.ReasonSynced, "Created Deployment %d", i)
	}
	if got := droppedEvents(t, corev1.EventTypeNormal) - normalBefore; got != 1 {
		t.Errorf("%v Normal events counted as dropped, want 1 (the 1001st waiting)", got)
	}

	recorder.Event(testfixtures.NewFoo("broken", 1), corev1.EventTypeWarning, samplecontroller.ReasonResourceExists, "taken")
	first := server.waitWritten(t, 1)[0]
	if first.Type != corev1.EventTypeWarning || first.Reason != samplecontroller.ReasonResourceExists || first.InvolvedObject.Name != "broken" ||
		first.InvolvedObject.Kind != "Foo" || first.Source.Component != samplecontroller.ControllerName || first.Namespace != "default" {
		t.Errorf("first event written: %+v, want the Warning about Foo broken", first)
	}

	close(server.release)
	recorder.Shutdown(ctx, 30*time.Second)
	written := server.written()
	if got := droppedEvents(t, corev1.EventTypeWarning) - warningBefore; got != 0 {
		t.Errorf("%v Warnings dropped, want 0", got)
	}
	if len(written) != 1002 {
		t.Fatalf("%d events written, want 1002: the Warning, the held Normal event and the next 1000", len(written))
	}
	if second, last := written[1], written[1001]; second.Message != "Created Deployment held" || last.Message != "Created Deployment 999" {
		t.Errorf("Normal events written from %q to %q, want from the held one to the 1000th after it", second.Message, last.Message)
	}
}

// The Recorders of a replica's shards share the room they brought to its
// WaitingEvents: a replica holding both of 2 shards has room for 1,000 Normal
// events waiting, one replica's, between them, not 500 each: while the API
// server holds each one's first, 600 wait in one and 400 in the other, and
// the next is dropped and counted.
func TestRecordersOfAReplicasShardsHoldItsWaitingEventsBetweenThem(t *testing.T) {
	ctx := testContext(t)
	server := newEventServer(t)
	shared := NewWaitingEvents()
	recorders := []*Recorder{
		New(ctx, server, scheme.Scheme, samplecontroller.ControllerName, 2, shared),
		New(ctx, server, scheme.Scheme, samplecontroller.ControllerName, 2, shared),
	}
	before := droppedEvents(t, corev1.EventTypeNormal)
	for i, recorder := range recorders {
		server.recordHeld(t, recorder, fmt.Sprintf("held-%d", i), fmt.Sprintf("held %d", i))
	}
	for i, n := range []int{600, 401} {
		for j := range n {
			recorders[i].Eventf(testfixtures.NewFoo(fmt.Sprintf("foo-%d-%04d", i, j), 1), corev1.EventTypeNormal,
				samplecontroller.ReasonSynced, "recorder %d event %d", i, j)
		}
	}
	if got := droppedEvents(t, corev1.EventTypeNormal) - before; got != 1 {
		t.Errorf("%v Normal events counted as dropped, want 1 (the 1001st waiting of the two)", got)
	}

	close(server.release)
	for _, recorder := range recorders {
		recorder.Shutdown(ctx, 30*time.Second)
	}
	written := server.written()
	messages := make([]string, 0, len(written))
	for _, event := range written {
		messages = append(messages, event.Message)
	}
	if len(messages) != 1002 {
		t.Fatalf("%d events written, want 1002: the two held and the next 1000", len(messages))
	}
	if !slices.Contains(messages, "recorder 1 event 399") || slices.Contains(messages, "recorder 1 event 400") {
		t.Errorf("events written: recorder 1's 400th written %v, its 401st %v; want only the 400th",
			slices.Contains(messages, "recorder 1 event 399"), slices.Contains(messages, "recorder 1 event 400"))
	}
}

// A Recorder shut down before its writer took its waiting events gives them
// back to the WaitingEvents it shares, and takes back the room it brought: the
// shard of 2 released while the API server held its 500 events leaves the
// shard taken next its room for 500, not none, and not 1,000.
func TestShutdownGivesTheSharedCountBackTheEventsItsWriterNeverTook(t *testing.T) {
	ctx := testContext(t)
	server := newEventServer(t)
	shared := NewWaitingEvents()
	released := New(ctx, server, scheme.Scheme, samplecontroller.ControllerName, 2, shared)
	server.recordHeld(t, released, "held", "held")
	for i := range 500 {
		released.Eventf(testfixtures.NewFoo(fmt.Sprintf("foo-%04d", i), 1), corev1.EventTypeNormal,
			samplecontroller.ReasonSynced, "never taken %d", i)
	}
	released.Shutdown(ctx, 100*time.Millisecond)
	// A second Shutdown takes nothing back twice.
	released.Shutdown(ctx, 100*time.Millisecond)

	before := droppedEvents(t, corev1.EventTypeNormal)
	other := New(ctx, server, scheme.Scheme, samplecontroller.ControllerName, 2, shared)
	server.recordHeld(t, other, "other-held", "other held")
	for i := range 501 {
		other.Eventf(testfixtures.NewFoo(fmt.Sprintf("other-%04d", i), 1), corev1.EventTypeNormal,
			samplecontroller.ReasonSynced, "other %d", i)
	}
	if got := droppedEvents(t, corev1.EventTypeNormal) - before; got != 1 {
		t.Errorf("%v of the other Recorder's Normal events counted as dropped, want 1 (its 501st waiting)", got)
	}
	close(server.release)
	other.Shutdown(ctx, 30*time.Second)
	if got := shared.normals.Load(); got != 0 {
		t.Errorf("%d Normal events counted waiting once both Recorders shut down, want 0", got)
	}
	if got := shared.room.Load(); got != 0 {
		t.Errorf("room for %d events left in the WaitingEvents once both Recorders shut down, want 0", got)
	}
}

// A replica holds waiting events in proportion to the shards it holds, as
// it holds their Foos: one of all the Foos 1,000 of each type, one holding
// 4 of 12 shards 332 (83 a shard, rounded down so that all 12 hold at most
// 1,000), one holding 1 of 256 shards 3. The next Normal event is dropped,
// and a Warning still has room.
func TestReplicaHoldsWaitingEventsInProportionToItsShards(t *testing.T) {
	for _, tc := range []struct {
		shards, held, room int
	}{
		{shards: 1, held: 1, room: 1000},
		{shards: 12, held: 4, room: 332},
		{shards: 256, held: 1, room: 3},
	} {
		t.Run(fmt.Sprintf("%d_of_%d", tc.held, tc.shards), func(t *testing.T) {
			ctx := testContext(t)
			server := newEventServer(t)
			shared := NewWaitingEvents()
			recorders := make([]*Recorder, tc.held)
			for i := range recorders {
				recorders[i] = New(ctx, server, scheme.Scheme, samplecontroller.ControllerName, tc.shards, shared)
				server.recordHeld(t, recorders[i], fmt.Sprintf("held-%d", i), fmt.Sprintf("held %d", i))
			}
			before := droppedEvents(t, corev1.EventTypeNormal)
			for i := range tc.room + 1 {
				recorders[i%tc.held].Eventf(testfixtures.NewFoo(fmt.Sprintf("foo-%04d", i), 1), corev1.EventTypeNormal,
					samplecontroller.ReasonSynced, "waiting %d", i)
			}
			if got := droppedEvents(t, corev1.EventTypeNormal) - before; got != 1 {
				t.Errorf("%v Normal events counted as dropped, want 1 (the %dth waiting)", got, tc.room+1)
			}
			recorders[0].Event(testfixtures.NewFoo("broken", 1), corev1.EventTypeWarning, samplecontroller.ReasonResourceExists,
				"taken")
			if first := server.waitWritten(t, 1)[0]; first.Type != corev1.EventTypeWarning || first.InvolvedObject.Name != "broken" {
				t.Errorf("first event written: %s about %s, want the Warning about Foo broken", first.Type, first.InvolvedObject.Name)
			}
			close(server.release)
			for _, recorder := range recorders {
				recorder.Shutdown(ctx, 30*time.Second)
			}
			if got, want := len(server.written()), 1+tc.held+tc.room; got != want {
				t.Errorf("%d events written, want %d: the Warning, the %d held and the %d waiting", got, want, tc.held, tc.room)
			}
		})
	}
}

// Shutdown returns once the events recorded before are written: the events
// of the last syncs go out at shutdown. An event recorded after is dropped
// and counted.
func TestShutdownWritesTheEventsRecordedBefore(t *testing.T) {
	ctx := testContext(t)
	server := newEventServer(t)
	close(server.release)
	recorder := New(ctx, server, scheme.Scheme, samplecontroller.ControllerName, 0, nil)
	recorder.Event(testfixtures.NewFoo("a", 1), corev1.EventTypeNormal, samplecontroller.ReasonSynced, "one")
	recorder.Event(testfixtures.NewFoo("b", 1), corev1.EventTypeNormal, samplecontroller.ReasonSynced, "two")
	recorder.Shutdown(ctx, 10*time.Second)
	written := server.written()
	if len(written) != 2 || written[0].Message != "one" || written[1].Message != "two" {
		t.Errorf("written: %d events, want one and two in order", len(written))
	}

	before := droppedEvents(t, corev1.EventTypeNormal)
	recorder.Event(testfixtures.NewFoo("c", 1), corev1.EventTypeNormal, samplecontroller.ReasonSynced, "late")
	if got := droppedEvents(t, corev1.EventTypeNormal) - before; got != 1 {
		t.Errorf("%v events recorded after shutdown counted as dropped, want 1", got)
	}
}

// The correlator counts an event repeated on a Foo it remembers as one
// (a PATCH of its count), and one repeated on a Foo it has forgotten, when
// it remembers fewer than it has seen since, as new (a create). A shard's
// correlator remembers its share of 4,096 Foos: 2 for one of 2,048 shards,
// 1 for one of 4,096.
func TestCorrelatorRemembersItsShareOfTheFoos(t *testing.T) {
	for _, tc := range []struct {
		shards int
		want   []string
	}{
		{shards: 2048, want: []string{"create a", "create b", "patch a"}},
		{shards: 4096, want: []string{"create a", "create b", "create a"}},
	} {
		t.Run(fmt.Sprintf("1_of_%d", tc.shards), func(t *testing.T) {
			ctx := testContext(t)
			if err := samplescheme.AddToScheme(scheme.Scheme); err != nil {
				t.Fatal(err)
			}
			client := fake.NewClientset()
			recorder := New(ctx, client.CoreV1(), scheme.Scheme, samplecontroller.ControllerName, tc.shards, nil)
			// One at a time, each written before the next: a shard of
			// thousands has room for fewer than three waiting.
			for i, name := range []string{"a", "b", "a"} {
				recorder.Event(testfixtures.NewFoo(name, 1), corev1.EventTypeNormal, samplecontroller.ReasonSynced, "synced")
				if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true,
					func(context.Context) (bool, error) { return len(client.Actions()) > i, nil }); err != nil {
					t.Fatalf("event %d about %s not written within 10 s", i+1, name)
				}
			}
			recorder.Shutdown(ctx, 10*time.Second)
			actions := client.Actions()
			got := make([]string, 0, len(actions))
			for _, action := range actions {
				var event *corev1.Event
				switch a := action.(type) {
				case core.CreateAction:
					event = a.GetObject().(*corev1.Event)
				case core.PatchAction:
					event = &corev1.Event{}
					event.Name = a.GetName()
				default:
					continue
				}
				got = append(got, action.GetVerb()+" "+strings.SplitN(event.Name, ".", 2)[0])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("events written: %q, want %q", got, tc.want)
			}
		})
	}
}

// testContext logs to t, without client-go's line per event (V(4)).
func testContext(t *testing.T) context.Context {
	return klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2))))
}
