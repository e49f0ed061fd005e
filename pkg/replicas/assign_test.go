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
	"fmt"
	"slices"
	"testing"
)

// shares counts the shards of each member in holders.
func shares(holders []string) map[string]int {
	counts := map[string]int{}
	for _, h := range holders {
		counts[h]++
	}
	return counts
}

func TestEveryMemberGetsItsFairShareWithinOneShard(t *testing.T) {
	for _, tc := range []struct {
		count   int
		members []string
		want    map[string]int
	}{
		{16, []string{"a", "b", "c"}, map[string]int{"a": 6, "b": 5, "c": 5}},
		{16, []string{"a", "b", "c", "d"}, map[string]int{"a": 4, "b": 4, "c": 4, "d": 4}},
		{16, []string{"b", "a"}, map[string]int{"a": 8, "b": 8}},
		{2, []string{"a", "b", "c"}, map[string]int{"a": 1, "b": 1}},
		{1, []string{"a"}, map[string]int{"a": 1}},
		{4, nil, map[string]int{"": 4}},
	} {
		t.Run(fmt.Sprintf("%d over %v", tc.count, tc.members), func(t *testing.T) {
			holders := Assign(tc.count, tc.members)
			if len(holders) != tc.count {
				t.Fatalf("%d holders for %d shards", len(holders), tc.count)
			}
			got := shares(holders)
			for member, n := range tc.want {
				if got[member] != n {
					t.Errorf("%q holds %d shards, want %d (%v)", member, got[member], n, holders)
				}
			}
		})
	}
}

func TestEveryReplicaComputesTheSameAssignmentWhateverOrderItReadsTheMembersIn(t *testing.T) {
	a := Assign(16, []string{"x", "y", "z"})
	b := Assign(16, []string{"z", "x", "y", "x"})
	if !slices.Equal(a, b) {
		t.Errorf("the same members in another order give %v and %v", a, b)
	}
}

// A member joining takes its share, and the shards others give up besides
// are few: at most one per member whose share shrank by one.
func TestAJoiningMemberMovesFewShardsBesidesItsShare(t *testing.T) {
	before := Assign(16, []string{"x", "y", "z"})
	after := Assign(16, []string{"x", "y", "z", "w"})
	moved := 0
	for i := range before {
		if before[i] != after[i] && after[i] != "w" {
			moved++
		}
	}
	if got := shares(after)["w"]; got != 4 {
		t.Errorf("the new member holds %d shards, want 4", got)
	}
	if moved > 3 {
		t.Errorf("%d shards moved between the members that stayed, want at most 3: %v -> %v", moved, before, after)
	}
}
