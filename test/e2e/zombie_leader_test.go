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

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/test/framework"
)

const (
	// zombieFoos and zombieScaled size the zombie-leader sequence, as first measured.
	zombieFoos   = 30
	zombieScaled = 10
	// zombieReplicas is what the user scales them to while the leader is
	// paused.
	zombieReplicas = 3
	// fenceLine is what a replica logs when its own clock says its Lease
	// may have passed to another: its workers wait, its writes are
	// refused, until the elector gives up and it exits.
	fenceLine = `"Lease not renewed in time, pausing work"`
)

// The zombie-leader sequence: replica A leads over 30 Foos; A is paused (SIGSTOP)
// past the lease duration, as a frozen VM or a starved process is; B takes
// the Lease over; the user scales 10 Foos to 3 and B applies them; A is
// resumed. A must write nothing that the API server accepts from the
// moment B acquired the Lease (the audit log is the witness: the end state
// looks right either way); its fence must close, and it must exit. Without the
// fence, A's workers went on for seconds after the resume with what they
// had queued and cached before the pause: status patches, and Deployment
// applies of the replica count from before the user's change.
func TestPausedLeaderWritesNothingAfterStandbyTakesOver(t *testing.T) {
	w := setUpChaosWorld(t, zombieFoos, rand.New(rand.NewPCG(17, 17)), time.Hour)
	a := startReplica(t, w, "replica-a", 0)
	waitLeaseHolder(t, deployNamespace, deployName, a.identity)
	b := startReplica(t, w, "replica-b", 1)
	waitControllerReady(t, b.Controller)
	run := w.faultRun(zombieFoos, a)
	run.waitConverged(t, time.Now())
	t.Logf("A (%s) leads over %d converged Foos; B (%s) stands by", a.identity, zombieFoos, b.identity)

	if err := a.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	lease := waitLeaseTaken(t, deployNamespace, deployName, b.identity, 1)
	t.Logf("B took the Lease %v after A was paused (acquireTime)", lease.Spec.AcquireTime.Sub(paused).Round(10*time.Millisecond))

	scaled := scaleFoos(t, w.ns, zombieScaled, zombieReplicas)
	run.leader = b
	run.waitConverged(t, paused)
	// The fault lasts at least the lease duration past the take-over, as
	// in the run that found the bug (docs/failure-modes.md, Post-mortems:
	// a frozen leader wrote after a standby took over).
	time.Sleep(time.Until(lease.Spec.AcquireTime.Add(chaosLeaseDuration / 2)))
	if err := a.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	t.Logf("A resumed after a pause of %v; B had applied %d Foos scaled to %d: %v", resumed.Sub(paused).Round(10*time.Millisecond),
		len(scaled), zombieReplicas, scaled)

	exit := <-waitExit(a.Controller, 2*chaosLeaseDuration)
	if exit.err != nil {
		t.Fatalf("A still runs %v after its resume: %v", 2*chaosLeaseDuration, exit.err)
	}
	t.Logf("A exited with code %d %v after its resume; it logged: %s", exit.code, exit.at.Sub(resumed).Round(10*time.Millisecond),
		strings.Join(grepLines(a.Log(), regexpFenceOrLost), " | "))
	if exit.code != 1 {
		t.Errorf("A exited with code %d, want 1", exit.code)
	}
	if !strings.Contains(a.Log(), fenceLine) {
		t.Errorf("A did not log %s; last log lines:\n%s", fenceLine, framework.Trim(a.Log(), 3000))
	}
	run.waitConverged(t, resumed)

	findings := w.checkAuditLog(t, nil)
	t.Logf("A's writes to Foos and Deployments after B acquired the Lease: %s", describeWritesAfter(findings, a.identity, lease.Spec.AcquireTime.Time))
	if n := len(findings.leaderships); n != 2 {
		t.Errorf("the Lease changed hands %d times, want 2 (A, then B): %s", n, describeLeaderships(findings.leaderships))
	}
}

// startReplica starts a replica of the controller with the token of
// w.kubeconfigs[token], stopped when the test ends.
func startReplica(t *testing.T, w *chaosWorld, name string, token int) *replica {
	t.Helper()
	c := startController(t, name, w.replicaArgs(token)...)
	return &replica{Controller: c, identity: leaderElectionIdentity(t, c)}
}

// scaleFoos sets spec.replicas of the first n Foos to replicas, a patch
// per Foo sent at the same time, and returns their names.
func scaleFoos(t *testing.T, ns string, n int, replicas int32) []string {
	t.Helper()
	names, err := patchFooReplicas(ns, n, replicas)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// patchFooReplicas is scaleFoos for a goroutine of the test: the error
// returned.
func patchFooReplicas(ns string, n int, replicas int32) ([]string, error) {
	names := make([]string, n)
	err := framework.Parallel(n, n, func(i int) error {
		names[i] = chaosFooName(i)
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		_, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Patch(context.Background(), names[i],
			types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	})
	return names, err
}

// describeWritesAfter counts the writes to Foos and Deployments that the
// replica of identity sent after since, by verb, resource and answer.
func describeWritesAfter(f auditFindings, identity string, since time.Time) string {
	byCode := map[string]int{}
	for i := range f.events {
		e := &f.events[i]
		if e.Replica() != identity || e.Received.Before(since) || (e.ObjectRef.Resource != samplecontroller.FooResource && e.ObjectRef.Resource != "deployments") {
			continue
		}
		code := 0
		if e.ResponseStatus != nil {
			code = e.ResponseStatus.Code
		}
		byCode[fmt.Sprintf("%s %s/%s %d", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Subresource, code)]++
	}
	if len(byCode) == 0 {
		return "none reached the API server"
	}
	return fmt.Sprint(byCode)
}

var regexpFenceOrLost = regexp.MustCompile(`"Lease not renewed in time, pausing work"|"Lost leadership, exiting"`)
