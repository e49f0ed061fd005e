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
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
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
	"github.com/kube-samples/sample-controller/pkg/foostatus"
	"github.com/kube-samples/sample-controller/pkg/freshfirst"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	samplescheme "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/scheme"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions/samplecontroller/v1beta1"
	listers "github.com/kube-samples/sample-controller/pkg/generated/listers/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// Upstream's sample-controller, each refinement production needed a call into a package that says why
// (docs/controller-client-go.md, "Production lessons").
const (
	// shutdownGracePeriod is how long, once shutdown begins, workers may finish the Foo in hand, and then events be
	// written.
	shutdownGracePeriod = 5 * time.Second
	// fieldManager signs every write: server-side apply's manager of the fields the controller owns.
	fieldManager = samplecontroller.ControllerName
)

// Controller reconciles Foos with the Deployments they ask for.
type Controller struct {
	kubeclientset   kubernetes.Interface
	sampleclientset clientset.Interface

	deploymentsLister desired.DeploymentLister // each Deployment as the cache keeps it (desired.CachedDeployment)
	deploymentsSynced cache.InformerSynced
	foosLister        listers.FooLister
	foosIndexer       cache.Indexer
	foosSynced        cache.InformerSynced
	informers         []cache.SharedIndexInformer // the Foo and Deployment informers (RunInformers)

	workqueue    *freshfirst.Queue       // the keys of Foos to sync, fresh changes first
	expectations expectations.Foos       // what the controller knows of each Foo that its cache does not show yet
	recorder     eventrecorder.Interface // events about Foos; tests record them in memory
	status       *foostatus.Writer       // writes the status of Foos, and reports their problems
	config       Config
}

// Config is what a Controller needs besides its clients and informers.
type Config struct {
	// Namespace is the one namespace the informers were built to watch, "" for all. It must be theirs: a replica
	// taking over lists the Foos of this namespace (pkg/expectations), which a namespaced Role allows only there.
	Namespace string
	// Admission says when a worker may sync (pkg/replicas' Scope.Admit): while the Lease that gives the work is
	// fresh, and, sharded, once the replica has room for one more sync of all its shards'. Nil: at once.
	Admission interface {
		Admit(ctx context.Context) (release func(), err error)
	}
	// Shards, when sharded, is how many shards the Foos are split into, one of them this controller's, and
	// WaitingEvents the events waiting to be written of every shard a replica holds: each shard's events hold its
	// share of one replica's memory for events (pkg/eventrecorder). 0 and nil with one shard.
	Shards        int
	WaitingEvents *eventrecorder.WaitingEvents
}

// Events about Foos need the Foo types in client-go's scheme, added before any goroutine reads it (the webhook's
// recorder among them): a scheme written while read is a concurrent map write, a crash.
func init() {
	utilruntime.Must(samplescheme.AddToScheme(scheme.Scheme))
}

// NewController returns a controller fed by the given informers, ready to Run, called before they start: it sets what
// the Foo cache keeps (foocache.SetUp). deploymentInformer is desired.NewDeploymentInformer's.
func NewController(ctx context.Context, kubeclientset kubernetes.Interface, sampleclientset clientset.Interface,
	deploymentInformer cache.SharedIndexInformer, fooInformer informers.FooInformer, config Config,
) (*Controller, error) {
	controller := &Controller{
		kubeclientset:     kubeclientset,
		sampleclientset:   sampleclientset,
		deploymentsLister: desired.NewDeploymentLister(deploymentInformer.GetIndexer()),
		deploymentsSynced: deploymentInformer.HasSynced,
		foosLister:        fooInformer.Lister(),
		foosIndexer:       fooInformer.Informer().GetIndexer(),
		foosSynced:        fooInformer.Informer().HasSynced,
		workqueue:         freshfirst.New(),
		config:            config,
		informers:         []cache.SharedIndexInformer{fooInformer.Informer(), deploymentInformer},
	}
	if err := foocache.SetUp(fooInformer.Informer()); err != nil {
		return nil, err
	}

	klog.FromContext(ctx).Info("Setting up event handlers")
	if _, err := fooInformer.Informer().AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: controller.onFooAdd, UpdateFunc: controller.onFooUpdate, DeleteFunc: controller.onFooDelete,
	}); err != nil {
		return nil, err
	}
	if _, err := deploymentInformer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: controller.onOwnedAdd, UpdateFunc: controller.onOwnedUpdate, DeleteFunc: controller.onOwnedDelete,
	}); err != nil {
		return nil, err
	}
	// Last, once nothing can fail: the recorder's broadcasters run, and hold room in the replica's backlog, until Run
	// shuts it down.
	controller.recorder = eventrecorder.New(ctx, kubeclientset.CoreV1(), scheme.Scheme, samplecontroller.ControllerName,
		config.Shards, config.WaitingEvents)
	controller.status = &foostatus.Writer{Client: sampleclientset.SamplecontrollerV1beta1(),
		Expectations: &controller.expectations, Recorder: controller.recorder}
	return controller, nil
}

// RunInformers runs the controller's informers until ctx ends, and returns once they have stopped: they start and stop
// with the work it is given (pkg/replicas: every Foo, or a shard held), where upstream's main starts its factories.
func (c *Controller) RunInformers(ctx context.Context) {
	var wg sync.WaitGroup
	for _, informer := range c.informers {
		wg.Go(func() { informer.RunWithContext(ctx) })
	}
	wg.Wait()
}

// Run waits for the caches to sync, then runs workers until ctx ends; then the workers finish the Foo in hand and the
// events recorded are written.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.recorder.Shutdown(ctx, shutdownGracePeriod)
	defer c.workqueue.ShutDown()
	logger := klog.FromContext(ctx)

	logger.Info("Starting Foo controller")
	// Caches synced before this replica led are a standby's, maybe behind: checked against the API server once synced.
	wasStandby := !slices.ContainsFunc(c.CachesSynced(), func(synced cache.InformerSynced) bool { return !synced() })
	logger.Info("Waiting for informer caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.CachesSynced()...); !ok {
		if ctx.Err() != nil {
			return nil // asked to stop before the caches synced
		}
		return errors.New("failed to wait for caches to sync")
	}
	if wasStandby {
		c.expectations.RememberChangedWhileStandby(ctx, c.foosIndexer,
			c.sampleclientset.SamplecontrollerV1beta1().Foos(c.config.Namespace))
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

// CachesSynced are the informers' HasSynced: the Foo cache's, then the Deployment cache's.
func (c *Controller) CachesSynced() []cache.InformerSynced {
	return []cache.InformerSynced{c.foosSynced, c.deploymentsSynced}
}

// CachedFoos are the Foos of selector in the Foo cache (metrics.Caches).
func (c *Controller) CachedFoos(selector labels.Selector) ([]*samplev1beta1.Foo, error) {
	return c.foosLister.List(selector)
}

// OwnedCached counts the objects of each kind a Foo owns in the caches, by resource (metrics.Caches).
func (c *Controller) OwnedCached() map[string]int {
	return map[string]int{desired.DeploymentsResource.Resource: c.deploymentsLister.Len()}
}

// runWorker processes work items until the queue shuts down (it hands out no key once shutdown began).
func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem takes one key off the queue and syncs it. A failed sync is queued again with backoff; a
// successful one resets the backoff.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	objRef, shutdown := c.workqueue.Get()
	if shutdown {
		return false
	}
	defer c.workqueue.Done(objRef)
	// Wait while the Lease is overdue, or the replica's other shards use every sync it may run; on shutdown, stop.
	if c.config.Admission != nil {
		release, err := c.config.Admission.Admit(ctx)
		if err != nil {
			return false
		}
		defer release()
	}

	start := time.Now()
	err := c.syncHandler(ctx, objRef)
	switch metrics.ObserveSync(err, time.Since(start)) {
	case metrics.SyncSucceeded, metrics.SyncDeferred:
		// Deferred, the cache was behind the API server: the watch event that brings the newer Foo queues it again.
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

// syncHandler brings the Deployment of one Foo in line with the Foo, and the Foo's status in line with what it
// observed. It reads the caches and writes only what differs: a Foo already right costs no API call. What needs the
// user to act (an invalid spec, a taken name, a refused write) is a *desired.Problem, reported on the Foo and, if
// retrying can help, retried. A Foo being deleted is left to the garbage collector: no write at all.
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
		return nil // deleted, the cache has not shown it yet
	}
	if c.expectations.Outdated.CacheIsBehind(foo) {
		return expectations.ErrCacheOutdated // changed before this replica took over, the cache has not shown it yet
	}
	if foo.DeletionTimestamp != nil {
		// A Deployment created or repaired now is one the collector deleted, or one that outlives the Foo. No
		// status either, as for a DaemonSet being deleted: it would describe a teardown, a write per event.
		logger.V(4).Info("Foo being deleted, leaving it to the garbage collector")
		return nil
	}

	deployment, err := c.syncDeployment(ctx, foo)
	var problem *desired.Problem
	if errors.As(err, &problem) {
		return c.status.ReportProblem(ctx, foo, problem)
	}
	if err != nil {
		return err
	}
	_, err = c.status.Update(ctx, foo, desired.StatusFor(foo, deployment, desired.ReadyCondition(foo, deployment)))
	return err
}

// syncDeployment brings the Deployment a Foo asks for in line with it, in upstream's steps: read it from the cache,
// create it if missing, refuse one the Foo does not control, repair what drifted, each write with a Normal event;
// what the user must address is a *desired.Problem. It returns the Deployment as last seen, which the status reports.
// Owning another kind is another such function beside this one (docs/recipes/own-a-service.patch).
func (c *Controller) syncDeployment(ctx context.Context, foo *samplev1beta1.Foo) (*desired.CachedDeployment, error) {
	// The CRD's schema refuses an invalid spec at admission, unless it was installed without it.
	if err := desired.CheckSpec(&foo.Spec); err != nil {
		return nil, err
	}
	want := desired.DeploymentFor(foo)
	deployment, err := c.deploymentsLister.Deployments(foo.Namespace).Get(*want.Name)
	if apierrors.IsNotFound(err) {
		deployment, err = c.createDeployment(ctx, foo)
	}
	if err != nil {
		return nil, err
	}
	// Not controlled by this Foo: never modified, reported on the Foo (upstream: ErrResourceExists).
	if !owned.ControlledBy(deployment, foo, samplecontroller.FooGroupKind) {
		return nil, desired.NameTakenProblem("Deployment", deployment)
	}
	if deployment, err = c.repairDeployment(ctx, foo, want, deployment); err != nil {
		return nil, err
	}
	// Only now, so that a rename never leaves the Foo without one: delete those under its old name.
	return deployment, c.deleteStaleDeployments(ctx, foo, *want.Name)
}

// createDeployment creates the Deployment foo asks for, missing from the cache. If a Deployment the cache does not see
// has its name (one without the managed-by label), or the create is refused (a quota at its limit refuses a second
// create of one the cache has not shown yet), it returns the API server's copy, whose controller the caller checks.
func (c *Controller) createDeployment(ctx context.Context, foo *samplev1beta1.Foo) (*desired.CachedDeployment, error) {
	deployments := c.kubeclientset.AppsV1().Deployments(foo.Namespace)
	newDeployment := desired.NewDeployment(foo)
	created, err := deployments.Create(ctx, newDeployment, metav1.CreateOptions{FieldManager: fieldManager})
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Created Deployment", "deployment", klog.KObj(created))
		c.recorder.Eventf(foo, corev1.EventTypeNormal, samplecontroller.ReasonSynced, "Created Deployment %s", created.Name)
		return desired.CacheDeployment(created), nil
	}
	refused := owned.IsRefused(err)
	if !refused && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	served, getErr := deployments.Get(ctx, newDeployment.Name, metav1.GetOptions{})
	if refused && apierrors.IsNotFound(getErr) {
		return nil, desired.RefusedProblem("create", "Deployment", newDeployment.Name, err)
	}
	if getErr != nil {
		return nil, getErr
	}
	return desired.CacheDeployment(served), nil
}

// repairDeployment applies the Deployment the Foo asks for where a field it owns drifted (upstream: an update where
// the replicas differ), and returns it as it then is; no API call when nothing drifted. Forced: the fields are the
// Foo's. Conditional on the cached resourceVersion: a Deployment changed since is answered 409, not undone.
func (c *Controller) repairDeployment(ctx context.Context, foo *samplev1beta1.Foo,
	want *appsv1ac.DeploymentApplyConfiguration, deployment *desired.CachedDeployment,
) (*desired.CachedDeployment, error) {
	drift, err := desired.DeploymentDrift(want, deployment)
	if err != nil || len(drift) == 0 {
		return deployment, err
	}
	deployments := c.kubeclientset.AppsV1().Deployments(foo.Namespace)
	if deployment.ManagedByUpdate { // as a create leaves them: handed to the apply first, once
		handed, err := owned.HandToApply(ctx, deployments, desired.DeploymentsResource, deployment.Name,
			deployment.ResourceVersion, fieldManager)
		if err != nil {
			return nil, err
		}
		deployment = desired.CacheDeployment(handed)
	}
	applied, err := deployments.Apply(ctx, want.WithResourceVersion(deployment.ResourceVersion),
		metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil {
		return nil, desired.Refused("update", "Deployment", deployment.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated Deployment", "deployment", klog.KObj(applied), "fields", drift)
	c.recorder.Eventf(foo, corev1.EventTypeNormal, samplecontroller.ReasonSynced, "Updated Deployment %s: %s",
		applied.Name, strings.Join(drift, ", "))
	return desired.CacheDeployment(applied), nil
}

// deleteStaleDeployments deletes the Deployments foo controls under another name than keep, as after the Foo changed
// the name it asks for; each with its UID as precondition: the very Deployment the cache saw, not a namesake.
func (c *Controller) deleteStaleDeployments(ctx context.Context, foo *samplev1beta1.Foo, keep string) error {
	controlled, err := c.deploymentsLister.ControlledBy(foo.UID)
	if err != nil {
		return err
	}
	for _, stale := range controlled {
		if stale.Name == keep {
			continue
		}
		err := c.kubeclientset.AppsV1().Deployments(stale.Namespace).Delete(ctx, stale.Name,
			metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(stale.UID))})
		if apierrors.IsNotFound(err) {
			continue // deleted already; the cache had not caught up
		}
		if err != nil {
			return desired.Refused("delete", "Deployment", stale.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Deleted stale Deployment", "deployment", klog.KObj(stale))
		c.recorder.Eventf(foo, corev1.EventTypeNormal, samplecontroller.ReasonSynced, "Deleted Deployment %s: replaced by %s",
			stale.Name, keep)
	}
	return nil
}

// enqueueFoo queues a Foo's key, ahead of the backlog when fresh: a change a user waits for. A worker reads the Foo
// from the cache when it gets to it.
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

// onFooUpdate queues fresh a new generation, the echo of a status write a sync gave up waiting for, and a Foo a
// takeover found outdated in the cache (pkg/expectations); resyncs and echoes, not. The start of a deletion is a new
// generation: the API server increments a custom resource's generation when it sets metadata.deletionTimestamp.
func (c *Controller) onFooUpdate(oldObj, newObj interface{}) {
	oldFoo, newFoo := oldObj.(*samplev1beta1.Foo), newObj.(*samplev1beta1.Foo)
	// Both are told: each drops the version the cache has moved past.
	echoAwaited := c.expectations.StatusWrites.CacheCaughtUp(newFoo)
	outdated := c.expectations.Outdated.CacheCaughtUp(newFoo)
	c.enqueueFoo(newFoo, echoAwaited || outdated || oldFoo.Generation != newFoo.Generation)
}

// onFooDelete forgets the Foo; the garbage collector deletes its Deployment.
func (c *Controller) onFooDelete(obj interface{}) {
	if object, ok := owned.ObjectOf(obj); ok {
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

// onOwnedDelete queues the Foo that controlled the deleted object, and every Foo asking for its name: one refused the
// name can have it now.
func (c *Controller) onOwnedDelete(obj interface{}) {
	c.handleObject(obj, true)
	if object, ok := owned.ObjectOf(obj); ok {
		waiting, err := foocache.AskingFor(c.foosIndexer, object)
		utilruntime.HandleError(err)
		for _, foo := range waiting {
			c.enqueueFoo(foo, true)
		}
	}
}

// handleObject queues the Foo controlling obj, an object of a kind the Foo owns, if any, so drift is repaired and
// status follows the rollout. obj may be a tombstone.
func (c *Controller) handleObject(obj interface{}, fresh bool) {
	object, ok := owned.ObjectOf(obj)
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
