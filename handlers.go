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
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/contract"
)

// Informer events come in here and leave as Foo keys on the queue. Each
// handler answers one question: which Foos does this event concern?

// addEventHandlers registers the controller's indexes and event handlers on
// the two informers.
func (c *Controller) addEventHandlers(ctx context.Context, fooInformer, deploymentInformer cache.SharedIndexInformer) error {
	if err := fooInformer.AddIndexers(contract.FooIndexers()); err != nil {
		return err
	}

	klog.FromContext(ctx).Info("Setting up event handlers")
	if _, err := fooInformer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    c.onFooAdd,
		UpdateFunc: c.onFooUpdate,
		DeleteFunc: c.onFooDelete,
	}); err != nil {
		return err
	}
	_, err := deploymentInformer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    c.onDeploymentAdd,
		UpdateFunc: c.onDeploymentUpdate,
		DeleteFunc: c.onDeploymentDelete,
	})
	return err
}

// Every change to a Foo, and every periodic resync, queues it. A resync costs
// no API writes: a sync writes only what differs. What a user waits for (a
// Foo created, or its spec changed: a new generation) goes ahead of the
// backlog: the initial list, resyncs, and the echoes of status writes.

func (c *Controller) onFooAdd(obj interface{}, isInInitialList bool) {
	if isInInitialList {
		c.enqueueFooInBacklog(obj)
		return
	}
	c.enqueueFoo(obj)
}

// A status echo goes ahead of the backlog too when a sync gave up waiting for
// it (see statusWriteExpectations): that sync was a change a user waits for.
func (c *Controller) onFooUpdate(old, new interface{}) {
	newFoo := new.(*samplev1alpha1.Foo)
	if c.statusWrites.cacheCaughtUp(newFoo) || old.(*samplev1alpha1.Foo).Generation != newFoo.Generation {
		c.enqueueFoo(new)
		return
	}
	c.enqueueFooInBacklog(new)
}

// A change to a Deployment queues the Foo that controls it, so drift is
// repaired and status follows the rollout, ahead of the backlog; the initial
// list of Deployments goes to the backlog. The handlers work out the Foo from
// the Deployment's controller reference; Deployments controlled by anything
// else are ignored.

func (c *Controller) onDeploymentAdd(obj interface{}, isInInitialList bool) {
	if !isInInitialList {
		c.enqueueControllingFoo(obj)
	} else if foo := c.controllingFoo(obj); foo != nil {
		c.enqueueFooInBacklog(foo)
	}
}

func (c *Controller) onDeploymentUpdate(old, new interface{}) {
	if old.(*contract.CachedDeployment).ResourceVersion == new.(*contract.CachedDeployment).ResourceVersion {
		// A periodic resync delivers the same object again; the Foo
		// handler's resync already covers it.
		return
	}
	c.enqueueControllingFoo(new)
}

// onFooDelete forgets what the controller remembered about a deleted
// Foo. Its Deployment is the garbage collector's to delete.
func (c *Controller) onFooDelete(obj interface{}) {
	if object, ok := objectFromTombstone(obj); ok {
		c.statusWrites.forget(object.GetUID())
		c.prunedStatus.forget(object.GetUID())
		c.deleted.forget(object.GetUID())
	}
}

// enqueueControllingFoo queues the Foo that controls the given Deployment, if
// any. The object may be a cache.DeletedFinalStateUnknown tombstone, which
// the informer hands out when it missed a delete while disconnected.
func (c *Controller) enqueueControllingFoo(obj interface{}) {
	if foo := c.controllingFoo(obj); foo != nil {
		c.enqueueFoo(foo)
	}
}

// controllingFoo returns the cached Foo that controls the Deployment, or nil.
func (c *Controller) controllingFoo(obj interface{}) *samplev1alpha1.Foo {
	object, ok := objectFromTombstone(obj)
	if !ok {
		return nil
	}
	ref := contract.ControllerRef(object)
	if ref == nil {
		return nil
	}
	foo, err := c.foosLister.Foos(object.GetNamespace()).Get(ref.Name)
	if err != nil || foo.UID != ref.UID {
		// The controlling Foo is gone (or was replaced by a namesake); the
		// garbage collector takes care of its Deployment.
		klog.Background().V(4).Info("Ignoring Deployment whose Foo is gone", "deployment", klog.KObj(object), "foo", ref.Name)
		return nil
	}
	return foo
}

// onDeploymentDelete queues the Foo that controlled the deleted
// Deployment, and every Foo asking for its name: one that was refused the
// name can have it now. Only managed Deployments are watched, so a Foo
// refused a name by an unmanaged Deployment learns that it was freed from
// its own retries, with backoff.
func (c *Controller) onDeploymentDelete(obj interface{}) {
	c.enqueueControllingFoo(obj)
	object, ok := objectFromTombstone(obj)
	if !ok {
		return
	}
	waiting, err := c.foosIndexer.ByIndex(contract.FooByDeploymentName, object.GetNamespace()+"/"+object.GetName())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, foo := range waiting {
		c.enqueueFoo(foo)
	}
}

// objectFromTombstone returns the object itself, or the last known state of
// an object whose delete the informer missed.
func objectFromTombstone(obj interface{}) (metav1.Object, bool) {
	if object, ok := obj.(metav1.Object); ok {
		return object, true
	}
	tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("error decoding object, invalid type %T", obj))
		return nil, false
	}
	object, ok := tombstone.Obj.(metav1.Object)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("error decoding object tombstone, invalid type %T", tombstone.Obj))
		return nil, false
	}
	return object, true
}
