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
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A hand-written audit log of the zombie-leader sequence: replica A
// (host-a) leads from 00:00:00 and renews; the user creates foo-1 with one
// replica and A creates its Deployment; B (host-b) takes the Lease at
// 00:00:10 (committed 00:00:10.010); the user scales foo-1 to 3 through
// the scale subresource; B applies 3, its apply received before the
// scale's answer was out (B's watch saw the committed change first, as it
// does on a real API server).
const cleanAuditLog = `{"stage":"ResponseComplete","verb":"create","userAgent":"sample-controller/host-a_11111111-1111-1111-1111-111111111111/leader-election","user":{"username":"system:serviceaccount:sc:a"},"objectRef":{"resource":"leases","namespace":"sc","name":"sample-controller"},"responseStatus":{"code":201},"requestObject":{"spec":{"holderIdentity":"host-a_11111111-1111-1111-1111-111111111111"}},"requestReceivedTimestamp":"2026-01-01T00:00:00.000000Z","stageTimestamp":"2026-01-01T00:00:00.005000Z"}
{"stage":"ResponseComplete","verb":"create","userAgent":"kubectl/v1.36.3","user":{"username":"admin"},"objectRef":{"resource":"foos","namespace":"ns","name":"foo-1"},"responseStatus":{"code":201},"requestObject":{"spec":{"deploymentName":"foo-1"}},"responseObject":{"spec":{"deploymentName":"foo-1","replicas":1}},"requestReceivedTimestamp":"2026-01-01T00:00:00.400000Z","stageTimestamp":"2026-01-01T00:00:00.500000Z"}
{"stage":"ResponseComplete","verb":"create","userAgent":"sample-controller/host-a_11111111-1111-1111-1111-111111111111","user":{"username":"system:serviceaccount:sc:a"},"objectRef":{"resource":"deployments","namespace":"ns","name":"foo-1"},"responseStatus":{"code":201},"requestObject":{"metadata":{"ownerReferences":[{"kind":"Foo","name":"foo-1","controller":true}]},"spec":{"replicas":1}},"requestReceivedTimestamp":"2026-01-01T00:00:00.600000Z","stageTimestamp":"2026-01-01T00:00:00.610000Z"}
{"stage":"ResponseComplete","verb":"update","userAgent":"sample-controller/host-a_11111111-1111-1111-1111-111111111111/leader-election","user":{"username":"system:serviceaccount:sc:a"},"objectRef":{"resource":"leases","namespace":"sc","name":"sample-controller"},"responseStatus":{"code":200},"requestObject":{"spec":{"holderIdentity":"host-a_11111111-1111-1111-1111-111111111111"}},"requestReceivedTimestamp":"2026-01-01T00:00:01.000000Z","stageTimestamp":"2026-01-01T00:00:01.005000Z"}
{"stage":"ResponseComplete","verb":"update","userAgent":"sample-controller/host-b_22222222-2222-2222-2222-222222222222/leader-election","user":{"username":"system:serviceaccount:sc:b"},"objectRef":{"resource":"leases","namespace":"sc","name":"sample-controller"},"responseStatus":{"code":200},"requestObject":{"spec":{"holderIdentity":"host-b_22222222-2222-2222-2222-222222222222"}},"requestReceivedTimestamp":"2026-01-01T00:00:10.000000Z","stageTimestamp":"2026-01-01T00:00:10.010000Z"}
{"stage":"ResponseComplete","verb":"patch","userAgent":"kubectl/v1.36.3","user":{"username":"admin"},"objectRef":{"resource":"foos","namespace":"ns","name":"foo-1","subresource":"scale"},"responseStatus":{"code":200},"requestObject":{"spec":{"replicas":3}},"responseObject":{"kind":"Scale","spec":{"replicas":3}},"requestReceivedTimestamp":"2026-01-01T00:00:11.000000Z","stageTimestamp":"2026-01-01T00:00:11.010000Z"}
{"stage":"ResponseComplete","verb":"patch","userAgent":"sample-controller/host-b_22222222-2222-2222-2222-222222222222","user":{"username":"system:serviceaccount:sc:b"},"objectRef":{"resource":"deployments","namespace":"ns","name":"foo-1"},"responseStatus":{"code":200},"requestObject":{"metadata":{"ownerReferences":[{"kind":"Foo","name":"foo-1","controller":true}]},"spec":{"replicas":3}},"requestReceivedTimestamp":"2026-01-01T00:00:11.005000Z","stageTimestamp":"2026-01-01T00:00:11.020000Z"}
`

// What the paused A did once resumed (measured before the fence): an apply of the
// replica count from before the user's change, accepted at 00:00:12.5 (2.5
// s after B's take-over, 1.5 s after the scale), and a status patch
// refused with 409, which is no write.
const zombieAuditLines = `{"stage":"ResponseComplete","verb":"patch","userAgent":"sample-controller/host-a_11111111-1111-1111-1111-111111111111","user":{"username":"system:serviceaccount:sc:a"},"objectRef":{"resource":"deployments","namespace":"ns","name":"foo-1"},"responseStatus":{"code":200},"requestObject":{"metadata":{"ownerReferences":[{"kind":"Foo","name":"foo-1","controller":true}]},"spec":{"replicas":1}},"requestReceivedTimestamp":"2026-01-01T00:00:12.500000Z","stageTimestamp":"2026-01-01T00:00:12.510000Z"}
{"stage":"ResponseComplete","verb":"patch","userAgent":"sample-controller/host-a_11111111-1111-1111-1111-111111111111","user":{"username":"system:serviceaccount:sc:a"},"objectRef":{"resource":"foos","namespace":"ns","name":"foo-1","subresource":"status"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-01-01T00:00:12.100000Z","stageTimestamp":"2026-01-01T00:00:12.110000Z"}
`

const (
	replicaA = "host-a_11111111-1111-1111-1111-111111111111"
	replicaB = "host-b_22222222-2222-2222-2222-222222222222"
)

func parseAudit(t *testing.T, log string) []AuditEvent {
	t.Helper()
	events, cut, err := ParseAuditLog(strings.NewReader(log))
	if err != nil || cut != 0 {
		t.Fatalf("ParseAuditLog: %d cut lines, %v", cut, err)
	}
	return events
}

func at(s string) time.Time {
	v, err := time.Parse(time.RFC3339Nano, "2026-01-01T"+s+"Z")
	if err != nil {
		panic(err)
	}
	return v
}

func TestLeadershipsFollowTheLeaseHolders(t *testing.T) {
	got, err := Leaderships(parseAudit(t, cleanAuditLog), "sc", "sample-controller")
	if err != nil {
		t.Fatal(err)
	}
	want := []Leadership{
		{Holder: replicaA, Replica: replicaA, From: at("00:00:00"), To: at("00:00:10.010")},
		{Holder: replicaB, Replica: replicaB, From: at("00:00:10")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Leaderships:\n got %+v\nwant %+v", got, want)
	}
}

func TestAuditChecksPassACleanLog(t *testing.T) {
	events := parseAudit(t, cleanAuditLog)
	leaderships, err := Leaderships(events, "sc", "sample-controller")
	if err != nil {
		t.Fatal(err)
	}
	if v := WritesOutsideLeadership(events, leaderships); len(v) != 0 {
		t.Errorf("WritesOutsideLeadership of a clean log: %q, want none", v)
	}
	if v := StaleReplicaWrites(events, time.Second, nil); len(v) != 0 {
		t.Errorf("StaleReplicaWrites of a clean log: %q, want none", v)
	}
}

func TestAuditChecksFlagTheZombieWrite(t *testing.T) {
	events := parseAudit(t, cleanAuditLog+zombieAuditLines)
	leaderships, err := Leaderships(events, "sc", "sample-controller")
	if err != nil {
		t.Fatal(err)
	}
	wantOutside := []string{`patch deployments ns/foo-1 (200) received 00:00:12.500000 by "sample-controller/` + replicaA +
		`": ` + replicaA + ` did not hold the Lease then (holder: ` + replicaB + `, written by ` + replicaB + ` since 00:00:10.000000)`}
	if got := WritesOutsideLeadership(events, leaderships); !reflect.DeepEqual(got, wantOutside) {
		t.Errorf("WritesOutsideLeadership:\n got %q\nwant %q", got, wantOutside)
	}
	wantStale := []string{`patch deployments ns/foo-1 (200) received 00:00:12.500000 by "sample-controller/` + replicaA +
		`": replicas 1, but Foo foo-1 held only 3 since 00:00:11.000000 in the 1s before`}
	if got := StaleReplicaWrites(events, time.Second, nil); !reflect.DeepEqual(got, wantStale) {
		t.Errorf("StaleReplicaWrites:\n got %q\nwant %q", got, wantStale)
	}
	// Within the tolerance the old value is still one a legitimate
	// leader's cache may hold: with 2 s, the apply 1.5 s after the
	// scale is not flagged.
	if got := StaleReplicaWrites(events, 2*time.Second, nil); len(got) != 0 {
		t.Errorf("StaleReplicaWrites with 2s tolerance: %q, want none", got)
	}
	// Received while the API server refused the writer's requests, its
	// watch among them, the write is not judged; a window that ends before
	// it excuses nothing.
	excused := []Window{{From: at("00:00:11.500"), To: at("00:00:12.500")}}
	if got := StaleReplicaWrites(events, time.Second, excused); len(got) != 0 {
		t.Errorf("StaleReplicaWrites with the write's window excused: %q, want none", got)
	}
	before := []Window{{From: at("00:00:11.500"), To: at("00:00:12.499")}}
	if got := StaleReplicaWrites(events, time.Second, before); !reflect.DeepEqual(got, wantStale) {
		t.Errorf("StaleReplicaWrites with a window ending before the write:\n got %q\nwant %q", got, wantStale)
	}
}

// A fault that broke a replica's watch leaves its Foo cache as of then
// until its informer watches again, which client-go's backoff may put off
// past the fault's end. Until then its writes are judged from when the
// fault began, or from its last list of the Foos since (a new leader's
// check). The zombie's apply at 00:00:12.5 of the count foo-1 held until
// the scale at 00:00:11, after a window from 00:00:11.5 to 00:00:12: held
// within the tolerance of the fault's start when A watched again only
// after the write (or listed the Foos at 00:00:11.9 and watched after);
// stale when A had listed them at 00:00:12.1, after the scale was
// answered, and judged as any write when A watched again before it, when
// another replica did, when the API server refused A's watch, when a
// watch of A's ended, when A only listed, and when A's next watch came
// past the bound (a watch that the fault had not broken, ended by its
// timeout).
func TestAReplicaWhoseWatchIsNotBackIsJudgedFromTheFault(t *testing.T) {
	fill := func(replica, verb, stage string, code int, at string) string {
		return `{"stage":"` + stage + `","verb":"` + verb + `","userAgent":"sample-controller/` + replica +
			`","user":{"username":"system:serviceaccount:sc:a"},"objectRef":{"resource":"foos","namespace":"ns"},` +
			`"responseStatus":{"code":` + strconv.Itoa(code) + `},"requestReceivedTimestamp":"2026-01-01T` + at +
			`Z","stageTimestamp":"2026-01-01T` + at + `Z"}` + "\n"
	}
	watchAfter := fill(replicaA, "watch", "ResponseStarted", 200, "00:00:12.600000")
	window := []Window{{From: at("00:00:11.500"), To: at("00:00:12")}}
	stale := []string{`patch deployments ns/foo-1 (200) received 00:00:12.500000 by "sample-controller/` + replicaA +
		`": replicas 1, but Foo foo-1 held only 3 since 00:00:11.000000 in the 1s before`}
	staleSinceList := []string{`patch deployments ns/foo-1 (200) received 00:00:12.500000 by "sample-controller/` +
		replicaA + `": replicas 1, but Foo foo-1 held only 3 since 00:00:11.000000 from 1s before 00:00:12.100000 on ` +
		`(its Foo cache as of then: its watch not back after a fault)`}
	for _, tc := range []struct {
		name, fills string
		want        []string
	}{
		{"watched again after the write", watchAfter, nil},
		{"listed before the scale was answered", fill(replicaA, "list", "ResponseComplete", 200, "00:00:11.900000") +
			watchAfter, nil},
		{"listed after the scale was answered", fill(replicaA, "list", "ResponseComplete", 200, "00:00:12.100000") +
			watchAfter, staleSinceList},
		{"watched again before the write", fill(replicaA, "watch", "ResponseStarted", 200, "00:00:12.400000"), stale},
		{"another replica watched again", fill(replicaB, "watch", "ResponseStarted", 200, "00:00:12.600000"), stale},
		{"the watch refused", fill(replicaA, "watch", "ResponseComplete", 429, "00:00:12.600000"), stale},
		{"a watch ended", fill(replicaA, "watch", "ResponseComplete", 200, "00:00:12.600000"), stale},
		{"listed only", fill(replicaA, "list", "ResponseComplete", 200, "00:00:12.600000"), stale},
		{"watched again past the bound", fill(replicaA, "watch", "ResponseStarted", 200, "00:01:12.100000"), stale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := parseAudit(t, cleanAuditLog+zombieAuditLines+tc.fills)
			if got := StaleReplicaWrites(events, time.Second, window); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("StaleReplicaWrites:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A replica of a controller that does not name itself in its user agent is
// told apart by its user name, and a cut line (a kube-apiserver killed while
// writing it) is counted, not fatal.
func TestAuditReplicaFallsBackToUserNameAndCutLinesAreCounted(t *testing.T) {
	log := `{"stage":"ResponseComplete","verb":"patch","userAgent":"sample-controller/v0.0.0 (linux/amd64) kubernetes/$Format","user":{"username":"system:serviceaccount:sc:a"},"objectRef":{"resource":"foos","namespace":"ns","name":"foo-1","subresource":"status"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:01.000000Z","stageTimestamp":"2026-01-01T00:00:01.010000Z"}
{"stage":"ResponseComplete","verb":"pat`
	events, cut, err := ParseAuditLog(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if cut != 1 || len(events) != 1 {
		t.Fatalf("%d events, %d cut lines; want 1 and 1", len(events), cut)
	}
	if got := events[0].Replica(); got != "system:serviceaccount:sc:a" {
		t.Errorf("Replica() = %q, want the user name", got)
	}
}

// A Lease client whose user agent does not name the replica (client-go's
// rest.AddUserAgent puts the default agent before "/leader-election"): the
// writes of the identity that holds the Lease are still inside its
// leadership.
func TestAuditLeaseHolderIdentityCoversItsWrites(t *testing.T) {
	log := strings.ReplaceAll(cleanAuditLog, replicaA+"/leader-election", "v0.0.0 (linux/amd64) kubernetes/$Format/leader-election")
	log = strings.ReplaceAll(log, replicaB+"/leader-election", "v0.0.0 (linux/amd64) kubernetes/$Format/leader-election")
	events := parseAudit(t, log+zombieAuditLines)
	leaderships, err := Leaderships(events, "sc", "sample-controller")
	if err != nil {
		t.Fatal(err)
	}
	if len(leaderships) != 2 || leaderships[0].Replica != "system:serviceaccount:sc:a" || leaderships[1].Holder != replicaB {
		t.Fatalf("Leaderships: %+v", leaderships)
	}
	got := WritesOutsideLeadership(events, leaderships)
	if len(got) != 1 || !strings.Contains(got[0], "received 00:00:12.500000") {
		t.Errorf("WritesOutsideLeadership: %q, want only the zombie's apply at 00:00:12.5", got)
	}
}

func TestReadAuditLogReadsTheFilesRotatedOutOfIt(t *testing.T) {
	// kube-apiserver rotated the log twice: the first three lines went to
	// the older file, the next two to the newer one. The current log ends
	// with a line cut by a kill. A file of another name is not the log's.
	lines := strings.SplitAfter(cleanAuditLog, "\n")
	dir := t.TempDir()
	files := map[string]string{
		"audit-2026-01-01T00-00-01.000.log": strings.Join(lines[:3], ""),
		"audit-2026-01-01T00-00-10.005.log": strings.Join(lines[3:5], ""),
		"audit.log":                         strings.Join(lines[5:], "") + `{"stage":"ResponseComplete","verb":"pat`,
		"auditor.log":                       lines[0],
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "audit.log")

	got, err := AuditLogFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "audit-2026-01-01T00-00-01.000.log"),
		filepath.Join(dir, "audit-2026-01-01T00-00-10.005.log"),
		path,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AuditLogFiles = %v, want %v", got, want)
	}

	events, cut, err := ReadAuditLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if cut != 1 {
		t.Errorf("%d cut lines, want 1", cut)
	}
	if !reflect.DeepEqual(events, parseAudit(t, cleanAuditLog)) {
		t.Errorf("ReadAuditLog of the rotated log: %d events, want the %d of the whole log, in the same order", len(events), len(parseAudit(t, cleanAuditLog)))
	}
}

// A kube-apiserver killed after etcd took a user's scale and before it
// audited it leaves the scale out of the log. A later status write answers
// with the new count, so the count was held from the write before it on,
// and the leader's apply of it is not stale. Without that answer it is
// judged on what the log holds.
func TestStaleReplicaWritesTakeACountFromAStatusAnswerAsHeldSinceTheWriteBefore(t *testing.T) {
	const create = `{"stage":"ResponseComplete","verb":"create","userAgent":"kubectl/v1.37.2","user":{"username":"admin"},"objectRef":{"resource":"foos","namespace":"ns","name":"foo-1"},"responseStatus":{"code":201},"responseObject":{"spec":{"replicas":3}},"requestReceivedTimestamp":"2026-01-01T00:00:01.000000Z","stageTimestamp":"2026-01-01T00:00:01.010000Z"}
`
	const apply = `{"stage":"ResponseComplete","verb":"patch","userAgent":"sample-controller/` + replicaB + `","user":{"username":"system:serviceaccount:sc:b"},"objectRef":{"resource":"deployments","namespace":"ns","name":"foo-1"},"responseStatus":{"code":200},"requestObject":{"metadata":{"ownerReferences":[{"kind":"Foo","name":"foo-1","controller":true}]},"spec":{"replicas":5}},"requestReceivedTimestamp":"2026-01-01T00:00:20.000000Z","stageTimestamp":"2026-01-01T00:00:20.010000Z"}
`
	const status = `{"stage":"ResponseComplete","verb":"patch","userAgent":"sample-controller/` + replicaB + `","user":{"username":"system:serviceaccount:sc:b"},"objectRef":{"resource":"foos","namespace":"ns","name":"foo-1","subresource":"status"},"responseStatus":{"code":200},"responseObject":{"spec":{"replicas":5}},"requestReceivedTimestamp":"2026-01-01T00:00:21.000000Z","stageTimestamp":"2026-01-01T00:00:21.010000Z"}
`
	if got := StaleReplicaWrites(parseAudit(t, create+apply+status), 4*time.Second, nil); len(got) != 0 {
		t.Errorf("StaleReplicaWrites with the status answer: %q, want none", got)
	}
	want := []string{`patch deployments ns/foo-1 (200) received 00:00:20.000000 by "sample-controller/` + replicaB +
		`": replicas 5, but Foo foo-1 held only 3 since 00:00:01.000000 in the 4s before`}
	if got := StaleReplicaWrites(parseAudit(t, create+apply), 4*time.Second, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("StaleReplicaWrites without it:\n got %q\nwant %q", got, want)
	}
}
