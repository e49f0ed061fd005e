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
	"sync"
	"time"
)

// logSampler lets through at most one log line per interval and counts the
// others, so that a flood of refused reviews, which anyone who reaches the
// port can send, costs one line per interval rather than one per review.
// The line let through says how many were left out since the last.
type logSampler struct {
	every time.Duration
	now   func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether to log now and, if so, how many lines were left out
// before this one.
func (s *logSampler) allow() (ok bool, suppressed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if !s.last.IsZero() && now.Sub(s.last) < s.every {
		s.suppressed++
		return false, 0
	}
	s.last, suppressed, s.suppressed = now, s.suppressed, 0
	return true, suppressed
}
