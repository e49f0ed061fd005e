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

package framework

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A condition that keeps failing for a reason, until the timeout cuts its
// last attempt short, times out with that reason, not the cut: a test
// waiting for a queue to drain says the queue's depth, not "context
// deadline exceeded".
func TestPollTimesOutWithTheLastErrorTheTimeoutDidNotCause(t *testing.T) {
	err := Poll(context.Background(), time.Millisecond, 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		select {
		case <-ctx.Done(): // the attempt the timeout cuts short
			return false, ctx.Err()
		case <-time.After(5 * time.Millisecond):
			return false, errors.New("workqueue depth 3")
		}
	})
	const want = "timed out after 50ms: workqueue depth 3"
	if err == nil || err.Error() != want {
		t.Fatalf("Poll: %v, want %q", err, want)
	}
}

// Cut short on its first attempt, the condition's error is all there is.
func TestPollTimesOutWithTheCutWhenNothingElseFailed(t *testing.T) {
	err := Poll(context.Background(), time.Millisecond, 10*time.Millisecond, func(ctx context.Context) (bool, error) {
		<-ctx.Done()
		return false, ctx.Err()
	})
	const want = "timed out after 10ms: context deadline exceeded"
	if err == nil || err.Error() != want {
		t.Fatalf("Poll: %v, want %q", err, want)
	}
}
