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

package conversionwebhook

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// budget is the memory the reviews in flight may hold between them, in bytes
// of review read, and how many may be in flight.
//
// A review is charged for what it reads, as it reads it, never for what it
// says it will send: a caller that trickles its body, or declares a large
// one and sends nothing, holds next to nothing. When a charge does not fit,
// the largest holder gives way: the one that holds the most is refused
// (answered 429, so it lets go of everything), and the one asking waits for
// what it frees; if the asker is itself the largest, it is the one refused.
// A review as large as the lists the API server converts thus always
// outlasts a caller sending larger ones, however many of those there are: an
// attack exhausts the budget only for itself.
type budget struct {
	limit      int64
	maxReviews int
	// maxWait bounds how long a charge waits for a holder that gives way
	// to let go; past it the asker is refused too.
	maxWait time.Duration

	mu      sync.Mutex
	used    int64
	holders map[*holding]struct{}
	// freed is closed, and replaced, whenever a holder lets go.
	freed chan struct{}
}

// holding is one review's share of the budget.
type holding struct {
	b    *budget
	held int64
	// refused: chosen to give way; its next charge fails.
	refused bool
	// unblock makes a read of the review's body that waits for bytes
	// return now, so that a refused review that has stopped sending lets
	// go without waiting for the server's ReadTimeout.
	unblock func()
}

var (
	// errTooManyReviews: maxReviews are in flight already.
	errTooManyReviews = errors.New("too many conversion reviews in flight")
	// errOverBudget: the review was the largest holder, or gave way to
	// let a smaller one through.
	errOverBudget = errors.New("conversion reviews in flight hold all the memory they may")
)

func newBudget(limit int64, maxReviews int, maxWait time.Duration) *budget {
	return &budget{limit: limit, maxReviews: maxReviews, maxWait: maxWait,
		holders: map[*holding]struct{}{}, freed: make(chan struct{})}
}

// enter admits one more review, holding nothing yet; it must release.
func (b *budget) enter(unblock func()) (*holding, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.holders) >= b.maxReviews {
		return nil, errTooManyReviews
	}
	h := &holding{b: b, unblock: unblock}
	b.holders[h] = struct{}{}
	return h, nil
}

// release gives back all h holds.
func (h *holding) release() {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= h.held
	h.held = 0
	delete(b.holders, h)
	close(b.freed)
	b.freed = make(chan struct{})
}

// wasRefused reports whether h was chosen to give way.
func (h *holding) wasRefused() bool {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	return h.refused
}

// charge adds n bytes to what h holds, waiting for holders that give way.
func (h *holding) charge(ctx context.Context, n int64) error {
	b := h.b
	var deadline <-chan time.Time
	b.mu.Lock()
	for {
		if h.refused {
			b.mu.Unlock()
			return errOverBudget
		}
		if b.used+n <= b.limit {
			b.used += n
			h.held += n
			b.mu.Unlock()
			return nil
		}
		// What the holders already giving way will free, and, if that is
		// not enough, the largest other holder that holds more than h
		// would: it gives way too. None: h is the largest, and gives way.
		var coming int64
		var largest *holding
		for o := range b.holders {
			switch {
			case o == h:
			case o.refused:
				coming += o.held
			case largest == nil || o.held > largest.held:
				largest = o
			}
		}
		if b.used-coming+n > b.limit {
			if largest == nil || largest.held <= h.held+n {
				h.refused = true
				b.mu.Unlock()
				return errOverBudget
			}
			largest.refused = true
			if largest.unblock != nil {
				largest.unblock()
			}
		}
		freed := b.freed
		b.mu.Unlock()
		if deadline == nil {
			timer := time.NewTimer(b.maxWait)
			defer timer.Stop()
			deadline = timer.C
		}
		select {
		case <-freed:
		case <-deadline:
			b.mu.Lock()
			h.refused = true
			b.mu.Unlock()
			return errOverBudget
		case <-ctx.Done():
			return ctx.Err()
		}
		b.mu.Lock()
	}
}

// chargedReader charges each read to a holding before passing it on.
type chargedReader struct {
	ctx context.Context
	r   io.Reader
	h   *holding
	// chunk is the most one read asks for: what a review holds beyond its
	// charge is one read at most, whatever buffer the decoder offers.
	chunk int
}

// Read charges what it read, after reading it. Charging the size asked for
// first would make a review's cost depend on how the decoder reads: Go 1.27's
// json.Decoder asks for 64, 64, 128, then 256 bytes where Go 1.26's asked for
// 512, and a review that fits its budget exactly would be refused for a read
// that finds nothing more.
func (c *chargedReader) Read(p []byte) (int, error) {
	if len(p) > c.chunk {
		p = p[:c.chunk]
	}
	n, err := c.r.Read(p)
	if n > 0 {
		if cerr := c.h.charge(c.ctx, int64(n)); cerr != nil {
			return 0, cerr
		}
	}
	return n, err
}
