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

import "context"

// Syncs bounds the Foos a replica syncs at once, whatever the number of
// shards it holds: the controller of each shard runs -workers workers, and
// each takes one of the replica's -workers syncs before it syncs. A replica
// of 5 shards then syncs 8 Foos at once, as one of one shard does, not 40:
// what a replica asks of the API server, and holds in memory during a cold
// start, is sized by its flags, not by how the shards fell. A shard alone
// may use them all, and the shards' workers take them in the order they
// asked.
type Syncs struct {
	slots chan struct{}
}

// NewSyncs returns room for n syncs at once.
func NewSyncs(n int) *Syncs {
	return &Syncs{slots: make(chan struct{}, n)}
}

// Acquire waits for room for one sync, or for ctx to end (its error).
func (s *Syncs) Acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release ends a sync Acquire let start.
func (s *Syncs) Release() {
	<-s.slots
}
