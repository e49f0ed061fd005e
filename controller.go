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
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/contract"
	"github.com/kube-samples/sample-controller/pkg/eventrecorder"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	samplescheme "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/scheme"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions/samplecontroller/v1alpha1"
	listers "github.com/kube-samples/sample-controller/pkg/generated/listers/samplecontroller/v1alpha1"
)

// The Controller is spread over a few files, one concern each, read in this
// order:
//
//	controller.go    this file: the Controller, Run, and syncHandler, the
//	                 reconcile of one Foo
//	handlers.go      informer event handlers: which Foo an event concerns
//	queue.go         the workqueue: fresh changes ahead of the backlog,
//	                 workers, retries
//	deployment.go    the Foo's Deployment: create, repair, delete stale ones
//	status.go        the Foo's status, and the problems reported on it
//	expectations.go  the controller's own status writes the cache has not
//	                 shown yet
//	pkg/eventrecorder the events it records: Warnings never wait behind Normal ones
//	metrics.go       the controller's metrics
//
// What a Foo means (the Deployment it asks for, the status it should have,
// which specs are valid, what the caches keep) is pure functions in
// pkg/contract; main.go wires the Controller to clients, informers, the
// metrics and probe servers (pkg/serving) and leader election (pkg/leader).

// shutdownGracePeriod is how long workers may spend finishing the Foo in hand
// once shutdown begins; then their API calls are cancelled.
const shutdownGracePeriod = 5 * time.Second

// Controller reconciles Foos with the Deployments they ask for.
type Controller struct {
	kubeclientset   kubernetes.Interface
	sampleclientset clientset.Interface

	// The Deployment cache holds *contract.CachedDeployment objects, not
	// Deployments, so it is read through its indexer (cachedDeployment in
	// deployment.go), not through the typed lister.
	deploymentsIndexer cache.Indexer
	deploymentsSynced  cache.InformerSynced
	foosLister         listers.FooLister
	foosIndexer        cache.Indexer
	foosSynced         cache.InformerSynced

	// workqueue holds the keys of Foos to sync (see queue.go).
	workqueue *fooQueue

	// statusWrites are the expectations of the controller's own status
	// writes (expectations.go); prunedStatus remembers the last status the
	// API server pruned, per Foo UID (status.go).
	statusWrites statusWriteExpectations
	prunedStatus prunedStatusMemory
	// deleted are Foos the API server said are gone while the cache still
	// holds them (expectations.go).
	deleted deletedFoos

	// recorder records events; it is events but in tests
	// (pkg/eventrecorder: Warnings never wait behind Normal events).
	recorder record.EventRecorder
	events   *eventrecorder.Recorder

	// namespace is the one namespace the informers watch; "" for all.
	namespace string

	// fence, when set, holds the workers back while this replica may not
	// write: a leader whose Lease renewal is overdue (pkg/leader's Fence).
	fence writeFence
}

// writeFence says when this replica may write.
type writeFence interface {
	// WaitOpen returns once writes are allowed, or ctx's error once ctx ends.
	WaitOpen(ctx context.Context) error
}

// NewController returns a controller fed by the given informers. It must be
// called before the informers are started: it sets what their caches keep
// (contract.TrimForCache) and adds handlers and indexes.
func NewController(
	ctx context.Context,
	kubeclientset kubernetes.Interface,
	sampleclientset clientset.Interface,
	deploymentInformer cache.SharedIndexInformer,
	fooInformer informers.FooInformer,
) (*Controller, error) {
	// Let events about Foos be recorded: the event machinery needs the Foo
	// types in the scheme it encodes object references with.
	utilruntime.Must(samplescheme.AddToScheme(scheme.Scheme))
	events := eventrecorder.New(ctx, kubeclientset.CoreV1(), scheme.Scheme, samplev1alpha1.ControllerName)

	controller := &Controller{
		kubeclientset:      kubeclientset,
		sampleclientset:    sampleclientset,
		deploymentsIndexer: deploymentInformer.GetIndexer(),
		deploymentsSynced:  deploymentInformer.HasSynced,
		foosLister:         fooInformer.Lister(),
		foosIndexer:        fooInformer.Informer().GetIndexer(),
		foosSynced:         fooInformer.Informer().HasSynced,
		workqueue:          newFooQueue(),
		recorder:           events,
		events:             events,
	}
	if err := fooInformer.Informer().SetTransform(contract.TrimForCache); err != nil {
		return nil, err
	}
	if err := controller.addEventHandlers(ctx, fooInformer.Informer(), deploymentInformer); err != nil {
		return nil, err
	}
	return controller, nil
}

// Run waits for the informer caches to sync, then runs workers until ctx is
// cancelled. Then it stops taking work, lets the workers finish the Foo in
// hand and returns.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	// Last: the events of the syncs finished during shutdown are written.
	defer c.events.Shutdown(ctx, shutdownGracePeriod)
	defer c.workqueue.ShutDown()
	logger := klog.FromContext(ctx)

	logger.Info("Starting Foo controller")
	// Caches that synced before this replica led are a standby's: they may
	// have fallen behind since (see rememberFoosDeletedWhileStandby).
	wasStandby := c.HasSynced()
	logger.Info("Waiting for informer caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.deploymentsSynced, c.foosSynced); !ok {
		if ctx.Err() != nil {
			return nil // asked to stop before the caches synced
		}
		return errors.New("failed to wait for caches to sync")
	}
	if wasStandby {
		if err := c.rememberFoosDeletedWhileStandby(ctx); err != nil {
			// Not fatal: without it a Foo deleted meanwhile costs one
			// Deployment create, undone by the garbage collector.
			utilruntime.HandleErrorWithContext(ctx, err, "Could not check the Foo cache against the API server")
		}
	}

	// Syncs run on a context that outlives ctx by shutdownGracePeriod, so
	// that a worker finishes the Foo in hand rather than leave half its
	// writes undone.
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(shutdownGracePeriod, cancelWork) })
	defer stopGrace()

	logger.Info("Starting workers", "count", workers)
	var wg sync.WaitGroup
	wg.Go(func() { c.workqueue.feedBacklog(ctx, backlogLowWater, backlogMaxWait) })
	for range workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(context.Context) { c.runWorker(ctx, workCtx) }, time.Second)
		})
	}
	logger.Info("Started workers")

	<-ctx.Done()
	logger.Info("Shutting down workers")
	c.workqueue.ShutDown()
	wg.Wait()
	logger.Info("Workers stopped")
	return nil
}

// rememberFoosDeletedWhileStandby marks as deleted (c.deleted) the Foos a
// standby's cache holds that the API server no longer has.
//
// A standby's informers may lag by seconds when it takes over: after an API
// server outage they re-list and re-watch with backoff, and their caches still
// count as synced from their first list. Found by the chaos test: a new
// leader created Deployments for two Foos the user had deleted 4 s before,
// which the garbage collector then deleted. So a new leader first lists the
// Foos from the API server (a quorum read: the newest state), and a Foo that
// was cached before that list began and is not in it is certainly gone. A
// Foo cached only after the list began is left alone: it may be newer.
func (c *Controller) rememberFoosDeletedWhileStandby(ctx context.Context) error {
	cached, err := c.foosLister.List(labels.Everything())
	if err != nil {
		return err
	}
	present := map[types.UID]bool{}
	foos := c.sampleclientset.SamplecontrollerV1alpha1().Foos(c.namespace)
	err = pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return foos.List(ctx, opts)
	}).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		present[obj.(*samplev1alpha1.Foo).UID] = true
		return nil
	})
	if err != nil {
		return err
	}
	for _, foo := range cached {
		if !present[foo.UID] {
			klog.FromContext(ctx).V(2).Info("Foo deleted while this replica stood by, not syncing it", "foo", klog.KObj(foo))
			c.deleted.add(foo.UID)
		}
	}
	return nil
}

// HasSynced reports whether both informer caches hold a full list.
func (c *Controller) HasSynced() bool {
	return c.deploymentsSynced() && c.foosSynced()
}

// syncHandler brings the Deployment of one Foo in line with the Foo, and the
// Foo's status in line with what it observed. It reads from the caches and
// writes only what differs, so syncing a Foo that is already right makes no
// API call at all.
//
// What stops a Foo from being reconciled and needs its user to act (an
// invalid spec, a taken name, a write the API server refuses) is a
// *contract.Problem: it is reported on the Foo (Ready=False, one Warning event)
// and, unless retrying cannot help, returned so the Foo is retried with
// backoff.
func (c *Controller) syncHandler(ctx context.Context, objectRef cache.ObjectName) error {
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "foo", objectRef)
	ctx = klog.NewContext(ctx, logger)

	foo, err := c.foosLister.Foos(objectRef.Namespace).Get(objectRef.Name)
	if apierrors.IsNotFound(err) {
		// Deleted: the garbage collector removes its Deployment.
		logger.V(4).Info("Foo no longer exists")
		return nil
	}
	if err != nil {
		return err
	}
	if c.deleted.has(foo.UID) {
		logger.V(4).Info("Foo deleted, the cache has not shown it yet")
		return nil
	}

	deployment, err := c.reconcileDeployment(ctx, foo)
	var problem *contract.Problem
	if errors.As(err, &problem) {
		if err := c.reportProblem(ctx, foo, problem); err != nil {
			return err
		}
		if !problem.Retry {
			return nil
		}
		return problem
	}
	if err != nil {
		return err
	}
	_, err = c.updateFooStatus(ctx, foo, contract.DesiredStatus(foo, deployment, contract.ReadyCondition(foo, deployment)))
	return err
}

// reconcileDeployment makes the Foo's Deployment what the Foo asks for and
// returns it.
func (c *Controller) reconcileDeployment(ctx context.Context, foo *samplev1alpha1.Foo) (*contract.CachedDeployment, error) {
	if errs := contract.ValidateSpec(&foo.Spec); len(errs) > 0 {
		return nil, contract.InvalidSpecProblem(errs)
	}
	deployment, err := c.ensureDeployment(ctx, foo)
	if err != nil {
		return nil, err
	}
	// Only now that the requested Deployment is in place: a rename never
	// leaves the Foo without pods.
	if err := c.deleteStaleDeployments(ctx, foo); err != nil {
		return nil, err
	}
	return deployment, nil
}
