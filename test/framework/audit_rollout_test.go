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
	"reflect"
	"strconv"
	"testing"
	"time"
)

// The checks of a rolling update between shardings, on hand-written holds
// of three Leases: "sc", the unsharded leader's, and the two shards of
// count 2. Namespace ns-a is in shard 0, ns-b in shard 1.

const (
	replicaC = "host-c_33333333-3333-3333-3333-333333333333"
	replicaD = "host-d_44444444-4444-4444-4444-444444444444"
	replicaE = "host-e_55555555-5555-5555-5555-555555555555"
)

func rolloutCovering(namespace string) []string {
	shard := map[string]string{"ns-a": "0", "ns-b": "1"}[namespace]
	return []string{"sc", "sc-shard-" + shard + "-of-2"}
}

// hold is replica's Leadership from from until to ("" while it holds).
func hold(replica, from, to string) Leadership {
	l := Leadership{Holder: replica, Replica: replica, From: at(from)}
	if to != "" {
		l.To = at(to)
	}
	return l
}

// controllerWrite is an audit line of a write by replica, answered with
// code, received (and answered) at received.
func controllerWrite(replica, verb, resource, subresource, namespace string, code int, received string) string {
	return `{"stage":"ResponseComplete","verb":"` + verb + `","userAgent":"sample-controller/` + replica +
		`","user":{"username":"system:serviceaccount:sc:default"},"objectRef":{"resource":"` + resource +
		`","namespace":"` + namespace + `","name":"foo","subresource":"` + subresource + `"},"responseStatus":{"code":` +
		strconv.Itoa(code) + `},"requestReceivedTimestamp":"2026-01-01T` + received + `Z","stageTimestamp":"2026-01-01T` +
		received + `Z"}` + "\n"
}

// A rollout from one shard to two: A leads until its release was answered
// at 00:00:10.010; B takes shard 0 and C shard 1 at 00:00:10.5. A write by A
// after its release, and one by B for ns-b, whose shard C holds, were sent
// by replicas that held none of the namespace's Leases; a refused write and
// a Lease's write are no writes for a Foo.
func TestWritesOutsideLeasesFlagsAWriterHoldingNoneOfItsNamespacesLeases(t *testing.T) {
	leaderships := map[string][]Leadership{
		"sc":              {hold(replicaA, "00:00:00", "00:00:10.010")},
		"sc-shard-0-of-2": {hold(replicaB, "00:00:10.500", "")},
		"sc-shard-1-of-2": {hold(replicaC, "00:00:10.500", "")},
	}
	events := parseAudit(t, controllerWrite(replicaA, "create", "deployments", "", "ns-a", 201, "00:00:05.000000")+
		controllerWrite(replicaB, "patch", "deployments", "", "ns-a", 200, "00:00:11.000000")+
		controllerWrite(replicaB, "patch", "deployments", "", "ns-b", 200, "00:00:11.100000")+
		controllerWrite(replicaC, "patch", "deployments", "", "ns-b", 200, "00:00:11.200000")+
		controllerWrite(replicaA, "patch", "foos", "status", "ns-a", 200, "00:00:12.000000")+
		controllerWrite(replicaA, "patch", "deployments", "", "ns-a", 409, "00:00:12.100000")+
		controllerWrite(replicaA, "update", "leases", "", "ns-a", 200, "00:00:12.200000"))
	want := []string{
		`patch deployments ns-b/foo (200) received 00:00:11.100000 by "sample-controller/` + replicaB + `": ` +
			replicaB + ` held none of the Leases of its namespace then (sc: nobody; sc-shard-1-of-2: ` + replicaC +
			`, written by ` + replicaC + ` since 00:00:10.500000)`,
		`patch foos/status ns-a/foo (200) received 00:00:12.000000 by "sample-controller/` + replicaA + `": ` +
			replicaA + ` held none of the Leases of its namespace then (sc: nobody; sc-shard-0-of-2: ` + replicaB +
			`, written by ` + replicaB + ` since 00:00:10.500000)`,
	}
	if got := WritesOutsideLeases(events, leaderships, rolloutCovering); !reflect.DeepEqual(got, want) {
		t.Errorf("WritesOutsideLeases:\n got %q\nwant %q", got, want)
	}
}

// A leads until 00:00:12.010 and B holds shard 0 from 00:00:10: for ns-a
// both write at 11 and 11.5, while both held, and that is two writers. The
// others are handovers: for ns-b, A writes at 11 and C at 14, C's hold of
// shard 1 begun after A's ended; for ns-a, B writes at 19 and D at 20.020,
// after D's take-over of shard 0 was answered; D writes for ns-a at 26 while
// E leads, E writing at 28, after D released the shard (a leader waits for
// that). A refused write while both held is none.
func TestWritesByTwoReplicasFlagsOnlyWritesWhileBothHeld(t *testing.T) {
	leaderships := map[string][]Leadership{
		"sc":              {hold(replicaA, "00:00:00", "00:00:12.010"), hold(replicaE, "00:00:25", "")},
		"sc-shard-0-of-2": {hold(replicaB, "00:00:10", "00:00:20.010"), hold(replicaD, "00:00:20", "00:00:27.010")},
		"sc-shard-1-of-2": {hold(replicaC, "00:00:13", "")},
	}
	events := parseAudit(t, controllerWrite(replicaA, "patch", "deployments", "", "ns-a", 200, "00:00:11.000000")+
		controllerWrite(replicaA, "patch", "deployments", "", "ns-b", 200, "00:00:11.000000")+
		controllerWrite(replicaB, "patch", "foos", "status", "ns-a", 200, "00:00:11.500000")+
		controllerWrite(replicaB, "patch", "deployments", "", "ns-a", 409, "00:00:11.600000")+
		controllerWrite(replicaC, "patch", "deployments", "", "ns-b", 200, "00:00:14.000000")+
		controllerWrite(replicaB, "patch", "deployments", "", "ns-a", 200, "00:00:19.000000")+
		controllerWrite(replicaD, "patch", "deployments", "", "ns-a", 200, "00:00:20.020000")+
		controllerWrite(replicaD, "patch", "deployments", "", "ns-a", 200, "00:00:26.000000")+
		controllerWrite(replicaE, "patch", "deployments", "", "ns-a", 200, "00:00:28.000000"))
	want := []string{
		`patch deployments ns-a/foo (200) received 00:00:11.000000 by "sample-controller/` + replicaA +
			`" (holding sc since 00:00:00.000000) and patch foos/status ns-a/foo (200) received 00:00:11.500000 by ` +
			`"sample-controller/` + replicaB + `" (holding sc-shard-0-of-2 since 00:00:10.000000): each while both held`,
	}
	if got := WritesByTwoReplicas(events, leaderships, rolloutCovering); !reflect.DeepEqual(got, want) {
		t.Errorf("WritesByTwoReplicas:\n got %q\nwant %q", got, want)
	}
	if got := WritesOutsideLeases(events, leaderships, rolloutCovering); len(got) != 0 {
		t.Errorf("WritesOutsideLeases: %q, want none: every write is inside a hold of its replica", got)
	}
}

// The holds of sc (A from 1 until 10.010), shard 0 of 2 (B from 12 until
// 20.010), shard 0 of 4 (C from 19 on) and shard 1 of 4 (D from 2 until 5,
// inside A's): unheld from 10.010 to 12, counted from A's acquisition, not
// from 0; nothing from 15 on; from 20.010 to the end without shard 0 of 4;
// the whole window for a Lease nobody ever took.
func TestLongestUnheldIsTheLongestGapInTheUnionOfTheHolds(t *testing.T) {
	leaderships := map[string][]Leadership{
		"sc":              {hold(replicaA, "00:00:01", "00:00:10.010")},
		"sc-shard-0-of-2": {hold(replicaB, "00:00:12", "00:00:20.010")},
		"sc-shard-0-of-4": {hold(replicaC, "00:00:19", "")},
		"sc-shard-1-of-4": {hold(replicaD, "00:00:02", "00:00:05")},
	}
	all := []string{"sc", "sc-shard-0-of-2", "sc-shard-0-of-4", "sc-shard-1-of-4"}
	for _, tc := range []struct {
		name     string
		names    []string
		from, to time.Time
		want     Window
	}{
		{"from before the first acquisition", all, time.Time{}, at("00:01:00"),
			Window{From: at("00:00:10.010"), To: at("00:00:12")}},
		{"from after the last gap", all, at("00:00:15"), at("00:01:00"), Window{}},
		{"without the Lease held to the end", all[:2], time.Time{}, at("00:01:00"),
			Window{From: at("00:00:20.010"), To: at("00:01:00")}},
		{"a gap cut by the window's end", all[:2], time.Time{}, at("00:00:11"),
			Window{From: at("00:00:10.010"), To: at("00:00:11")}},
		{"a Lease nobody took", []string{"sc-shard-1-of-2"}, at("00:00:00"), at("00:01:00"),
			Window{From: at("00:00:00"), To: at("00:01:00")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LongestUnheld(leaderships, tc.names, tc.from, tc.to); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("LongestUnheld = %v to %v, want %v to %v", got.From, got.To, tc.want.From, tc.want.To)
			}
		})
	}
}
