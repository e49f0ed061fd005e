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

package main

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

var deploymentsResource = schema.GroupResource{Group: "apps", Resource: "deployments"}

// refuse makes the fake API server answer verb on deployments with err.
func (f *fixture) refuse(verb string, err error) {
	f.kubeclient.PrependReactor(verb, "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, err
	})
}

// A write the API server refuses is reported on the Foo with a reason of its
// own and the server's message, once; the Foo is retried with backoff and
// converges when the cause is gone.
func TestRefusedWriteIsReportedOnTheFoo(t *testing.T) {
	quota := apierrors.NewForbidden(deploymentsResource, "test-deployment",
		fmt.Errorf("exceeded quota: one-deployment, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1"))
	policy := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "test-deployment", nil)
	for name, tc := range map[string]struct {
		verb   string
		setup  func(f *fixture, foo *samplev1beta1.Foo)
		err    error
		reason string
		write  string
	}{
		"create refused by a quota": {"create", func(*fixture, *samplev1beta1.Foo) {}, quota,
			samplecontroller.ReasonFailedCreate, "create deployments test-deployment"},
		"repair refused by a policy": {"patch", func(f *fixture, foo *samplev1beta1.Foo) {
			d := testfixtures.OwnedDeployment(t, foo)
			d.Spec.Replicas = ptr.To[int32](5)
			f.deployments = append(f.deployments, d)
		}, policy, samplecontroller.ReasonFailedUpdate, "patch deployments test-deployment application/apply-patch+yaml"},
		"stale delete forbidden": {"delete", func(f *fixture, foo *samplev1beta1.Foo) {
			stale := testfixtures.OwnedDeployment(t, foo)
			stale.Name = "old-name"
			f.deployments = append(f.deployments, testfixtures.OwnedDeployment(t, foo), stale)
		}, apierrors.NewForbidden(deploymentsResource, "old-name", fmt.Errorf("denied")),
			samplecontroller.ReasonFailedDelete, "delete deployments old-name"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			foo := testfixtures.NewFoo("test", 1)
			f.foos = append(f.foos, foo)
			tc.setup(f, foo)
			f.build()
			f.refuse(tc.verb, tc.err)
			f.discardEvents()

			if err := f.sync(foo); err == nil {
				t.Fatal("sync succeeded, want an error so the Foo is retried with backoff")
			}
			f.expectKubeWrites(tc.write)
			f.expectFooWrites("patch foos/status test application/json-patch+json")
			c := expectReady(t, f.writtenStatus(), metav1.ConditionFalse, tc.reason)
			if !strings.Contains(c.Message, tc.err.Error()) {
				t.Errorf("condition message %q does not carry the server's %q", c.Message, tc.err.Error())
			}
			f.expectEvents("Warning " + tc.reason + " " + c.Message)

			// The retry meets the same refusal, reported already: no status
			// write, no second event.
			foo = foo.DeepCopy()
			foo.Status = f.writtenStatus()
			if err := f.controller.foosIndexer.Update(foo); err != nil {
				t.Fatal(err)
			}
			if err := f.sync(foo); err == nil {
				t.Fatal("retry succeeded, want the error again")
			}
			f.expectFooWrites()
			f.expectEvents()

			// The cause goes away (the quota is raised, the policy
			// changed): the next retry converges.
			f.kubeclient.ReactionChain = f.kubeclient.ReactionChain[1:]
			if err := f.sync(foo); err != nil {
				t.Fatalf("sync after the cause went away: %v", err)
			}
			if c := meta.FindStatusCondition(f.writtenStatus().Conditions, samplecontroller.ConditionReady); c.Reason == tc.reason {
				t.Errorf("Ready still says %s after the cause went away: %q", c.Reason, c.Message)
			}
		})
	}
}

// A quota at its limit refuses the create of a Deployment that exists: ours,
// created by the sync before, which the cache has not shown yet (admission
// runs before the name is checked, so the answer is 403, not 409). That is
// no problem to report: the GET shows the Deployment is the Foo's, and the
// sync goes on with it.
func TestQuotaRefusingTheCreateOfOurUncachedDeploymentIsNoProblem(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	d := testfixtures.OwnedDeployment(t, foo)
	f.foos = append(f.foos, testfixtures.WithSyncedStatus(t, foo, d))
	f.uncachedDeployments = append(f.uncachedDeployments, d)
	f.build()
	f.refuse("create", apierrors.NewForbidden(deploymentsResource, d.Name,
		fmt.Errorf("exceeded quota: one-deployment, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1")))
	f.discardEvents()

	if err := f.sync(foo); err != nil {
		t.Fatalf("sync: %v, want none: the refused create's Deployment is the Foo's own", err)
	}
	f.expectActions("kube", f.kubeclient.Actions(), "create deployments test-deployment", "get deployments test-deployment")
	f.expectFooWrites()
	f.expectEvents()
}

// discardEvents empties the recorder, so a test counts events from here.
func (f *fixture) discardEvents() {
	for {
		select {
		case <-f.recorder.Events:
		default:
			return
		}
	}
}

// Passing errors (throttling, timeouts) are retried without a word to the
// Foo's user: they say nothing the user can act on.
func TestTransientWriteErrorIsOnlyRetried(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	f.foos = append(f.foos, foo)
	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.discardEvents()
	f.refuse("create", apierrors.NewTooManyRequests("slow down", 1))

	if err := f.sync(foo); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("sync error %v, want the 429 back for a retry", err)
	}
	f.expectFooWrites()
	f.expectEvents()
}

// When the installed CRD lacks status fields, the API server prunes them
// from every write. That is reported once per Foo, and the same status is
// not written again and again.
func TestPrunedStatusIsReportedOnceAndNotRewritten(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	d := testfixtures.OwnedDeployment(t, foo)
	f.foos = append(f.foos, foo)
	f.deployments = append(f.deployments, d)
	// An API server serving the classic CRD: status has availableReplicas
	// only.
	f.answerStatusWritesAtVersion2(foo, func(stored *samplev1beta1.Foo) {
		stored.Status = samplev1beta1.FooStatus{AvailableReplicas: 1}
	})
	f.discardEvents()

	if err := f.sync(foo); err != nil {
		t.Fatalf("a pruned status cannot be fixed by retrying, got error %v", err)
	}
	f.expectFooWrites("patch foos/status test application/json-patch+json")
	f.expectEvents("Warning StatusPruned The API server dropped status.replicas, status.selector, status.observedGeneration, status.conditions")

	// What the watch then delivers: the pruned status. Syncing it finds
	// the same status to write, pruned before: no write, no event.
	pruned := foo.DeepCopy()
	pruned.ResourceVersion = "2"
	pruned.Status = samplev1beta1.FooStatus{AvailableReplicas: 1}
	if err := f.controller.foosIndexer.Update(pruned); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := f.sync(pruned); err != nil {
			t.Fatal(err)
		}
		f.expectFooWrites()
		f.expectEvents()
	}
	if meta.FindStatusCondition(pruned.Status.Conditions, samplecontroller.ConditionReady) != nil {
		t.Fatal("test setup: the pruned Foo must have no condition")
	}
}
