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
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/klog/v2"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

// Every API write the controller makes is in this file: creating, repairing
// and deleting Deployments, writing Foo status, and recording events. Each
// write is made only when the cache shows something to change.

// fooProblem is why a Foo cannot be reconciled, in words for the Foo's user:
// its reason and message become the Ready=False condition and one Warning
// event. retry says whether retrying (with backoff) can help.
type fooProblem struct {
	reason  string
	message string
	retry   bool
}

func (p *fooProblem) Error() string { return p.message }

// invalidSpecProblem: a spec the controller cannot act on. Retrying cannot
// help; the next change to the spec queues the Foo again.
func invalidSpecProblem(errs field.ErrorList) *fooProblem {
	return &fooProblem{
		reason:  samplev1alpha1.ReasonInvalidSpec,
		message: fmt.Sprintf("Invalid spec: %v", errs.ToAggregate()),
	}
}

// nameTakenProblem: the requested Deployment exists and is not controlled by
// the Foo. It is retried with backoff: the name may be freed by someone the
// controller does not watch.
func nameTakenProblem(deployment *appsv1.Deployment) *fooProblem {
	owner := "no Foo"
	if ref := fooControllerRef(deployment); ref != nil {
		owner = fmt.Sprintf("Foo %q", ref.Name)
	}
	return &fooProblem{
		reason:  samplev1alpha1.ReasonResourceExists,
		message: fmt.Sprintf("Deployment %q already exists and is not managed by this Foo (it is controlled by %s)", deployment.Name, owner),
		retry:   true,
	}
}

// refusedWrite turns the API server's refusal of a write (a quota exceeded,
// an admission webhook or policy that denies it, missing permission, a
// namespace being deleted) into a problem the Foo reports, as the ReplicaSet
// controller reports FailedCreate. The Foo is retried with backoff, so it
// converges once the cause is gone. Other errors (timeouts, throttling,
// conflicts) are passing: they are only retried.
func refusedWrite(reason, action, name string, err error) error {
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
		return err
	}
	return &fooProblem{
		reason:  reason,
		message: fmt.Sprintf("Cannot %s Deployment %s: %v", action, name, err),
		retry:   true,
	}
}

// ensureDeployment makes the Foo's Deployment exist with the fields the
// controller owns as newDeployment says, and returns it. A Deployment of that
// name that the Foo does not control is never modified: that is a problem
// to report.
func (c *Controller) ensureDeployment(ctx context.Context, foo *samplev1alpha1.Foo) (*appsv1.Deployment, error) {
	desired := newDeployment(foo)
	deployment, err := c.deploymentsLister.Deployments(foo.Namespace).Get(foo.Spec.DeploymentName)
	if apierrors.IsNotFound(err) {
		var created *appsv1.Deployment
		if created, err = c.createDeployment(ctx, foo, desired); !apierrors.IsAlreadyExists(err) {
			return created, err
		}
		// The name is taken by a Deployment the cache does not hold: one
		// without the managed-by label (someone else's, or ours with the
		// label removed by hand). The API server's copy says whose it is.
		deployment, err = c.kubeclientset.AppsV1().Deployments(foo.Namespace).Get(ctx, foo.Spec.DeploymentName, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(deployment, foo) {
		return nil, nameTakenProblem(deployment)
	}
	return c.repairDeployment(ctx, foo, desired, deployment)
}

// createDeployment creates the desired Deployment. A plain create, not an
// apply: an apply would take over a Deployment of that name that the cache
// cannot see because it lacks our label.
func (c *Controller) createDeployment(ctx context.Context, foo *samplev1alpha1.Foo, desired *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	deployment, err := deploymentFromApplyConfiguration(desired)
	if err != nil {
		return nil, err
	}
	created, err := c.kubeclientset.AppsV1().Deployments(foo.Namespace).Create(ctx, deployment,
		metav1.CreateOptions{FieldManager: samplev1alpha1.ControllerName})
	if err != nil {
		return nil, refusedWrite(samplev1alpha1.ReasonFailedCreate, "create", deployment.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created Deployment", "deployment", klog.KObj(created))
	c.recorder.Eventf(foo, corev1.EventTypeNormal, samplev1alpha1.ReasonSynced, "Created Deployment %s", created.Name)
	return created, nil
}

// repairDeployment applies the desired state to the Foo's own Deployment when
// it differs in a field the controller owns.
func (c *Controller) repairDeployment(ctx context.Context, foo *samplev1alpha1.Foo, desired *appsv1ac.DeploymentApplyConfiguration, deployment *appsv1.Deployment) (*appsv1.Deployment, error) {
	drift := deploymentDrift(desired, deployment)
	if len(drift) == 0 {
		return deployment, nil
	}
	// Force: fields the controller owns are its own, even when someone
	// changed them by hand since.
	applied, err := c.kubeclientset.AppsV1().Deployments(foo.Namespace).Apply(ctx, desired,
		metav1.ApplyOptions{FieldManager: samplev1alpha1.ControllerName, Force: true})
	if err != nil {
		return nil, refusedWrite(samplev1alpha1.ReasonFailedUpdate, "update", deployment.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated Deployment", "deployment", klog.KObj(applied), "fields", drift)
	c.recorder.Eventf(foo, corev1.EventTypeNormal, samplev1alpha1.ReasonSynced, "Updated Deployment %s: %s", applied.Name, strings.Join(drift, ", "))
	return applied, nil
}

// deleteStaleDeployments deletes the Deployments the Foo controls under a
// name it no longer asks for, as after a change of spec.deploymentName.
func (c *Controller) deleteStaleDeployments(ctx context.Context, foo *samplev1alpha1.Foo) error {
	owned, err := c.deploymentsIndexer.ByIndex(deploymentControllerIndex, string(foo.UID))
	if err != nil {
		return err
	}
	for _, obj := range owned {
		deployment := obj.(*appsv1.Deployment)
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
			return refusedWrite(samplev1alpha1.ReasonFailedDelete, "delete", deployment.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Deleted stale Deployment", "deployment", klog.KObj(deployment))
		c.recorder.Eventf(foo, corev1.EventTypeNormal, samplev1alpha1.ReasonSynced,
			"Deleted Deployment %s: spec.deploymentName is now %s", deployment.Name, foo.Spec.DeploymentName)
	}
	return nil
}

// reportProblem records a problem the user has to resolve: Ready=False with
// its reason and message in status, and a Warning event the first time this
// problem is seen, not on every retry. The event follows a successful status
// write only: a write refused because the cache was stale (409) is retried
// on fresh data, which already shows the problem reported.
func (c *Controller) reportProblem(ctx context.Context, foo *samplev1alpha1.Foo, problem *fooProblem) error {
	prev := meta.FindStatusCondition(foo.Status.Conditions, samplev1alpha1.ConditionReady)
	isNew := prev == nil || prev.Status != metav1.ConditionFalse || prev.Reason != problem.reason || prev.Message != problem.message
	written, err := c.updateFooStatus(ctx, foo, newFooStatus(foo, nil, notReady(problem.reason, problem.message)))
	if err != nil {
		return err
	}
	if written && isNew {
		klog.FromContext(ctx).Info("Foo cannot be reconciled", "reason", problem.reason, "message", problem.message)
		c.recorder.Event(foo, corev1.EventTypeWarning, problem.reason, problem.message)
	}
	return nil
}

// updateFooStatus writes status to the Foo's status subresource unless the
// Foo has it already, and says whether it wrote.
//
// The write is a JSON patch replacing the whole status. Setting
// resourceVersion makes it conditional: it applies only to the Foo version
// the status was computed from. When the cache lags behind (a Deployment
// event often requeues the Foo before the watch delivers our previous write)
// the API server answers 409 Conflict and the Foo is retried on fresh data,
// rather than a stale status overwriting a newer one, or a problem being
// reported twice.
func (c *Controller) updateFooStatus(ctx context.Context, foo *samplev1alpha1.Foo, status samplev1alpha1.FooStatus) (bool, error) {
	if equality.Semantic.DeepEqual(foo.Status, status) || c.prunedStatus.sameAsPruned(foo.UID, status) {
		return false, nil
	}
	if c.statusWrites.awaitEcho(foo) {
		// The cache still holds the Foo our last status write replaced:
		// this status was computed from stale data, and the write would
		// only be answered 409. The Foo is synced again when the watch
		// delivers that write (see onFooUpdate).
		return false, fmt.Errorf("%w: %w", errAwaitingStatusEcho,
			apierrors.NewConflict(samplev1alpha1.Resource("foos"), foo.Name, errAwaitingStatusEcho))
	}
	patch, err := json.Marshal([]jsonPatchOperation{
		{Op: "replace", Path: "/metadata/resourceVersion", Value: foo.ResourceVersion},
		{Op: "add", Path: "/status", Value: status},
	})
	if err != nil {
		return false, err
	}
	updated, err := c.sampleclientset.SamplecontrollerV1alpha1().Foos(foo.Namespace).Patch(ctx, foo.Name,
		types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: samplev1alpha1.ControllerName}, "status")
	if err != nil {
		return false, err
	}
	c.statusWrites.written(foo, updated)
	if pruned := prunedStatusFields(status, updated.Status); len(pruned) > 0 {
		c.reportPrunedStatus(ctx, foo, status, pruned)
	} else {
		c.prunedStatus.forget(foo.UID)
	}
	return true, nil
}

// jsonPatchOperation is one operation of an RFC 6902 JSON patch.
type jsonPatchOperation struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value,omitempty"`
}

// prunedStatusFields lists the status fields the controller wrote that the
// API server dropped: what happens when the CRD's schema lacks them (the CRD
// was replaced by an older one while the controller runs).
func prunedStatusFields(sent, stored samplev1alpha1.FooStatus) []string {
	var pruned []string
	s, g := reflect.ValueOf(sent), reflect.ValueOf(stored)
	for i := range s.NumField() {
		if !s.Field(i).IsZero() && g.Field(i).IsZero() {
			pruned = append(pruned, "status."+jsonName(s.Type().Field(i)))
		}
	}
	return pruned
}

// reportPrunedStatus says, once per Foo, that the API server pruned its
// status: a Warning event on the Foo, and an error in the log naming the fix.
// Retrying cannot help, so the same status is not written again (see
// prunedStatusMemory) until the Foo asks for a different one.
func (c *Controller) reportPrunedStatus(ctx context.Context, foo *samplev1alpha1.Foo, status samplev1alpha1.FooStatus, pruned []string) {
	if !c.prunedStatus.remember(foo.UID, status) {
		return // reported already
	}
	message := fmt.Sprintf("The API server dropped %s from the status written: the installed CRD %s is outdated; "+
		"update it with: kubectl apply -f artifacts/examples/crd.yaml", strings.Join(pruned, ", "), samplev1alpha1.FooCRDName)
	klog.FromContext(ctx).Error(nil, "Foo status pruned by the API server", "fields", pruned, "crd", samplev1alpha1.FooCRDName)
	c.recorder.Event(foo, corev1.EventTypeWarning, samplev1alpha1.ReasonStatusPruned, message)
}

// errAwaitingStatusEcho is returned by a sync that found the cache behind
// the controller's own last status write (a Conflict: the cache was behind).
// It is counted apart, as "deferred", because the Foo is not retried through
// the rate limiter: the watch event that brings the write queues it (see
// statusWriteMemory).
var errAwaitingStatusEcho = errors.New("the cache has not seen the controller's last status write yet")

// statusWriteMemory remembers, per Foo, the resourceVersion its last status
// write replaced, until the cache shows a newer Foo: the expectations of
// kube-controller-manager's controllers, for one write. A Deployment event can
// reach the controller before the watch delivers its own status write; a sync
// then would compute status from the Foo as it was before that write. Such a
// sync gives up and is noted as waiting; the watch event that delivers the
// write queues the Foo again, ahead of the backlog.
//
// Waiting for the event rather than retrying with backoff matters at scale:
// during a cold start over 10,000 Foos thousands of syncs find their echo not
// yet delivered, and retries together are held to 50 a second.
//
// Its zero value is ready to use.
type statusWriteMemory struct {
	mu       sync.Mutex
	replaced map[types.UID]statusWrite
}

// statusWrite is what is remembered of one Foo's last status write.
type statusWrite struct {
	// replacedVersion is the resourceVersion of the Foo the write replaced.
	replacedVersion string
	// syncWaiting is set once a sync has given up on the Foo until the
	// write shows in the cache.
	syncWaiting bool
}

// written records a successful status write of foo (as cached) that the API
// server stored as updated.
func (m *statusWriteMemory) written(foo, updated *samplev1alpha1.Foo) {
	if updated.ResourceVersion == foo.ResourceVersion {
		return // nothing changed on the server: no watch event will come
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.replaced == nil {
		m.replaced = map[types.UID]statusWrite{}
	}
	m.replaced[foo.UID] = statusWrite{replacedVersion: foo.ResourceVersion}
}

// awaitEcho reports whether the cached foo is the version the last status
// write replaced; if so, the caller's sync is noted as waiting for the write
// to show. Once the cache has moved on, the record is dropped.
func (m *statusWriteMemory) awaitEcho(foo *samplev1alpha1.Foo) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.replaced[foo.UID]
	if !ok {
		return false
	}
	if w.replacedVersion != foo.ResourceVersion {
		delete(m.replaced, foo.UID)
		return false
	}
	w.syncWaiting = true
	m.replaced[foo.UID] = w
	return true
}

// seen is told of every Foo the cache receives. It drops the record once the
// cache has moved past the version the last write replaced, and reports
// whether a sync was waiting for that.
func (m *statusWriteMemory) seen(foo *samplev1alpha1.Foo) (syncWaiting bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.replaced[foo.UID]
	if !ok || w.replacedVersion == foo.ResourceVersion {
		return false
	}
	delete(m.replaced, foo.UID)
	return w.syncWaiting
}

// forget drops the record of a deleted Foo.
func (m *statusWriteMemory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.replaced, uid)
}

// prunedStatusMemory remembers, per Foo, the last status the API server
// pruned. Its zero value is ready to use.
type prunedStatusMemory struct {
	mu    sync.Mutex
	byUID map[types.UID]samplev1alpha1.FooStatus
}

// sameAsPruned reports whether status is the one last pruned for the Foo,
// transition times aside: a condition the server dropped comes back with a
// new lastTransitionTime on every sync.
func (m *prunedStatusMemory) sameAsPruned(uid types.UID, status samplev1alpha1.FooStatus) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, ok := m.byUID[uid]
	return ok && equality.Semantic.DeepEqual(withoutTransitionTimes(prev), withoutTransitionTimes(status))
}

// remember records the status pruned for the Foo; it returns true when the
// Foo had none recorded, that is, when this is news to report.
func (m *prunedStatusMemory) remember(uid types.UID, status samplev1alpha1.FooStatus) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byUID == nil {
		m.byUID = map[types.UID]samplev1alpha1.FooStatus{}
	}
	_, known := m.byUID[uid]
	m.byUID[uid] = status
	return !known
}

// forget drops what is recorded for the Foo: its status was stored whole, or
// the Foo is gone.
func (m *prunedStatusMemory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byUID, uid)
}

func withoutTransitionTimes(status samplev1alpha1.FooStatus) samplev1alpha1.FooStatus {
	out := *status.DeepCopy()
	for i := range out.Conditions {
		out.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return out
}
