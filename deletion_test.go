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
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
)

// A Foo being deleted (foreground, held by the garbage collector's finalizer
// and another's) is left to the garbage collector: whatever its Deployment
// and its status, its sync makes no API call at all, records no event, and
// succeeds. Each case is one a Foo not being deleted would act on.
func TestFooBeingDeletedIsLeftToTheGarbageCollector(t *testing.T) {
	for name, tc := range map[string]struct {
		// edit makes the Foo and its cached Deployment (nil: none) the case.
		edit func(foo *samplev1beta1.Foo, d **appsv1.Deployment)
		// gcDeleted: the sync follows the deletion of the Foo's Deployment,
		// as its event handler queues it, rather than a direct sync.
		gcDeleted bool
	}{
		"Deployment deleted by the garbage collector": {
			func(_ *samplev1beta1.Foo, d **appsv1.Deployment) { *d = nil }, true},
		"Deployment gone": {
			func(_ *samplev1beta1.Foo, d **appsv1.Deployment) { *d = nil }, false},
		"Deployment drifted": {func(_ *samplev1beta1.Foo, d **appsv1.Deployment) {
			(*d).Spec.Replicas = ptr.To[int32](1)
			(*d).Spec.Template.Spec.Containers[0].Image = "busybox"
		}, false},
		"Deployment under the old name": {
			func(foo *samplev1beta1.Foo, _ **appsv1.Deployment) { foo.Spec.Deployment.Name = "renamed" }, false},
		"status behind the Deployment": {
			func(_ *samplev1beta1.Foo, d **appsv1.Deployment) { (*d).Status.AvailableReplicas = 1 }, false},
	} {
		t.Run(name, func(t *testing.T) {
			foo := testfixtures.NewFoo("test", 2)
			owned := testfixtures.OwnedDeployment(t, foo)
			foo = testfixtures.WithSyncedStatus(t, foo, owned)
			// As the API server serves it once deleted: the generation
			// incremented, its status not yet observing it.
			foo.DeletionTimestamp = ptr.To(metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			foo.Finalizers = []string{"example.com/hold", metav1.FinalizerDeleteDependents}
			foo.Generation++
			deleted := desired.CacheDeployment(owned)
			d := owned.DeepCopy()
			tc.edit(foo, &d)

			f := newFixture(t)
			f.foos = append(f.foos, foo)
			_, ctx := ktesting.NewTestContext(t)
			f.newController(ctx)
			if d != nil {
				f.addToCache(deploymentCache(f.controller), desired.CacheDeployment(d))
			}

			if tc.gcDeleted {
				f.controller.onOwnedDelete(deleted)
				if n := f.controller.workqueue.Len(); n != 1 {
					t.Fatalf("the Deployment's deletion queued %d Foos, want 1 (the Foo being deleted)", n)
				}
				f.client.ClearActions()
				f.kubeclient.ClearActions()
				f.controller.processNextWorkItem(ctx)
				if n := f.controller.workqueue.NumRequeues(cache.MetaObjectToName(foo)); n != 0 {
					t.Errorf("the Foo being deleted was requeued %d times, want 0", n)
				}
			} else if err := f.sync(foo); err != nil {
				t.Fatalf("sync: %v, want success", err)
			}
			// Every call, reads included: there is nothing to look up either.
			f.expectActions("kube", f.kubeclient.Actions())
			f.expectActions("foo", f.client.Actions())
			f.expectEvents()
		})
	}
}
