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
	"testing"
	"time"
)

// Two syncs at once: a third waits until one ends, and a wait ends with its
// context.
func TestSyncsLetNoMoreThanTheirNumberRunAtOnce(t *testing.T) {
	syncs := NewSyncs(2)
	ctx := context.Background()
	for i := range 2 {
		if err := syncs.Acquire(ctx); err != nil {
			t.Fatalf("sync %d: %v", i+1, err)
		}
	}

	third := make(chan error, 1)
	go func() { third <- syncs.Acquire(ctx) }()
	select {
	case err := <-third:
		t.Fatalf("a third sync started while two ran (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	syncs.Release()
	select {
	case err := <-third:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the third sync did not start once one ended")
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := syncs.Acquire(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("a wait whose context ended: %v, want %v", err, context.Canceled)
	}
}
