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
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/contract"
)

// The Foo's Deployment: created when missing, repaired when a field the
// controller owns drifted, deleted when the Foo renamed it. Each write is made
// only when the cache shows something to change, and each is recorded as a
// Normal event on the Foo. A write the API server refuses for a reason the
// user must address becomes a contract.Problem.

// ensureDeployment makes the Foo's Deployment exist with the fields the
// controller owns as contract.DesiredDeployment says, and returns it. A Deployment of that
// name that the Foo does not control is never modified: that is a problem
// to report.
func (c *Controller) ensureDeployment(ctx context.Context, foo *samplev1alpha1.Foo) (*contract.CachedDeployment, error) {
	desired := contract.DesiredDeployment(foo)
	deployment, err := c.cachedDeployment(foo.Namespace, foo.Spec.DeploymentName)
	if apierrors.IsNotFound(err) {
		var created *contract.CachedDeployment
		if created, err = c.createDeployment(ctx, foo, desired); !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		// The name is taken by a Deployment the cache does not hold: one
		// without the managed-by label (someone else's, or ours with the
		// label removed by hand). The API server's copy says whose it is.
		deployment, err = c.getDeployment(ctx, foo.Namespace, foo.Spec.DeploymentName)
	}
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(deployment, foo) {
		return nil, contract.NameTakenProblem(deployment)
	}
	return c.repairDeployment(ctx, foo, desired, deployment)
}

// cachedDeployment returns the cached Deployment of that name, or a NotFound
// error, as a lister would.
func (c *Controller) cachedDeployment(namespace, name string) (*contract.CachedDeployment, error) {
	obj, exists, err := c.deploymentsIndexer.GetByKey(cache.NewObjectName(namespace, name).String())
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(appsv1.Resource("deployments"), name)
	}
	return obj.(*contract.CachedDeployment), nil
}

// getDeployment reads a Deployment from the API server, and keeps of it what
// the cache would: the controller judges every Deployment by the same fields.
func (c *Controller) getDeployment(ctx context.Context, namespace, name string) (*contract.CachedDeployment, error) {
	deployment, err := c.kubeclientset.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return contract.NewCachedDeployment(deployment), nil
}

// createDeployment creates the desired Deployment. A plain create, not an
// apply: an apply would take over a Deployment of that name that the cache
// cannot see because it lacks our label.
func (c *Controller) createDeployment(ctx context.Context, foo *samplev1alpha1.Foo, desired *appsv1ac.DeploymentApplyConfiguration) (*contract.CachedDeployment, error) {
	deployment, err := contract.DeploymentObject(desired)
	if err != nil {
		return nil, err
	}
	created, err := c.kubeclientset.AppsV1().Deployments(foo.Namespace).Create(ctx, deployment,
		metav1.CreateOptions{FieldManager: samplev1alpha1.ControllerName})
	if err != nil {
		return nil, contract.ProblemIfRefused(samplev1alpha1.ReasonFailedCreate, "create", deployment.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created Deployment", "deployment", klog.KObj(created))
	c.recorder.Eventf(foo, corev1.EventTypeNormal, samplev1alpha1.ReasonSynced, "Created Deployment %s", created.Name)
	return contract.NewCachedDeployment(created), nil
}

// repairDeployment applies the desired state to the Foo's own Deployment when
// it differs in a field the controller owns.
func (c *Controller) repairDeployment(ctx context.Context, foo *samplev1alpha1.Foo, desired *appsv1ac.DeploymentApplyConfiguration, deployment *contract.CachedDeployment) (*contract.CachedDeployment, error) {
	drift := contract.Drift(desired, deployment)
	if len(drift) == 0 {
		return deployment, nil
	}
	// Force: fields the controller owns are its own, even when someone
	// changed them by hand since. The resourceVersion makes the apply
	// conditional on the Deployment being the one the drift was computed
	// from: if it changed since (another replica that leads now repaired
	// it, or someone edited it again), the API server answers 409 Conflict
	// and the Foo is synced again on fresh data, rather than a write from a
	// stale cache undoing a newer one.
	desired.WithResourceVersion(deployment.ResourceVersion)
	applied, err := c.kubeclientset.AppsV1().Deployments(foo.Namespace).Apply(ctx, desired,
		metav1.ApplyOptions{FieldManager: samplev1alpha1.ControllerName, Force: true})
	if err != nil {
		return nil, contract.ProblemIfRefused(samplev1alpha1.ReasonFailedUpdate, "update", deployment.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated Deployment", "deployment", klog.KObj(applied), "fields", drift)
	c.recorder.Eventf(foo, corev1.EventTypeNormal, samplev1alpha1.ReasonSynced, "Updated Deployment %s: %s", applied.Name, strings.Join(drift, ", "))
	return contract.NewCachedDeployment(applied), nil
}

// deleteStaleDeployments deletes the Deployments the Foo controls under a
// name it no longer asks for, as after a change of spec.deploymentName.
func (c *Controller) deleteStaleDeployments(ctx context.Context, foo *samplev1alpha1.Foo) error {
	owned, err := c.deploymentsIndexer.ByIndex(contract.DeploymentByControllingFoo, string(foo.UID))
	if err != nil {
		return err
	}
	for _, obj := range owned {
		deployment := obj.(*contract.CachedDeployment)
		if deployment.Name == foo.Spec.DeploymentName {
			continue
		}
		// The UID precondition makes sure we delete the very Deployment we
		// saw, not a newer one that took its name since.
		err := c.kubeclientset.AppsV1().Deployments(deployment.Namespace).Delete(ctx, deployment.Name,
			metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(deployment.UID))})
		if apierrors.IsNotFound(err) {
			continue // deleted already; the cache had not caught up
		}
		if err != nil {
			return contract.ProblemIfRefused(samplev1alpha1.ReasonFailedDelete, "delete", deployment.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Deleted stale Deployment", "deployment", klog.KObj(deployment))
		c.recorder.Eventf(foo, corev1.EventTypeNormal, samplev1alpha1.ReasonSynced,
			"Deleted Deployment %s: spec.deploymentName is now %s", deployment.Name, foo.Spec.DeploymentName)
	}
	return nil
}
