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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// Once the API serves a second version, the Deployments made before name
// the first one in their owner reference, and those made after may name
// either: a Foo is its group and kind with its UID, in any version.

// queued drains the controller's queue and returns the names it held.
func queued(c *Controller) []string {
	var got []string
	for c.workqueue.Len() > 0 {
		key, _ := c.workqueue.Get()
		got = append(got, key.Name)
		c.workqueue.Done(key)
	}
	return got
}

func TestOwnerReferenceOfAnotherVersionIsTheFoos(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	d := testfixtures.OwnedDeployment(t, foo)
	d.OwnerReferences[0].APIVersion = samplecontroller.GroupName + "/v1"
	d.Spec.Replicas = ptr.To[int32](3) // scaled by hand
	f.foos = append(f.foos, testfixtures.WithSyncedStatus(t, foo, d))
	f.deployments = append(f.deployments, d)
	f.build()

	// Its events reach the Foo.
	f.controller.handleObject(desired.CacheDeployment(d), true)
	if got := queued(f.controller); strings.Join(got, ",") != "test" {
		t.Errorf("a Deployment event queued %v, want [test]", got)
	}
	// It is found among the Foo's Deployments, as a rename needs.
	controlled, err := deploymentCache(f.controller).ByIndex(owned.ByControllerUID, string(foo.UID))
	if err != nil || len(controlled) != 1 {
		t.Errorf("the Foo's Deployments by its UID: %d, %v; want 1", len(controlled), err)
	}
	// The hand edit is repaired: one apply, neither refused nor re-created.
	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites("patch deployments test-deployment application/apply-patch+yaml")
	f.expectFooWrites()
	f.expectEvents("Normal Synced Updated Deployment test-deployment: .spec.replicas")
}

func TestOwnerReferenceOfAnotherFooIsNotTheFoos(t *testing.T) {
	for name, ref := range map[string]metav1.OwnerReference{
		"same group and kind, another UID": {
			APIVersion: samplecontroller.GroupName + "/v1", Kind: samplecontroller.FooKind,
			Name: "test", UID: "an-older-foo", Controller: ptr.To(true),
		},
		"same kind and UID, another group": {
			APIVersion: "another.example.org/v1beta1", Kind: samplecontroller.FooKind,
			Name: "test", UID: testfixtures.NewFoo("test", 1).UID, Controller: ptr.To(true),
		},
		"same group and UID, another kind": {
			APIVersion: samplecontroller.GroupName + "/v1beta1", Kind: "Bar",
			Name: "test", UID: testfixtures.NewFoo("test", 1).UID, Controller: ptr.To(true),
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			foo := testfixtures.NewFoo("test", 1)
			d := testfixtures.OwnedDeployment(t, foo)
			d.OwnerReferences = []metav1.OwnerReference{ref}
			f.foos = append(f.foos, foo)
			f.deployments = append(f.deployments, d)
			_, ctx := ktesting.NewTestContext(t)
			f.newController(ctx)

			f.controller.handleObject(desired.CacheDeployment(d), true)
			if got := queued(f.controller); len(got) != 0 {
				t.Errorf("a Deployment event queued %v, want none", got)
			}
			if err := f.sync(foo); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("sync error %v, want one naming the existing Deployment", err)
			}
			f.expectKubeWrites()
			f.expectFooWrites("patch foos/status test application/json-patch+json")
		})
	}
}
