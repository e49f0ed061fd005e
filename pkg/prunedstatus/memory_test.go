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

package prunedstatus

import (
	"testing"
	"time"
)

// A pruned status is news once; the same status, by the comparison given
// (here: the reason, whatever the transition time), is recognized until the
// Foo's memory is forgotten.
func TestPrunedStatusIsNewsOnce(t *testing.T) {
	type status struct {
		reason string
		at     time.Time
	}
	same := func(a, b status) bool { return a.reason == b.reason }
	var m Memory[status]
	first := status{"Available", time.Unix(100, 0)}
	if m.SameAsPruned("uid-a", first, same) {
		t.Fatal("an empty memory knows a status")
	}
	if !m.Remember("uid-a", first) {
		t.Error("the first pruned status is not news")
	}
	if m.Remember("uid-a", first) {
		t.Error("the same pruned status is news again")
	}
	if !m.SameAsPruned("uid-a", status{"Available", time.Unix(200, 0)}, same) {
		t.Error("a status the comparison calls the same counts as another")
	}
	if m.SameAsPruned("uid-a", status{"Progressing", time.Unix(100, 0)}, same) || m.SameAsPruned("uid-b", first, same) {
		t.Error("another status, or another Foo, counts as the one pruned")
	}
	m.Forget("uid-a")
	if m.SameAsPruned("uid-a", first, same) {
		t.Error("a forgotten Foo's status is still known")
	}
}
