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
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/contract"
)

// The Foo's status: written when what the controller observed differs from
// what the Foo says, and the problems that stop a Foo from being reconciled,
// reported on it (Ready=False and one Warning event).

// reportProblem records a problem the user has to resolve: Ready=False with
// its reason and message in status, and a Warning event the first time this
// problem is seen, not on every retry. The event follows a successful status
// write only: a write refused because the cache was stale (409) is retried
// on fresh data, which already shows the problem reported.
func (c *Controller) reportProblem(ctx context.Context, foo *samplev1alpha1.Foo, problem *contract.Problem) error {
	prev := meta.FindStatusCondition(foo.Status.Conditions, samplev1alpha1.ConditionReady)
	isNew := prev == nil || prev.Status != metav1.ConditionFalse || prev.Reason != problem.Reason || prev.Message != problem.Message
	written, err := c.updateFooStatus(ctx, foo, contract.DesiredStatus(foo, nil, contract.NotReady(problem.Reason, problem.Message)))
	if err != nil {
		return err
	}
	if written && isNew {
		klog.FromContext(ctx).Info("Foo cannot be reconciled", "reason", problem.Reason, "message", problem.Message)
		c.recorder.Event(foo, corev1.EventTypeWarning, problem.Reason, problem.Message)
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
	if c.statusWrites.cacheIsBehind(foo) {
		// The cache still holds the Foo our last status write replaced:
		// this status was computed from stale data, and the write would
		// only be answered 409. The Foo is synced again when the watch
		// delivers that write (see onFooUpdate).
		return false, errCacheBehindOwnWrite
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
	if apierrors.IsNotFound(err) {
		// Deleted; the cache has not shown it yet. Nothing to retry: its
		// deletion reaches the informer in time (expectations.go).
		klog.FromContext(ctx).V(2).Info("Foo deleted meanwhile, not syncing it until the cache shows it")
		c.deleted.add(foo.UID)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c.statusWrites.wrote(foo, updated)
	if pruned := contract.PrunedStatusFields(status, updated.Status); len(pruned) > 0 {
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

// reportPrunedStatus says, once per Foo, that the API server pruned its
// status: a Warning event on the Foo, and an error in the log naming the fix.
// Retrying cannot help, so the same status is not written again (see
// prunedStatusMemory) until the Foo asks for a different one.
func (c *Controller) reportPrunedStatus(ctx context.Context, foo *samplev1alpha1.Foo, status samplev1alpha1.FooStatus, pruned []string) {
	if !c.prunedStatus.remember(foo.UID, status) {
		return // reported already
	}
	message := fmt.Sprintf("The API server dropped %s from the status written: the installed CRD %s is outdated; "+
		"update it with: %s", strings.Join(pruned, ", "), samplev1alpha1.FooCRDName, apicheck.InstallHint)
	klog.FromContext(ctx).Error(nil, "Foo status pruned by the API server", "fields", pruned, "crd", samplev1alpha1.FooCRDName)
	c.recorder.Event(foo, corev1.EventTypeWarning, samplev1alpha1.ReasonStatusPruned, message)
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
	return ok && contract.EqualIgnoringTransitionTimes(prev, status)
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
