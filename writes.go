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
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/expectations"
	"github.com/kube-samples/sample-controller/pkg/owned"
	"github.com/kube-samples/sample-controller/pkg/prunedstatus"
)

// reconcileDeployment makes the Foo's Deployment what the Foo asks for, writing only what the cache shows
// changed (with a Normal event); a write refused for a reason the user must address is a desired.Problem.
func (c *Controller) reconcileDeployment(ctx context.Context,
	foo *samplev1alpha1.Foo) (*desired.CachedDeployment, error) {
	if errs := desired.ValidateSpec(&foo.Spec); len(errs) > 0 {
		return nil, desired.InvalidSpecProblem(errs)
	}
	deployment, err := c.ensureDeployment(ctx, foo)
	if err != nil {
		return nil, err
	}
	// Only now: a rename never leaves the Foo without pods.
	if err := c.deleteStaleDeployments(ctx, foo); err != nil {
		return nil, err
	}
	return deployment, nil
}

// ensureDeployment makes the Foo's Deployment exist as desired.Deployment says. A Deployment of
// that name the Foo does not control is never modified: that is a problem.
func (c *Controller) ensureDeployment(ctx context.Context,
	foo *samplev1alpha1.Foo) (*desired.CachedDeployment, error) {
	want := desired.Deployment(foo)
	deployment, err := desired.Deployments.Get(c.deploymentsIndexer, foo.Namespace, foo.Spec.DeploymentName)
	if apierrors.IsNotFound(err) {
		deployment, err = c.createDeployment(ctx, foo, want)
		var refused *desired.Problem
		if !apierrors.IsAlreadyExists(err) && !errors.As(err, &refused) {
			return deployment, err
		}
		// Taken and uncached (no label of ours), or refused: a quota at its limit refuses a
		// create of the one we made that the cache has not shown yet. Judge the API server's copy.
		served, getErr := c.kubeclientset.AppsV1().Deployments(foo.Namespace).Get(ctx, foo.Spec.DeploymentName,
			metav1.GetOptions{})
		if refused != nil && apierrors.IsNotFound(getErr) {
			return nil, refused
		}
		if err = getErr; err == nil {
			deployment = desired.Deployments.Cache(served)
		}
	}
	if err != nil {
		return nil, err
	}
	if !owned.ControlledBy(deployment, foo, samplecontroller.FooGroupKind) {
		return nil, desired.NameTakenProblem(deployment)
	}
	return c.repairDeployment(ctx, foo, want, deployment)
}

// createDeployment creates the desired Deployment: a plain create, as an
// apply would take over a Deployment of that name the cache does not see.
func (c *Controller) createDeployment(ctx context.Context, foo *samplev1alpha1.Foo,
	want *appsv1ac.DeploymentApplyConfiguration) (*desired.CachedDeployment, error) {
	deployment := &appsv1.Deployment{}
	if err := owned.ToObject(want, deployment); err != nil {
		return nil, err
	}
	created, err := c.kubeclientset.AppsV1().Deployments(foo.Namespace).Create(ctx, deployment,
		metav1.CreateOptions{FieldManager: samplecontroller.ControllerName})
	if err != nil {
		return nil, desired.ProblemIfRefused(samplecontroller.ReasonFailedCreate, "create", deployment.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created Deployment", "deployment", klog.KObj(created))
	c.recorder.Eventf(foo, corev1.EventTypeNormal, samplecontroller.ReasonSynced, "Created Deployment %s", created.Name)
	return desired.Deployments.Cache(created), nil
}

// repairDeployment applies the desired state where a field it owns drifted.
func (c *Controller) repairDeployment(ctx context.Context, foo *samplev1alpha1.Foo,
	want *appsv1ac.DeploymentApplyConfiguration, deployment *desired.CachedDeployment,
) (*desired.CachedDeployment, error) {
	drift, err := desired.Deployments.Drift(want, deployment)
	if err != nil {
		return nil, err
	}
	if len(drift) == 0 {
		return deployment, nil
	}
	// Force: fields the controller owns are its own. The resourceVersion makes it conditional: a
	// Deployment changed since the cache saw it is answered 409 and the Foo synced again, not undone.
	want.WithResourceVersion(deployment.ResourceVersion)
	applied, err := c.kubeclientset.AppsV1().Deployments(foo.Namespace).Apply(ctx, want,
		metav1.ApplyOptions{FieldManager: samplecontroller.ControllerName, Force: true})
	if err != nil {
		return nil, desired.ProblemIfRefused(samplecontroller.ReasonFailedUpdate, "update", deployment.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated Deployment", "deployment", klog.KObj(applied), "fields", drift)
	c.recorder.Eventf(foo, corev1.EventTypeNormal, samplecontroller.ReasonSynced,
		"Updated Deployment %s: %s", applied.Name, strings.Join(drift, ", "))
	return desired.Deployments.Cache(applied), nil
}

// deleteStaleDeployments deletes the Deployments the Foo controls under a
// name it no longer asks for, as after a change of spec.deploymentName.
func (c *Controller) deleteStaleDeployments(ctx context.Context, foo *samplev1alpha1.Foo) error {
	controlled, err := c.deploymentsIndexer.ByIndex(owned.ByControllerUID, string(foo.UID))
	if err != nil {
		return err
	}
	for _, obj := range controlled {
		deployment := obj.(*desired.CachedDeployment)
		if deployment.Name == foo.Spec.DeploymentName {
			continue
		}
		// The UID precondition: the very Deployment we saw, not a namesake.
		err := c.kubeclientset.AppsV1().Deployments(deployment.Namespace).Delete(ctx, deployment.Name,
			metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(deployment.UID))})
		if apierrors.IsNotFound(err) {
			continue // deleted already; the cache had not caught up
		}
		if err != nil {
			return desired.ProblemIfRefused(samplecontroller.ReasonFailedDelete, "delete", deployment.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Deleted stale Deployment", "deployment", klog.KObj(deployment))
		c.recorder.Eventf(foo, corev1.EventTypeNormal, samplecontroller.ReasonSynced,
			"Deleted Deployment %s: spec.deploymentName is now %s", deployment.Name, foo.Spec.DeploymentName)
	}
	return nil
}

// reportProblem records a problem the user has to resolve: Ready=False with its reason and message in
// status, and a Warning event the first time this problem is seen, after a successful status write only
// (a write refused 409 is retried on fresh data, which already shows the problem reported).
func (c *Controller) reportProblem(ctx context.Context, foo *samplev1alpha1.Foo, problem *desired.Problem) error {
	ready := desired.NotReady(problem.Reason, problem.Message)
	prev := meta.FindStatusCondition(foo.Status.Conditions, samplecontroller.ConditionReady)
	isNew := prev == nil || prev.Status != ready.Status || prev.Reason != ready.Reason || prev.Message != ready.Message
	written, err := c.updateFooStatus(ctx, foo, desired.Status(foo, nil, ready))
	if err != nil {
		return err
	}
	if written && isNew {
		klog.FromContext(ctx).Info("Foo cannot be reconciled", "reason", problem.Reason, "message", problem.Message)
		c.recorder.Event(foo, corev1.EventTypeWarning, problem.Reason, problem.Message)
	}
	return nil
}

// updateFooStatus writes status unless the Foo has it, and says whether it wrote. Conditional on the
// Foo's resourceVersion (desired.StatusPatch), a stale status is refused 409, not written over a newer one.
func (c *Controller) updateFooStatus(ctx context.Context, foo *samplev1alpha1.Foo,
	status samplev1alpha1.FooStatus) (bool, error) {
	if equality.Semantic.DeepEqual(foo.Status, status) || c.memory.prunedStatus.SameAsPruned(foo.UID, status, desired.EqualIgnoringTransitionTimes) {
		return false, nil
	}
	if c.memory.statusWrites.CacheIsBehind(foo) {
		// Computed from the Foo our last status write replaced: it would be refused 409; its event queues the Foo.
		return false, expectations.ErrCacheBehindOwnWrite
	}
	patch, err := desired.StatusPatch(foo.ResourceVersion, status)
	if err != nil {
		return false, err
	}
	updated, err := c.sampleclientset.SamplecontrollerV1alpha1().Foos(foo.Namespace).Patch(ctx, foo.Name,
		types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: samplecontroller.ControllerName}, "status")
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Foo deleted meanwhile, not syncing it until the cache shows it")
		c.memory.deleted.Add(foo.UID)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c.memory.statusWrites.Wrote(foo, updated)
	if pruned := desired.PrunedStatusFields(status, updated.Status); len(pruned) == 0 {
		c.memory.prunedStatus.Forget(foo.UID)
	} else if c.memory.prunedStatus.Remember(foo.UID, status) {
		// Pruned by an outdated CRD: said once per Foo, not rewritten.
		klog.FromContext(ctx).Error(nil, "Foo status pruned by the API server",
			"fields", pruned, "crd", samplecontroller.FooCRDName)
		c.recorder.Event(foo, corev1.EventTypeWarning, samplecontroller.ReasonStatusPruned, prunedstatus.Message(pruned))
	}
	return true, nil
}
