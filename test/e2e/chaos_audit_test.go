//go:build e2e

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

package e2e

// The audit-log checks of the chaos scenarios (test/framework/audit.go):
// no accepted write from a replica that did not hold the Lease, no
// Deployment replica count its Foo no longer held, and no write to the
// foreign Deployment.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kube-samples/sample-controller/test/framework"
)

// staleTolerance is how long after a Foo's change a Deployment write may
// still carry the Foo's value from before: the time a legitimate leader's
// cache takes to learn of the change through its watch (well under 100 ms
// on a quiet machine, seconds on a loaded one; no bound at all while the
// API server refuses the controller's watches, so the faults that do are
// excused: chaosFault.refusesController). It must stay below how long
// the zombie leader stays paused after the user's scaling (zombiePause):
// a zombie's write of the value from before its pause comes at least that
// long after the change, and is caught.
const staleTolerance = zombiePause / 2

// auditFindings is what the audit log showed.
type auditFindings struct {
	events      []framework.AuditEvent
	leaderships []framework.Leadership
}

// checkAuditLog reads the audit log and fails the test for every write
// the checks flag; stale replica counts are not judged in the windows in
// which the API server refused or stalled the controller (refused). It
// returns what it read, for reports.
func (w *chaosWorld) checkAuditLog(t *testing.T, refused []framework.Window) auditFindings {
	t.Helper()
	events, cut, err := framework.ReadAuditLog(w.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	leaderships, err := framework.Leaderships(events, deployNamespace, deployName)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("audit log: %d requests audited (%d cut lines, left by a killed kube-apiserver); the Lease changed hands %d times: %s",
		len(events), cut, len(leaderships), describeLeaderships(leaderships))
	if len(leaderships) == 0 {
		t.Fatalf("no Lease acquisition in the audit log %s: the check would see nothing", w.auditLog)
	}
	expectNone(t, "accepted writes from a replica that did not hold the Lease", framework.WritesOutsideLeadership(events, leaderships))
	expectNone(t, fmt.Sprintf("accepted Deployment writes of a replica count their Foo had not held for %v", staleTolerance),
		framework.StaleReplicaWrites(events, staleTolerance, refused))
	expectNone(t, "accepted controller writes to the foreign Deployment "+foreignDeployment,
		framework.WritesTo(events, "deployments", w.ns, foreignDeployment))
	return auditFindings{events: events, leaderships: leaderships}
}

// expectNone fails the test if found lists anything, showing the first
// twenty.
func expectNone(t *testing.T, what string, found []string) {
	t.Helper()
	if len(found) == 0 {
		return
	}
	shown := found
	if len(shown) > 20 {
		shown = shown[:20]
	}
	t.Errorf("%d %s, want none:\n%s", len(found), what, strings.Join(shown, "\n"))
}

func describeLeaderships(leaderships []framework.Leadership) string {
	parts := make([]string, 0, len(leaderships))
	for _, l := range leaderships {
		to := "now"
		if !l.To.IsZero() {
			to = l.To.Format("15:04:05.000")
		}
		parts = append(parts, fmt.Sprintf("%s %s–%s", l.Holder, l.From.Format("15:04:05.000"), to))
	}
	return strings.Join(parts, ", ")
}
