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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// The write fence: a replica writes only while its own clock says it still
// leads.
//
// client-go's elector decides leadership only at its renewals. A leader
// that is frozen (SIGSTOP, a paused VM, a process starved of CPU) past the
// lease duration wakes up believing it still leads: its workers go on with
// caches that are seconds old, and the elector only reports the loss once
// its renew deadline runs out, seconds later. Meanwhile a standby leads, and
// both write. Before the fence, a paused leader wrote after the standby
// took over, among them a Deployment with the replicas of a Foo the user had
// changed since (docs/failure-modes.md, Post-mortems).
//
// A standby takes over a Lease one lease duration after it last saw it
// renewed, by its own clock. It saw our renewal after we sent it, so as long
// as less than a lease duration has passed since we sent our last renewal
// that succeeded, no standby can lead yet. The fence allows writes for less
// than that: until the moment client-go's elector itself gives up (renew
// deadline plus a retry period), which leaves the rest of the lease duration
// (3 s by default) to a request already on its way and to clocks that run at
// slightly different rates. While the fence is closed the workers wait
// (WaitOpen, before each sync) and writes are refused; a renewal opens it again
// (the API server was slow, say, and the Lease is still ours), and if none
// comes the elector gives up and the process exits, as without the fence.
//
// The elapsed time is read on both clocks Go keeps: the monotonic one, which
// wall-clock steps cannot fool, and the wall clock, which on Linux keeps
// running while the whole machine is suspended, when the monotonic clock
// does not. The larger of the two counts.
//
// A write that passed the fence is bounded too: it carries the time the
// fence has left as its deadline and as the API server's timeout (Guard).
// The client abandons it when the fence would have closed (one the process
// had not yet sent when it froze, on waking), and the API server gives up
// one it queues (priority and fairness) or is slow to handle as long after
// receiving it: before another replica may hold the Lease, as long as the
// request reached the API server within the 3 s above. What it cannot do:
// stop a write the API server has already handed to etcd, or bound one that
// reached the API server late (the whole machine paused with the request
// already in its kernel's buffers), as the API server counts the timeout
// from when it receives a request; no API offers an absolute deadline.
// Deployment repairs carry the resourceVersion they were computed from and
// status writes the Foo's, so the API server refuses such a write if
// anything changed the object since; a create or delete has no such guard
// (see docs/failure-modes.md).

// ErrFenced is returned for a write attempted while the fence is closed.
var ErrFenced = errors.New("leader election fence: this replica's Lease is not renewed recently enough to write")

// Fence says whether this replica may write: whether its last successful
// Lease renewal is recent enough that no other replica can lead yet.
type Fence struct {
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	renewed time.Time // when the last successful renewal was sent; zero: never
	// renewal is closed, and replaced, at each successful renewal.
	renewal chan struct{}
}

// NewFence returns a closed fence for the leader election cfg: it opens at
// the first successful acquisition of the Lease (see Run).
func NewFence(cfg Config) *Fence {
	return &Fence{window: fenceWindow(cfg), now: time.Now, renewal: make(chan struct{})}
}

// fenceWindow is how long after sending a successful renewal this replica may
// write: until client-go's elector would give up, and never past the lease
// duration.
func fenceWindow(cfg Config) time.Duration {
	return min(cfg.RenewDeadline+cfg.RetryPeriod, cfg.LeaseDuration)
}

// RenewedAt records a successful acquisition or renewal sent at t.
func (f *Fence) RenewedAt(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.renewed) {
		f.renewed = t
	}
	close(f.renewal)
	f.renewal = make(chan struct{})
}

// Close closes the fence until the next renewal.
func (f *Fence) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renewed = time.Time{}
}

// remaining is how long the fence stays open without another renewal; zero
// or less when it is closed.
func (f *Fence) remaining() time.Duration {
	f.mu.Lock()
	renewed := f.renewed
	f.mu.Unlock()
	if renewed.IsZero() {
		return 0
	}
	now := f.now()
	monotonic := now.Sub(renewed)
	wall := now.Round(0).Sub(renewed.Round(0)) // Round(0) strips the monotonic reading
	return f.window - max(monotonic, wall)
}

// Check returns nil when this replica may write, else an error wrapping
// ErrFenced.
func (f *Fence) Check() error {
	if left := f.remaining(); left <= 0 {
		return f.fenced()
	}
	return nil
}

// fenced is the error of a write refused.
func (f *Fence) fenced() error { return fmt.Errorf("%w (the window is %s)", ErrFenced, f.window) }

// WaitOpen returns once this replica may write, or with ctx's error once ctx
// ends first.
func (f *Fence) WaitOpen(ctx context.Context) error {
	for {
		f.mu.Lock()
		renewal := f.renewal // taken before the check: no renewal slips between
		f.mu.Unlock()
		if f.Check() == nil {
			return nil
		}
		select {
		case <-renewal:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// closed returns a channel closed once the fence closes, checked afresh
// whenever its last known closing time comes, or when ctx ends.
func (f *Fence) closed(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			left := f.remaining()
			if left <= 0 {
				return
			}
			timer := time.NewTimer(left)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
	}()
	return done
}

// Guard returns a copy of cfg whose requests other than reads are refused
// with ErrFenced while the fence is closed, and otherwise end when it would
// close (fencedTransport). The check is made in the transport, just before
// a request is sent, so that no write of any client built from the copy
// (Deployments, Foo status, events) escapes it.
func (f *Fence) Guard(cfg *rest.Config) *rest.Config {
	guarded := rest.CopyConfig(cfg)
	guarded.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &fencedTransport{fence: f, next: rt}
	})
	return guarded
}

// fencedTransport refuses writes while its fence is closed, and bounds each
// write it lets through by the time the fence has left: the request's
// context ends then, and its timeout parameter asks the API server to give
// it up then too, counted from when the server receives it: a write delayed
// on its way by less than the 3 s between the fence's closing and a
// takeover (above) still ends before the takeover. A shorter timeout the
// client set is kept.
type fencedTransport struct {
	fence *Fence
	next  http.RoundTripper
}

// timeoutParameter is the query parameter the API server takes as a
// request's deadline, a Go duration (client-go's Request.Timeout).
const timeoutParameter = "timeout"

func (t *fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isWrite(req.Method) {
		return t.next.RoundTrip(req)
	}
	// Whole milliseconds, rounded down: never past the fence's closing.
	left := t.fence.remaining().Truncate(time.Millisecond)
	if left <= 0 {
		return nil, t.fence.fenced()
	}
	ctx, cancel := context.WithTimeout(req.Context(), left)
	bounded := req.Clone(ctx)
	query := bounded.URL.Query()
	if set, err := time.ParseDuration(query.Get(timeoutParameter)); err != nil || set <= 0 || set > left {
		query.Set(timeoutParameter, left.String())
		bounded.URL.RawQuery = query.Encode()
	}
	resp, err := t.next.RoundTrip(bounded)
	if err != nil {
		err = t.givenUp(ctx, req.Context(), err) // before cancel, which would end ctx too
		cancel()
		return nil, err
	}
	resp.Body = &fencedBody{ReadCloser: resp.Body, cancel: cancel,
		givenUp: func(err error) error { return t.givenUp(ctx, req.Context(), err) }}
	return resp, nil
}

// givenUp is err, that of a write that passed the fence, marked ErrFenced
// when the fence's deadline (bounded's) ended the write rather than the
// caller's: the fence closed while the write was on its way or at the API
// server, and the log says so rather than a bare deadline.
func (t *fencedTransport) givenUp(bounded, caller context.Context, err error) error {
	if !errors.Is(bounded.Err(), context.DeadlineExceeded) || caller.Err() != nil {
		return err
	}
	return fmt.Errorf("%w; the write in flight was given up: %w", t.fence.fenced(), err)
}

// fencedBody is a response body that ends its request's context once
// closed: until then, that context bounds the reading of the body too, and
// an error the fence's deadline caused is marked as such (givenUp).
type fencedBody struct {
	io.ReadCloser
	cancel  context.CancelFunc
	givenUp func(error) error
}

func (b *fencedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF { // io.EOF, returned as is by contract, ends the body
		err = b.givenUp(err)
	}
	return n, err
}

func (b *fencedBody) Close() error {
	defer b.cancel()
	return b.ReadCloser.Close()
}

// isWrite says whether an HTTP method changes state on the API server.
func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	default:
		return true
	}
}

// fencedLock is the Lease lock of the elector, recording on the fence each
// acquisition or renewal of this replica that succeeds, as of the moment it
// was sent.
type fencedLock struct {
	resourcelock.Interface
	fence         *Fence
	leaseDuration time.Duration

	mu sync.Mutex
	// readHolder is the holder the last successful Get returned; nil before
	// the first.
	readHolder *string
	// expires is when the Lease, as this replica last acquired or renewed
	// it, expires: a lease duration after the renewal was sent. Zero
	// before the first.
	expires time.Time
	// cappedRaw is the last record read whose duration capDuration cut,
	// as read: logged once, not at every retry period.
	cappedRaw []byte
}

// bound cuts a Lease request at the Lease's expiry, as this replica last
// renewed it: past it another replica may hold the Lease. When renewing
// fails for the renew deadline, client-go's elector still reads the Lease
// to release it, bounded only by another renew deadline; cut here, that
// ends, and the process exits (see Run), before a standby may take the
// Lease, however long the API server takes to answer. A renewal is cut
// sooner, by client-go's renew deadline. Before this replica first holds
// the Lease its requests are bounded by the client (LeaseClient).
func (l *fencedLock) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	l.mu.Lock()
	expires := l.expires
	l.mu.Unlock()
	if expires.IsZero() {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, expires.Sub(l.fence.now()))
}

// errNotOurs refuses the release of a Lease that another replica holds.
var errNotOurs = errors.New("leader election: not releasing the Lease, which another replica holds")

// Get reads the Lease, remembers its holder, for a release to check, and
// caps the duration it claims at this replica's own (see capDuration).
func (l *fencedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	record, raw, err := l.Interface.Get(ctx)
	if err == nil && record != nil {
		record = l.capDuration(klog.FromContext(ctx), record, raw)
		holder := record.HolderIdentity
		l.mu.Lock()
		l.readHolder = &holder
		l.mu.Unlock()
	}
	return record, raw, err
}

// capDuration returns record with its LeaseDurationSeconds cut to this
// replica's lease duration (whole seconds, rounded up: client-go writes it
// rounded down, so a replica's own record is never cut), and logs the first
// read of each record that claimed more.
//
// Whoever may update the Lease, the controller's ServiceAccount included,
// could otherwise stop every replica for good: client-go's elector honours
// the duration a record claims, so a record of another holder claiming
// 2147483647 s (68 years) is waited out by every replica, and a restart
// does not help. Capped, such a record expires one lease duration after a
// replica first saw it, as a dead leader's does.
//
// Expiry is judged where the cap reaches, and by this replica's own clock.
// client-go's elector (v0.37.2, tryAcquireOrRenew) keeps the record Get
// returns as its observedRecord, and the time it read it, on its own clock,
// as its observedTime, whenever the raw bytes differ from those it last kept;
// isLeaseValid then judges the Lease valid until observedTime plus
// observedRecord.LeaseDurationSeconds. The record's renewTime, written by
// whoever wrote the record, plays no part. So the capped record is the one
// expiry is judged by; the raw bytes are passed on unchanged, so a change
// of the Lease still resets observedTime, and a rewrite that is not one
// (the same bytes) does not.
//
// What the cap costs: replicas that disagree on -leader-elect-lease-duration
// (in a rollout that raises it) judge each other's Lease by their own, and a
// standby of the old, shorter duration may take over a frozen leader's Lease
// while that leader's fence (renew deadline plus retry period) is still
// open. So raise the lease duration alone first, keeping renew deadline plus
// retry period within the old duration (the defaults: 12 s of 15 s), and the
// renew deadline in a second rollout (docs/operations.md, Flags).
func (l *fencedLock) capDuration(logger klog.Logger, record *resourcelock.LeaderElectionRecord,
	raw []byte) *resourcelock.LeaderElectionRecord {
	limit := int((l.leaseDuration + time.Second - 1) / time.Second)
	if record.LeaseDurationSeconds <= limit {
		return record
	}
	l.mu.Lock()
	seen := bytes.Equal(raw, l.cappedRaw)
	l.cappedRaw = raw
	l.mu.Unlock()
	if !seen {
		logger.Info("Lease claims a longer duration than this replica's, honouring its own",
			"lock", l.Describe(), "holder", record.HolderIdentity,
			"leaseDurationSeconds", record.LeaseDurationSeconds, "honouredSeconds", limit)
	}
	capped := *record // a copy: the record is the inner lock's
	capped.LeaseDurationSeconds = limit
	return &capped
}

func (l *fencedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	return l.recordRenewal(ler, func() error { return l.Interface.Create(ctx, ler) })
}

func (l *fencedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	return l.recordRenewal(ler, func() error { return l.Interface.Update(ctx, ler) })
}

// recordRenewal runs write and, when it succeeded in making this replica
// the holder, records when it was sent. A release (an update to no holder)
// closes the fence before it is sent: once it is, a standby may lead.
//
// A release is refused when the Lease, as last read, names another holder.
// client-go's elector (v0.37.2, tryRelease) reads the Lease before releasing
// it, so its update carries the current resourceVersion, but judges whether
// it leads by the record it observed last, which still names itself when no
// renewal has read the Lease since another replica took it over (a renewal
// that failed before its read, or a shutdown in between): a leader resumed
// after a pause past its lease cleared the Lease of the replica that had
// taken over (the soak's audit log, docs/performance.md).
func (l *fencedLock) recordRenewal(ler resourcelock.LeaderElectionRecord, write func() error) error {
	if ler.HolderIdentity != l.Identity() {
		l.fence.Close()
		l.mu.Lock()
		readHolder := l.readHolder
		l.mu.Unlock()
		if ler.HolderIdentity == "" && readHolder != nil && *readHolder != l.Identity() {
			return fmt.Errorf("%w (%q)", errNotOurs, *readHolder)
		}
		return write()
	}
	sent := l.fence.now()
	if err := write(); err != nil {
		return err
	}
	l.fence.RenewedAt(sent)
	l.mu.Lock()
	if expires := sent.Add(l.leaseDuration); expires.After(l.expires) {
		l.expires = expires
	}
	l.mu.Unlock()
	return nil
}
