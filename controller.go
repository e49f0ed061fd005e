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
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/eventrecorder"
	"github.com/kube-samples/sample-controller/pkg/expectations"
	"github.com/kube-samples/sample-controller/pkg/foocache"
	"github.com/kube-samples/sample-controller/pkg/freshfirst"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	samplescheme "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/scheme"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions/samplecontroller/v1beta1"
	listers "github.com/kube-samples/sample-controller/pkg/generated/listers/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// Upstream's sample-controller, with each refinement production needed as one
// call into a package that says why (docs/controller-client-go.md, "Production
// lessons"). writes.go has upstream's steps for each object a Foo owns (read
// from the cache, create, refuse, repair), each a call into pkg/owned, and
// the status write.

// shutdownGracePeriod is how long, once shutdown begins, workers may finish
// the Foo in hand, and then events be written.
const shutdownGracePeriod = 5 * time.Second

// Controller reconciles Foos with the Deployments they ask for.
type Controller struct {
	kubeclientset   kubernetes.Interface
	sampleclientset clientset.Interface

	ownedObjects []ownedObjects // each kind a Foo owns (desired.Registrations) and its cache
	foosLister   listers.FooLister
	foosIndexer  cache.Indexer
	foosSynced   cache.InformerSynced
	informers    []cache.SharedIndexInformer // the Foo informer and each owned kind's (RunInformers)

	workqueue *freshfirst.Queue // the keys of Foos to sync, fresh changes first

	expectations expectations.Foos // what the controller knows of each Foo that its cache does not show yet

	recorder eventrecorder.Interface // events about Foos; tests record them in memory

	namespace string     // the one namespace the informers watch; "" for all
	fence     writeFence // if set, holds workers back while the Lease is overdue
	syncs     syncLimit  // if set, the replica's syncs at once, which its shards share
}

// ownedObjects are the objects of one kind a Foo owns: the registration whose steps writes.go calls, and its
// informer's cache, which holds each as its owned.Object (read it through the registration's Get).
type ownedObjects struct {
	owned.Registered[*samplev1beta1.Foo]
	indexer cache.Indexer
	synced  cache.InformerSynced
}

// Config is what a Controller needs besides its clients and informers.
type Config struct {
	// Namespace is the one namespace the informers were built to watch, "" for all. It must be theirs: a
	// replica taking over lists the Foos of this namespace (pkg/expectations), which a namespaced Role allows only there.
	Namespace string
	// Fence, when leader election is on, is the Lease's write fence (pkg/replicas): workers wait at it while the
	// Lease is overdue. Nil without leader election: nothing to wait for.
	Fence writeFence
	// Syncs, when sharded, bounds the syncs of every shard a replica holds together (pkg/replicas' Syncs): a
	// worker waits for room before it syncs. Nil with one shard: the workers are the bound.
	Syncs syncLimit
	// Shards, when sharded, is how many shards the Foos are split into, this controller reconciling one: its
	// events hold that share of one replica's memory for events (pkg/eventrecorder), the Foos the correlator
	// remembers and the events waiting to be written. 0 with one shard.
	Shards int
	// WaitingEvents, when sharded, bounds the events waiting to be written of every shard a replica holds together,
	// each shard bringing its share. Nil with one shard.
	WaitingEvents *eventrecorder.WaitingEvents
}

// Events about Foos need the Foo types in client-go's scheme, added before any goroutine reads it (the webhook's
// recorder among them): a scheme written while read is a concurrent map write, a crash.
func init() {
	utilruntime.Must(samplescheme.AddToScheme(scheme.Scheme))
}

// writeFence says when this replica may write (pkg/replicas' Fence).
type writeFence interface {
	WaitOpen(ctx context.Context) error
}

// syncLimit bounds the syncs running at once (pkg/replicas' Syncs).
type syncLimit interface {
	Acquire(ctx context.Context) error
	Release()
}

// NewController returns a controller fed by the given informers, ready to Run, called before they start: it sets
// what the Foo cache keeps (foocache.Transform). ownedInformers are the kinds a Foo owns with their informers
// (desired.NewOwnedInformers of desired.Registrations), the Deployment's among them.
func NewController(ctx context.Context, kubeclientset kubernetes.Interface, sampleclientset clientset.Interface,
	ownedInformers []desired.OwnedInformer, fooInformer informers.FooInformer, config Config,
) (*Controller, error) {
	controller := &Controller{
		kubeclientset:   kubeclientset,
		sampleclientset: sampleclientset,
		foosLister:      fooInformer.Lister(),
		foosIndexer:     fooInformer.Informer().GetIndexer(),
		foosSynced:      fooInformer.Informer().HasSynced,
		workqueue:       freshfirst.New(),
		namespace:       config.Namespace,
		fence:           config.Fence,
		syncs:           config.Syncs,
		informers:       []cache.SharedIndexInformer{fooInformer.Informer()},
	}
	if err := fooInformer.Informer().SetTransform(foocache.Transform); err != nil {
		return nil, err
	}
	if err := fooInformer.Informer().AddIndexers(foocache.Indexers()); err != nil {
		return nil, err
	}

	klog.FromContext(ctx).Info("Setting up event handlers")
	if _, err := fooInformer.Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: controller.onFooAdd, UpdateFunc: controller.onFooUpdate, DeleteFunc: controller.onFooDelete,
	}); err != nil {
		return nil, err
	}
	for _, o := range ownedInformers {
		if _, err := o.Informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: controller.onOwnedAdd, UpdateFunc: controller.onOwnedUpdate, DeleteFunc: controller.onOwnedDelete,
		}); err != nil {
			return nil, err
		}
		controller.ownedObjects = append(controller.ownedObjects,
			ownedObjects{o.Registered, o.Informer.GetIndexer(), o.Informer.HasSynced})
		controller.informers = append(controller.informers, o.Informer)
	}
	// Last, once nothing can fail: the recorder's broadcasters run, and hold room in the replica's backlog, until
	// Run shuts it down.
	controller.recorder = eventrecorder.New(ctx, kubeclientset.CoreV1(), scheme.Scheme, samplecontroller.ControllerName,
		config.Shards, config.WaitingEvents)
	return controller, nil
}

// RunInformers runs the informers the controller was built with until ctx
// ends, and returns once they have stopped. Upstream's main starts its
// informer factories; here the controller's informers start and stop with
// the work it is given (pkg/replicas: every Foo, or a shard held).
func (c *Controller) RunInformers(ctx context.Context) {
	var wg sync.WaitGroup
	for _, informer := range c.informers {
		wg.Go(func() { informer.RunWithContext(ctx) })
	}
	wg.Wait()
}

// Run waits for the caches to sync, then runs workers until ctx ends; then
// the workers finish the Foo in hand and the events recorded are written.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.recorder.Shutdown(ctx, shutdownGracePeriod)
	defer c.workqueue.ShutDown()
	logger := klog.FromContext(ctx)

	logger.Info("Starting Foo controller")
	// Caches synced before this replica led are a standby's, maybe behind.
	wasStandby := c.HasSynced()
	logger.Info("Waiting for informer caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.CachesSynced()...); !ok {
		if ctx.Err() != nil {
			return nil // asked to stop before the caches synced
		}
		return errors.New("failed to wait for caches to sync")
	}
	if wasStandby {
		err := c.expectations.RememberChangedWhileStandby(ctx, c.foosIndexer,
			c.sampleclientset.SamplecontrollerV1beta1().Foos(c.namespace))
		if err != nil {
			// Not fatal: a Foo deleted meanwhile costs one create, one
			// changed meanwhile a write undone when the watch catches up.
			utilruntime.HandleErrorWithContext(ctx, err, "Could not check the Foo cache against the API server")
		}
	}

	// Syncs outlive ctx by shutdownGracePeriod: a worker finishes its Foo.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(shutdownGracePeriod, cancelWork) })()

	logger.Info("Starting workers", "count", workers)
	var wg sync.WaitGroup
	wg.Go(func() { c.workqueue.FeedBacklog(ctx) })
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, func(context.Context) { c.runWorker(workCtx) }, time.Second) })
	}
	logger.Info("Started workers")

	<-ctx.Done()
	logger.Info("Shutting down workers")
	c.workqueue.ShutDown()
	wg.Wait()
	logger.Info("Workers stopped")
	return nil
}

// HasSynced reports whether every informer cache holds a full list.
func (c *Controller) HasSynced() bool {
	return !slices.ContainsFunc(c.CachesSynced(), func(synced cache.InformerSynced) bool { return !synced() })
}

// CachesSynced are the informers' HasSynced: the Foo cache's, then each owned kind's.
func (c *Controller) CachesSynced() []cache.InformerSynced {
	synced := append(make([]cache.InformerSynced, 0, 1+len(c.ownedObjects)), c.foosSynced)
	for _, objects := range c.ownedObjects {
		synced = append(synced, objects.synced)
	}
	return synced
}

// runWorker processes work items until the queue shuts down, which hands
// out no key once shutdown began (freshfirst.Queue.Get).
func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem takes one key off the queue and syncs it. A failed sync
// is queued again with backoff; a successful one resets the backoff.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	objRef, shutdown := c.workqueue.Get()
	if shutdown {
		return false
	}
	// Done lets the queue hand this key out again.
	defer c.workqueue.Done(objRef)
	// Wait while the leader's Lease is overdue; on shutdown, stop.
	if c.fence != nil && c.fence.WaitOpen(ctx) != nil {
		return false
	}
	// Wait while the replica's other shards use every sync it may run.
	if c.syncs != nil {
		if c.syncs.Acquire(ctx) != nil {
			return false
		}
		defer c.syncs.Release()
	}

	start := time.Now()
	err := c.syncHandler(ctx, objRef)
	switch metrics.ObserveSync(err, time.Since(start)) {
	case metrics.SyncSucceeded, metrics.SyncDeferred:
		// Deferred, the cache was behind the API server: the watch event
		// that brings the newer Foo queues it again.
		c.workqueue.Forget(objRef)
		return true
	case metrics.SyncConflict:
		// A stale cache, not a failure: retry once the watch caught up.
		klog.FromContext(ctx).V(4).Info("Stale cache, retrying", "foo", objRef, "err", err)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "Error syncing; requeuing for later retry", "objectReference", objRef)
	}
	c.workqueue.AddRateLimited(objRef)
	return true
}

// syncHandler brings the Deployment of one Foo in line with the Foo, and the
// Foo's status in line with what it observed. It reads the caches and writes
// only what differs: a Foo already right costs no API call. What needs the
// user to act (an invalid spec, a taken name, a refused write) is a
// *desired.Problem, reported on the Foo and, if retrying can help, retried.
// A Foo being deleted is left to the garbage collector: no write at all.
func (c *Controller) syncHandler(ctx context.Context, objectRef cache.ObjectName) error {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "foo", objectRef)
	ctx = klog.NewContext(ctx, logger)

	foo, err := c.foosLister.Foos(objectRef.Namespace).Get(objectRef.Name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("Foo no longer exists")
		return nil
	}
	if err != nil {
		return err
	}
	if c.expectations.Deleted.Has(foo.UID) {
		logger.V(4).Info("Foo deleted, the cache has not shown it yet")
		return nil
	}
	if c.expectations.Outdated.CacheIsBehind(foo) {
		logger.V(4).Info("Foo changed before this replica took over, the cache has not shown it yet")
		return expectations.ErrCacheOutdated
	}
	if foo.DeletionTimestamp != nil {
		// The garbage collector deletes what the Foo owns, finalizers hold it
		// for others' clean-up: a Deployment created or repaired now is one the
		// collector deleted, or one that outlives its collection. No status
		// either, as the DaemonSet controller writes none for a DaemonSet being
		// deleted: it would describe a teardown, a write per Deployment event.
		logger.V(4).Info("Foo being deleted, leaving it to the garbage collector")
		return nil
	}

	deployment, err := c.syncOwned(ctx, foo)
	var problem *desired.Problem
	if errors.As(err, &problem) {
		return c.reportProblem(ctx, foo, problem)
	}
	if err != nil {
		return err
	}
	_, err = c.updateFooStatus(ctx, foo, desired.StatusFor(foo, deployment, desired.ReadyCondition(foo, deployment)))
	return err
}

// enqueueFoo queues a Foo's key, ahead of the backlog when fresh: a change a
// user waits for. A worker reads the Foo from the cache when it gets to it.
func (c *Controller) enqueueFoo(obj interface{}, fresh bool) {
	if objectRef, err := cache.ObjectToName(obj); err != nil {
		utilruntime.HandleError(err)
	} else if fresh {
		c.workqueue.Add(objectRef)
	} else {
		c.workqueue.AddToBacklog(objectRef)
	}
}

// A change queues its Foo; the initial lists and resyncs go to the backlog.
func (c *Controller) onFooAdd(obj interface{}, initial bool) { c.enqueueFoo(obj, !initial) }

// onFooUpdate queues fresh a new generation, the echo of a status write a
// sync gave up waiting for, and a Foo a takeover found outdated in the cache
// (pkg/expectations); resyncs and echoes, not. The start of a deletion is a
// new generation: the API server increments a custom resource's generation
// when it sets metadata.deletionTimestamp.
func (c *Controller) onFooUpdate(oldObj, newObj interface{}) {
	oldFoo, newFoo := oldObj.(*samplev1beta1.Foo), newObj.(*samplev1beta1.Foo)
	// Both are told: each drops the version the cache has moved past.
	echoAwaited := c.expectations.StatusWrites.CacheCaughtUp(newFoo)
	outdated := c.expectations.Outdated.CacheCaughtUp(newFoo)
	c.enqueueFoo(newFoo, echoAwaited || outdated || oldFoo.Generation != newFoo.Generation)
}

// onFooDelete forgets the Foo; the garbage collector deletes its Deployment.
func (c *Controller) onFooDelete(obj interface{}) {
	if object, ok := objectFromTombstone(obj); ok {
		c.expectations.Forget(object.GetUID())
	}
}

func (c *Controller) onOwnedAdd(obj interface{}, initial bool) { c.handleObject(obj, !initial) }

func (c *Controller) onOwnedUpdate(oldObj, newObj interface{}) {
	// A resync delivers the same object; the Foo's own resync covers it.
	if oldObj.(metav1.Object).GetResourceVersion() != newObj.(metav1.Object).GetResourceVersion() {
		c.handleObject(newObj, true)
	}
}

// onOwnedDelete queues the Foo that controlled the deleted object, and every
// Foo asking for its name: one refused the name can have it now.
func (c *Controller) onOwnedDelete(obj interface{}) {
	c.handleObject(obj, true)
	if object, ok := objectFromTombstone(obj); ok {
		waiting, err := foocache.AskingFor(c.foosIndexer, object)
		utilruntime.HandleError(err)
		for _, foo := range waiting {
			c.enqueueFoo(foo, true)
		}
	}
}

// handleObject queues the Foo controlling obj, an object of a kind the Foo
// owns, if any, so drift is repaired and status follows the rollout. obj may
// be a tombstone.
func (c *Controller) handleObject(obj interface{}, fresh bool) {
	object, ok := objectFromTombstone(obj)
	if !ok {
		return
	}
	ref := owned.ControllerRef(object, samplecontroller.FooGroupKind)
	if ref == nil {
		return
	}
	foo, err := c.foosLister.Foos(object.GetNamespace()).Get(ref.Name)
	if err != nil || foo.UID != ref.UID {
		// The Foo is gone (or replaced): the garbage collector's business.
		klog.Background().V(4).Info("Ignoring an object whose Foo is gone", "object", klog.KObj(object), "foo", ref.Name)
		return
	}
	c.enqueueFoo(foo, fresh)
}

// objectFromTombstone returns obj, or the last state of a missed delete.
func objectFromTombstone(obj interface{}) (metav1.Object, bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	object, ok := obj.(metav1.Object)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("error decoding object, invalid type %T", obj))
	}
	return object, ok
}
