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

package replicas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
)

// defaults are the -leader-elect-* defaults.
var defaults = Config{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}

// clock is a settable clock for the fence.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func fenceAt(c *clock) *Fence {
	f := NewFence(defaults)
	f.now = c.now
	return f
}

func TestFenceWindowEndsWhenTheElectorWouldGiveUpAndNeverAfterTheLease(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want time.Duration
	}{
		{defaults, 12 * time.Second},
		{Config{LeaseDuration: 60 * time.Second, RenewDeadline: 40 * time.Second, RetryPeriod: 5 * time.Second}, 45 * time.Second},
		{Config{LeaseDuration: 15 * time.Second, RenewDeadline: 14 * time.Second, RetryPeriod: 2 * time.Second}, 15 * time.Second},
	} {
		if got := fenceWindow(tc.cfg); got != tc.want {
			t.Errorf("fenceWindow(%+v) = %s, want %s", tc.cfg, got, tc.want)
		}
	}
}

func TestFenceOpensAtRenewalAndClosesAfterTheWindow(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	f := fenceAt(c)
	if err := f.Check(); !errors.Is(err, ErrFenced) {
		t.Fatalf("before any renewal: %v, want ErrFenced", err)
	}

	f.RenewedAt(c.t)
	c.t = c.t.Add(11*time.Second + 999*time.Millisecond)
	if err := f.Check(); err != nil {
		t.Fatalf("11.999 s after the renewal: %v, want open", err)
	}
	c.t = c.t.Add(time.Millisecond)
	if err := f.Check(); !errors.Is(err, ErrFenced) {
		t.Fatalf("12 s after the renewal: %v, want ErrFenced", err)
	}

	// A renewal sent before the last one recorded (an answer arriving
	// late) does not move the window back.
	f.RenewedAt(c.t)
	f.RenewedAt(c.t.Add(-5 * time.Second))
	c.t = c.t.Add(11 * time.Second)
	if err := f.Check(); err != nil {
		t.Fatalf("11 s after the latest renewal: %v, want open", err)
	}
}

// fakeLock answers the elector's writes with err.
type fakeLock struct {
	resourcelock.Interface
	err    error
	writes int
	// record is what Get returns.
	record resourcelock.LeaderElectionRecord
}

func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r := l.record
	return &r, nil, nil
}

func (l *fakeLock) Identity() string { return "replica-a" }
func (l *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	l.writes++
	return l.err
}
func (l *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	l.writes++
	return l.err
}

func TestLockOpensTheFenceAsOfWhenASuccessfulRenewalWasSent(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	f := fenceAt(c)
	inner := &fakeLock{}
	// The acquisition takes 3 s to be answered: the window runs from when
	// it was sent, as the standby's runs from when it saw it, later.
	lock := &fencedLock{Interface: &slowLock{fakeLock: inner, clock: c, took: 3 * time.Second}, fence: f}
	sent := c.t
	if err := lock.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "replica-a"}); err != nil {
		t.Fatal(err)
	}
	if f.renewed != sent {
		t.Errorf("renewal recorded at %s, want the time it was sent, %s", f.renewed, sent)
	}

	// A failed renewal records nothing.
	inner.err = errors.New("etcdserver: request timed out")
	c.t = c.t.Add(time.Second)
	if err := lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "replica-a"}); err == nil {
		t.Fatal("the failed update was reported a success")
	}
	if f.renewed != sent {
		t.Errorf("a failed renewal moved the fence to %s", f.renewed)
	}
}

// deadlineLock is a fakeLock that records, at each Get, its context's
// deadline (zero when unbounded) and whether it had already ended.
type deadlineLock struct {
	*fakeLock
	deadline time.Time
	ended    bool
}

func (l *deadlineLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	l.deadline, _ = ctx.Deadline()
	l.ended = ctx.Err() != nil
	return l.fakeLock.Get(ctx)
}

// A leader's Lease requests end when its Lease, as it last renewed it,
// expires (lease duration 15 s): the release client-go sends after renewing
// failed for the renew deadline (10 s) then holds up the exit no later than
// when a standby may take the Lease, however long the API server takes.
func TestALeadersLeaseRequestsEndWhenItsLeaseExpires(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	inner := &deadlineLock{fakeLock: &fakeLock{}}
	lock := &fencedLock{Interface: inner, fence: fenceAt(c), leaseDuration: defaults.LeaseDuration}
	if _, _, err := lock.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !inner.deadline.IsZero() {
		t.Errorf("before it held the Lease, a read was given until %v, want no bound of the lock's", inner.deadline)
	}

	if err := lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "replica-a"}); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(12 * time.Second) // renewals failed since; the elector gives up and reads the Lease to release it
	// The deadline is set on the real clock: 3 s after some moment of the Get.
	before := time.Now()
	if _, _, err := lock.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if inner.deadline.Before(before.Add(3*time.Second)) || inner.deadline.After(after.Add(3*time.Second)) {
		t.Errorf("12 s after the renewal was sent, a read was given %v from its start, want the 3 s left of the Lease",
			inner.deadline.Sub(before))
	}

	c.t = c.t.Add(4 * time.Second)
	if _, _, err := lock.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !inner.ended {
		t.Errorf("past the Lease's expiry, a read was given until %v, want an ended context", inner.deadline)
	}
}

// renewedLock returns a fence and the fenced fakeLock of replica-a, which
// has just renewed its Lease through it.
func renewedLock(t *testing.T) (*Fence, *fakeLock, *fencedLock) {
	t.Helper()
	f := fenceAt(&clock{t: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)})
	inner := &fakeLock{}
	lock := &fencedLock{Interface: inner, fence: f}
	if err := lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "replica-a"}); err != nil {
		t.Fatal(err)
	}
	return f, inner, lock
}

func TestReleasingTheLeaseClosesTheFenceBeforeItIsSent(t *testing.T) {
	f, inner, lock := renewedLock(t)
	if err := f.Check(); err != nil {
		t.Fatalf("after renewing: %v", err)
	}
	// The release fails to reach the API server: the fence stays closed all
	// the same, since it may have been applied.
	inner.err = errors.New("context deadline exceeded")
	_ = lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: ""})
	if err := f.Check(); !errors.Is(err, ErrFenced) {
		t.Errorf("after releasing: %v, want ErrFenced", err)
	}
	if inner.writes != 2 {
		t.Errorf("%d writes reached the lock, want 2", inner.writes)
	}
}

func TestReleaseOfALeaseAnotherReplicaHoldsIsRefused(t *testing.T) {
	f, inner, lock := renewedLock(t)
	// Paused past its lease, replica-a reads the Lease that replica-b took
	// over meanwhile, then releases it as client-go's elector does.
	inner.record = resourcelock.LeaderElectionRecord{HolderIdentity: "replica-b"}
	if _, _, err := lock.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "", LeaseDurationSeconds: 1})
	if !errors.Is(err, errNotOurs) {
		t.Errorf("release of replica-b's Lease: %v, want errNotOurs", err)
	}
	if inner.writes != 1 {
		t.Errorf("%d writes reached the lock, want 1 (the renewal, not the release)", inner.writes)
	}
	if err := f.Check(); !errors.Is(err, ErrFenced) {
		t.Errorf("after the refused release: %v, want ErrFenced", err)
	}

	// Its own Lease, as last read, it releases.
	inner.record = resourcelock.LeaderElectionRecord{HolderIdentity: "replica-a"}
	if _, _, err := lock.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := lock.Update(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: "", LeaseDurationSeconds: 1}); err != nil {
		t.Errorf("release of its own Lease: %v", err)
	}
	if inner.writes != 2 {
		t.Errorf("%d writes reached the lock, want 2", inner.writes)
	}
}

// The same, through client-go's own elector on a fake clientset: a leader
// shut down after another replica took its Lease over, and before its next
// renewal showed it, must leave that Lease alone. client-go v0.37.2's
// tryRelease reads the Lease, then judges by the record it observed at its
// last renewal, which still names it.
func TestElectorShutDownAfterATakeoverLeavesTheNewLeadersLease(t *testing.T) {
	client := fake.NewClientset()
	cfg := Config{Namespace: "default", Name: "sample-controller",
		// Renewals far apart: between its first renewal and the shutdown,
		// replica-a reads nothing, as a paused process.
		LeaseDuration: time.Hour, RenewDeadline: 50 * time.Minute, RetryPeriod: 40 * time.Minute}
	lock := &fencedLock{fence: NewFence(cfg), leaseDuration: cfg.LeaseDuration, Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "replica-a"},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: cfg.Name, ReleaseOnCancel: true,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { <-ctx.Done() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		elector.Run(ctx)
	}()

	// replica-a creates the Lease, then renews it straight away, once.
	leases := client.CoordinationV1().Leases(cfg.Namespace)
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(leaseVerbs(client)) >= 3, nil
	})
	if err != nil {
		t.Fatalf("replica-a's first renewal: %v; Lease requests %v", err, leaseVerbs(client))
	}
	lease, err := leases.Get(ctx, cfg.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = ptr.To("replica-b")
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	cancel()
	select {
	case <-ran:
	case <-time.After(time.Minute):
		t.Fatal("the elector did not return within a minute of its context's end")
	}
	// Acquire (get, create), renew (update); the takeover (get, update);
	// the release reads the Lease and sends nothing.
	if got, want := leaseVerbs(client), []string{"get", "create", "update", "get", "update", "get"}; !slices.Equal(got, want) {
		t.Errorf("Lease requests %v, want %v", got, want)
	}
	lease, err = leases.Get(context.Background(), cfg.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); holder != "replica-b" {
		t.Errorf("the Lease's holder is %q, want replica-b", holder)
	}
}

// A Lease held by another identity that claims 2147483647 s (68 years), as
// anyone who may update the Lease can write it, and never changes again: a
// replica's elector takes it over once its own lease duration (2 s here) has
// passed since it first read it, as it would a dead leader's, and logs the
// claim once, naming the holder. Without the cap in fencedLock.Get,
// client-go's elector waits out the 68 years.
func TestElectorTakesOverALeaseClaimingMoreThanItsDurationAfterItsOwn(t *testing.T) {
	client := fake.NewClientset()
	cfg := Config{Namespace: "default", Name: "sample-controller",
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 200 * time.Millisecond}
	written := metav1.NewMicroTime(time.Now())
	leases := client.CoordinationV1().Leases(cfg.Namespace)
	_, err := leases.Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("intruder"), LeaseDurationSeconds: ptr.To[int32](math.MaxInt32),
			AcquireTime: &written, RenewTime: &written, LeaseTransitions: ptr.To[int32](3)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lock := &fencedLock{fence: NewFence(cfg), leaseDuration: cfg.LeaseDuration, Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: "replica-a"},
	}}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2), ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	led := make(chan time.Time, 1)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: cfg.Name,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { led <- time.Now(); <-ctx.Done() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	started := time.Now() // the elector first reads the Lease after this
	go func() {
		defer close(ran)
		elector.Run(ctx)
	}()

	// A deadline against a take-over that never comes: 15 lease durations.
	var at time.Time
	select {
	case at = <-led:
	case <-time.After(30 * time.Second):
		t.Fatalf("replica-a, of lease duration %v, did not lead within 30 s: %d Lease requests, none took it",
			cfg.LeaseDuration, len(leaseVerbs(client)))
	}
	if waited := at.Sub(started); waited < cfg.LeaseDuration {
		t.Errorf("replica-a led %v after it started, before its lease duration (%v) had passed since it read the Lease",
			waited, cfg.LeaseDuration)
	}
	t.Logf("replica-a led %v after it started (lease duration %v)", at.Sub(started).Round(time.Millisecond), cfg.LeaseDuration)
	cancel()
	<-ran

	lease, err := leases.Get(context.Background(), cfg.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if holder, seconds, transitions := ptr.Deref(lease.Spec.HolderIdentity, ""), ptr.Deref(lease.Spec.LeaseDurationSeconds, 0),
		ptr.Deref(lease.Spec.LeaseTransitions, 0); holder != "replica-a" || seconds != 2 || transitions != 4 {
		t.Errorf("the Lease: holder %q, leaseDurationSeconds %d, leaseTransitions %d; want replica-a, 2, 4", holder, seconds, transitions)
	}

	// Read at every attempt, 200 to 440 ms apart, the claim is logged once.
	var claims []string
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if entry.Message == "Lease claims a longer duration than this replica's, honouring its own" {
			claims = append(claims, fmt.Sprint(entry.ParameterKVList))
		}
	}
	want := []string{"[lock default/sample-controller holder intruder leaseDurationSeconds 2147483647 honouredSeconds 2]"}
	if !slices.Equal(claims, want) {
		t.Errorf("logged the claims %q, want %q", claims, want)
	}
}

// A record's duration is cut to the replica's own, in whole seconds rounded
// up; one at or below it is passed on as read.
func TestLeaseDurationsAboveTheReplicasOwnAreCutToIt(t *testing.T) {
	for _, tc := range []struct {
		own           time.Duration
		claimed, want int
	}{
		{15 * time.Second, 1, 1},
		{15 * time.Second, 15, 15},
		{15 * time.Second, 16, 15},
		{15 * time.Second, math.MaxInt32, 15},
		// client-go writes 1 s for 1.5 s, and the cut is to 2 s: no
		// replica's own record is cut.
		{1500 * time.Millisecond, 2, 2},
		{1500 * time.Millisecond, 3, 2},
	} {
		inner := &fakeLock{record: resourcelock.LeaderElectionRecord{HolderIdentity: "replica-b", LeaseDurationSeconds: tc.claimed}}
		lock := &fencedLock{Interface: inner, fence: fenceAt(&clock{}), leaseDuration: tc.own}
		record, _, err := lock.Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if record.LeaseDurationSeconds != tc.want {
			t.Errorf("a replica of lease duration %v read a record of %d s as %d s, want %d s",
				tc.own, tc.claimed, record.LeaseDurationSeconds, tc.want)
		}
	}
}

// leaseVerbs are the verbs of the requests for Leases the fake clientset has
// seen, in order.
func leaseVerbs(client *fake.Clientset) []string {
	var verbs []string
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "leases" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	return verbs
}

// slowLock is a fakeLock whose writes take a while on the fence's clock.
type slowLock struct {
	*fakeLock
	clock *clock
	took  time.Duration
}

func (l *slowLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	l.clock.t = l.clock.t.Add(l.took)
	return l.fakeLock.Create(ctx, r)
}

func TestGuardedClientWritesOnlyWhileTheFenceIsOpen(t *testing.T) {
	var got []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusOK)
	}))
	defer server.Close()
	c := &clock{t: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	f := fenceAt(c)
	cfg := f.Guard(&rest.Config{Host: server.URL})
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	send := func(method string) error {
		req, err := http.NewRequest(method, server.URL+"/apis/apps/v1/namespaces/ns/deployments/d", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	// Closed: reads pass, writes are refused before they leave.
	for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		err := send(method)
		if wantRefused := method != "GET"; wantRefused != errors.Is(err, ErrFenced) {
			t.Errorf("%s while closed: %v", method, err)
		}
	}
	// Open: everything passes.
	f.RenewedAt(c.t)
	for _, method := range []string{"PATCH", "DELETE"} {
		if err := send(method); err != nil {
			t.Errorf("%s while open: %v", method, err)
		}
	}
	want := []string{
		"GET /apis/apps/v1/namespaces/ns/deployments/d",
		"PATCH /apis/apps/v1/namespaces/ns/deployments/d",
		"DELETE /apis/apps/v1/namespaces/ns/deployments/d",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the server received\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// sentRequest is what a request leaving the fence carried: its context,
// and the timeout parameter the API server would get.
type sentRequest struct {
	method  string
	ctx     context.Context
	timeout string
}

// recordingTransport answers every request 200 {} and records it.
type recordingTransport struct{ sent []sentRequest }

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.sent = append(t.sent, sentRequest{method: req.Method, ctx: req.Context(), timeout: req.URL.Query().Get("timeout")})
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

// A write that passed the fence ends when the fence would close: 12 s after
// the renewal was sent, 4.5 s ago, leaves 7.5 s, its context's deadline
// (on the real clock: 7.5 s after some moment of the call) and the timeout
// the API server is asked to keep, unless the client asked for less. A
// read is left alone, and less than a millisecond left refuses the write.
func TestGuardedWritesEndWhenTheFenceWouldClose(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	f := fenceAt(c)
	next := &recordingTransport{}
	client, err := rest.HTTPClientFor(f.Guard(&rest.Config{Host: "https://apiserver.invalid", Transport: next}))
	if err != nil {
		t.Fatal(err)
	}
	f.RenewedAt(c.t)
	c.t = c.t.Add(4500 * time.Millisecond)
	const path = "https://apiserver.invalid/apis/apps/v1/namespaces/ns/deployments/d"
	for _, tc := range []struct {
		method, query string
		within        time.Duration // the caller's own deadline, 0 for none
		wantTimeout   string
		wantDeadline  time.Duration // after the call's start; 0: none
	}{
		{method: "POST", wantTimeout: "7.5s", wantDeadline: 7500 * time.Millisecond},
		{method: "PUT", query: "?timeout=30s", wantTimeout: "7.5s", wantDeadline: 7500 * time.Millisecond},
		{method: "PATCH", query: "?timeout=2s", wantTimeout: "2s", wantDeadline: 7500 * time.Millisecond},
		{method: "DELETE", within: time.Second, wantTimeout: "7.5s", wantDeadline: time.Second},
		{method: "GET", query: "?timeout=30s", wantTimeout: "30s"},
	} {
		before := time.Now()
		ctx := context.Background()
		if tc.within > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tc.within)
			defer cancel()
		}
		req, err := http.NewRequestWithContext(ctx, tc.method, path+tc.query, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		after := time.Now()
		if err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		resp.Body.Close()
		sent := next.sent[len(next.sent)-1]
		if sent.timeout != tc.wantTimeout {
			t.Errorf("%s%s: timeout=%q, want %q", tc.method, tc.query, sent.timeout, tc.wantTimeout)
		}
		deadline, ok := sent.ctx.Deadline()
		switch {
		case tc.wantDeadline == 0 && ok:
			t.Errorf("%s: deadline %v after the call, want none", tc.method, deadline.Sub(before))
		case tc.wantDeadline > 0 && (!ok || deadline.Before(before.Add(tc.wantDeadline)) || deadline.After(after.Add(tc.wantDeadline))):
			t.Errorf("%s: deadline %v after the call (set %v), want %v", tc.method, deadline.Sub(before), ok, tc.wantDeadline)
		case tc.wantDeadline > 0 && sent.ctx.Err() == nil:
			t.Errorf("%s: its context still runs after the response was read", tc.method)
		}
	}

	c.t = c.t.Add(7499*time.Millisecond + 100*time.Microsecond) // 0.9 ms left
	req, err := http.NewRequest("POST", path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	sent := len(next.sent)
	if _, err := client.Do(req); !errors.Is(err, ErrFenced) {
		t.Errorf("POST with 0.9 ms left: %v, want ErrFenced", err)
	}
	if len(next.sent) != sent {
		t.Errorf("POST with 0.9 ms left was sent")
	}
}

// hangingTransport answers nothing until its request's context ends; with
// body, it answers 200 at once and its body gives nothing until then.
type hangingTransport struct{ body bool }

func (t hangingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.body {
		return &http.Response{StatusCode: http.StatusOK, Body: hangingBody{req.Context()}, Request: req}, nil
	}
	<-req.Context().Done()
	return nil, req.Context().Err()
}

type hangingBody struct{ ctx context.Context }

func (b hangingBody) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

func (hangingBody) Close() error { return nil }

// A write in flight when the fence closes, 50 ms after it was sent, fails
// as fenced, its request or its answer's body cut off then: the log says
// why rather than a bare deadline. One whose caller gave up first (20 ms)
// fails with the caller's deadline alone.
func TestAWriteInFlightWhenTheFenceClosesFailsAsFenced(t *testing.T) {
	for _, tc := range []struct {
		name        string
		body        bool
		within      time.Duration // the caller's own deadline, 0 for none
		wantFenced  bool
		wantMessage string
	}{
		{name: "request", wantFenced: true, wantMessage: "the write in flight was given up: context deadline exceeded"},
		{name: "body", body: true, wantFenced: true,
			wantMessage: "the write in flight was given up: context deadline exceeded"},
		{name: "caller's deadline first", within: 20 * time.Millisecond, wantMessage: "context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
			f := fenceAt(c)
			client, err := rest.HTTPClientFor(f.Guard(&rest.Config{Host: "https://apiserver.invalid",
				Transport: hangingTransport{body: tc.body}}))
			if err != nil {
				t.Fatal(err)
			}
			f.RenewedAt(c.t)
			c.t = c.t.Add(f.window - 50*time.Millisecond)
			ctx := context.Background()
			if tc.within > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.within)
				defer cancel()
			}
			req, err := http.NewRequestWithContext(ctx, "PUT",
				"https://apiserver.invalid/apis/apps/v1/namespaces/ns/deployments/d", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err == nil {
				defer resp.Body.Close()
				_, err = io.ReadAll(resp.Body)
			}
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrFenced) != tc.wantFenced ||
				!strings.HasSuffix(err.Error(), tc.wantMessage) {
				t.Errorf("err %v; want a deadline, fenced: %v, ending %q", err, tc.wantFenced, tc.wantMessage)
			}
			if tc.wantFenced && !strings.Contains(err.Error(), ErrFenced.Error()) {
				t.Errorf("err %q does not say %q", err, ErrFenced)
			}
		})
	}
}

func TestClosedFiresWhenTheWindowPassesWithoutRenewal(t *testing.T) {
	// The fence reads a clock the test sets (nanoseconds after start), so
	// only that clock says when the window has passed, however slowly the
	// machine runs the fence's goroutine.
	start := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	var elapsed atomic.Int64
	at := func(d time.Duration) time.Time { return start.Add(d) }
	f := NewFence(Config{LeaseDuration: time.Second, RenewDeadline: 200 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}) // a 300 ms window
	f.now = func() time.Time { return at(time.Duration(elapsed.Load())) }
	f.RenewedAt(at(0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	closed := f.closed(ctx)

	// Renewed at 200 ms: the window moves to end at 500 ms, past the first
	// closing time (300 ms).
	elapsed.Store(int64(200 * time.Millisecond))
	f.RenewedAt(at(200 * time.Millisecond))
	elapsed.Store(int64(499 * time.Millisecond))
	// The goroutine looks at the clock whenever the time it computed is
	// left passes: a second gives it many looks, none of which may close.
	select {
	case <-closed:
		t.Fatal("closed at 499 ms, before the window opened by the renewal at 200 ms ends (500 ms)")
	case <-time.After(time.Second):
	}

	elapsed.Store(int64(500 * time.Millisecond))
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("not closed 10 s after the window passed")
	}
	if err := f.Check(); !errors.Is(err, ErrFenced) {
		t.Errorf("Check after closed fired: %v", err)
	}
}

func TestWaitOpenReturnsAtTheNextRenewalOrWhenCancelled(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)}
	f := fenceAt(c)
	opened := make(chan error)
	go func() { opened <- f.WaitOpen(context.Background()) }()
	f.RenewedAt(c.t)
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("WaitOpen: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitOpen did not return after a renewal")
	}

	c.t = c.t.Add(12 * time.Second) // closed again
	ctx, cancel := context.WithCancel(context.Background())
	go func() { opened <- f.WaitOpen(ctx) }()
	cancel()
	select {
	case err := <-opened:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("WaitOpen after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitOpen did not return when cancelled")
	}
}
