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
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/expectations"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// syncOwned brings each object the Foo owns in line with it in the steps of upstream's syncHandler, one call each,
// for every kind in desired.Registrations (pkg/owned takes them for any kind; desired.Deployments is the
// Deployment's). Each reads the cache and writes only what differs, with a Normal event; what the user must address
// (an invalid spec, a taken name, a refused write) is a *desired.Problem. It returns the Foo's Deployment as last
// seen, which its status reports.
func (c *Controller) syncOwned(ctx context.Context, foo *samplev1beta1.Foo) (*desired.CachedDeployment, error) {
	// The CRD's schema refuses an invalid spec at admission, unless it was installed without it.
	if err := desired.CheckSpec(&foo.Spec); err != nil {
		return nil, err
	}
	writer := desired.NewWriter(c.kubeclientset, c.recorder) // the field manager, the Synced events, the problems
	var deployment *desired.CachedDeployment
	for _, objects := range c.ownedObjects {
		want := objects.Want(foo) // for the Deployment, desired.DeploymentFor(foo)
		// Read it from the cache (upstream: deploymentsLister.Get).
		object, err := objects.Get(objects.indexer, foo.Namespace, want.Name)
		// Missing: create it.
		if apierrors.IsNotFound(err) {
			object, err = objects.Create(ctx, writer, foo, want)
		}
		if err != nil {
			return nil, err
		}
		// Not controlled by this Foo: never modified, reported on the Foo (upstream: ErrResourceExists).
		if !owned.ControlledBy(object, foo, samplecontroller.FooGroupKind) {
			return nil, desired.NameTakenProblem(want.Kind, object)
		}
		// Repair the fields the Foo owns where they differ (upstream: an update where replicas differ).
		if object, err = objects.Repair(ctx, writer, foo, want, object); err != nil {
			return nil, err
		}
		// Only now, so that a rename never leaves the Foo without one: delete those under its old name.
		if err := objects.DeleteStale(ctx, writer, objects.indexer, foo, want.Name); err != nil {
			return nil, err
		}
		if objects.Registered == desired.Deployments { // the one whose status the Foo's reports
			if deployment, err = desired.Deployments.Cached(object); err != nil {
				return nil, err
			}
		}
	}
	if deployment == nil {
		return nil, errors.New("the kinds a Foo owns have no Deployment, which its status reports")
	}
	return deployment, nil
}

// reportProblem records a problem the user has to resolve: Ready=False with its reason and message in
// status, and a Warning event the first time this problem is seen, after a successful status write only
// (a write refused 409 is retried on fresh data, which already shows the problem reported). It returns the
// problem itself when retrying can help (problem.Retry), to be retried with backoff.
func (c *Controller) reportProblem(ctx context.Context, foo *samplev1beta1.Foo, problem *desired.Problem) error {
	ready := desired.NotReady(problem.Reason, problem.Message)
	prev := meta.FindStatusCondition(foo.Status.Conditions, samplecontroller.ConditionReady)
	isNew := prev == nil || prev.Status != ready.Status || prev.Reason != ready.Reason || prev.Message != ready.Message
	written, err := c.updateFooStatus(ctx, foo, desired.StatusFor(foo, nil, ready))
	if err != nil {
		return err
	}
	if written && isNew {
		klog.FromContext(ctx).Info("Foo cannot be reconciled", "reason", problem.Reason, "message", problem.Message)
		c.recorder.Event(foo, corev1.EventTypeWarning, problem.Reason, problem.Message)
	}
	if problem.Retry {
		return problem
	}
	return nil
}

// updateFooStatus writes status unless the Foo has it, and says whether it wrote. Conditional on the
// Foo's resourceVersion (desired.StatusPatch), a stale status is refused 409, not written over a newer one.
func (c *Controller) updateFooStatus(ctx context.Context, foo *samplev1beta1.Foo,
	status samplev1beta1.FooStatus) (bool, error) {
	if equality.Semantic.DeepEqual(foo.Status, status) ||
		c.expectations.PrunedStatus.SameAsPruned(foo.UID, status) {
		return false, nil
	}
	if c.expectations.StatusWrites.CacheIsBehind(foo) {
		// Computed from the Foo our last status write replaced: it would be refused 409; its event queues the Foo.
		return false, expectations.ErrCacheBehindOwnWrite
	}
	patch, err := desired.StatusPatch(foo.ResourceVersion, status)
	if err != nil {
		return false, err
	}
	updated, err := c.sampleclientset.SamplecontrollerV1beta1().Foos(foo.Namespace).Patch(ctx, foo.Name,
		types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: samplecontroller.ControllerName}, "status")
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Foo deleted meanwhile, not syncing it until the cache shows it")
		c.expectations.Deleted.Add(foo.UID)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c.expectations.StatusWrites.Wrote(foo, updated)
	if pruned := desired.PrunedStatusFields(status, updated.Status); len(pruned) == 0 {
		c.expectations.PrunedStatus.Forget(foo.UID)
	} else if c.expectations.PrunedStatus.Remember(foo.UID, status) {
		// Pruned by an outdated CRD: said once per Foo, not rewritten.
		klog.FromContext(ctx).Error(nil, "Foo status pruned by the API server",
			"fields", pruned, "crd", samplecontroller.FooCRDName)
		c.recorder.Event(foo, corev1.EventTypeWarning, samplecontroller.ReasonStatusPruned,
			expectations.PrunedStatusMessage(pruned))
	}
	return true, nil
}
