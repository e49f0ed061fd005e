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
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	samplescheme "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/scheme"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions/samplecontroller/v1alpha1"
	listers "github.com/kube-samples/sample-controller/pkg/generated/listers/samplecontroller/v1alpha1"
)

// Cache indexes.
const (
	// fooDeploymentNameIndex finds the Foos that ask for a Deployment name,
	// so that a Foo refused a taken name is retried as soon as it is freed.
	fooDeploymentNameIndex = "deploymentName"
	// deploymentControllerIndex finds the Deployments a Foo controls, whatever
	// their name, so that renaming spec.deploymentName removes the old one.
	deploymentControllerIndex = "controllerUID"
)

// shutdownGracePeriod is how long workers may spend finishing the Foo in hand
// once shutdown begins; then their API calls are cancelled.
const shutdownGracePeriod = 5 * time.Second

// Controller reconciles Foos with the Deployments they ask for.
type Controller struct {
	kubeclientset   kubernetes.Interface
	sampleclientset clientset.Interface

	deploymentsLister  appslisters.DeploymentLister
	deploymentsIndexer cache.Indexer
	deploymentsSynced  cache.InformerSynced
	foosLister         listers.FooLister
	foosIndexer        cache.Indexer
	foosSynced         cache.InformerSynced

	// statusSubresource tells how Foo status is written: through the status
	// subresource when the installed CRD enables it, else by a plain update.
	statusSubresource bool

	// workqueue holds the keys of Foos to sync. It is rate limited so that a
	// failing Foo backs off, and it never holds a key twice, so many events
	// for one Foo cost one sync.
	workqueue workqueue.TypedRateLimitingInterface[cache.ObjectName]

	recorder         record.EventRecorder
	eventBroadcaster record.EventBroadcaster
}

// NewController returns a controller fed by the given informers. It must be
// called before the informers are started: it adds handlers and indexes.
func NewController(
	ctx context.Context,
	kubeclientset kubernetes.Interface,
	sampleclientset clientset.Interface,
	deploymentInformer appsinformers.DeploymentInformer,
	fooInformer informers.FooInformer,
	statusSubresource bool,
) (*Controller, error) {
	logger := klog.FromContext(ctx)

	// Let events about Foos be recorded: the event machinery needs the Foo
	// types in the scheme it encodes object references with.
	utilruntime.Must(samplescheme.AddToScheme(scheme.Scheme))
	// Not tied to ctx: Run shuts the broadcaster down after the workers
	// have finished, so events of the last syncs still reach the API.
	eventBroadcaster := record.NewBroadcaster()
	eventBroadcaster.StartStructuredLogging(4)
	eventBroadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kubeclientset.CoreV1().Events("")})
	recorder := eventBroadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: samplev1alpha1.ControllerName})

	// Retries back off per Foo from 5 ms to 1000 s; all retries together are
	// held to 50 per second (bursts of 300) so a failing API cannot turn the
	// queue into a storm. Fresh events are not rate limited.
	rateLimiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[cache.ObjectName](5*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[cache.ObjectName]{Limiter: rate.NewLimiter(rate.Limit(50), 300)},
	)

	controller := &Controller{
		kubeclientset:      kubeclientset,
		sampleclientset:    sampleclientset,
		deploymentsLister:  deploymentInformer.Lister(),
		deploymentsIndexer: deploymentInformer.Informer().GetIndexer(),
		deploymentsSynced:  deploymentInformer.Informer().HasSynced,
		foosLister:         fooInformer.Lister(),
		foosIndexer:        fooInformer.Informer().GetIndexer(),
		foosSynced:         fooInformer.Informer().HasSynced,
		statusSubresource:  statusSubresource,
		workqueue: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter,
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "foo"}),
		recorder:         recorder,
		eventBroadcaster: eventBroadcaster,
	}

	if err := fooInformer.Informer().AddIndexers(cache.Indexers{fooDeploymentNameIndex: indexFooByDeploymentName}); err != nil {
		return nil, err
	}
	if err := deploymentInformer.Informer().AddIndexers(cache.Indexers{deploymentControllerIndex: indexDeploymentByControllingFoo}); err != nil {
		return nil, err
	}

	logger.Info("Setting up event handlers")
	// Every change to a Foo, and every periodic resync, queues it. A resync
	// costs no API writes: a sync writes only what differs.
	if _, err := fooInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: controller.enqueueFoo,
		UpdateFunc: func(old, new interface{}) {
			controller.enqueueFoo(new)
		},
	}); err != nil {
		return nil, err
	}
	// A change to a Deployment queues the Foo that controls it, so drift is
	// repaired and status follows the rollout. The handlers work out the Foo
	// from the Deployment's controller reference; Deployments controlled by
	// anything else are ignored.
	if _, err := deploymentInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: controller.handleObject,
		UpdateFunc: func(old, new interface{}) {
			newDepl := new.(*appsv1.Deployment)
			oldDepl := old.(*appsv1.Deployment)
			if newDepl.ResourceVersion == oldDepl.ResourceVersion {
				// A periodic resync delivers the same object again; the
				// Foo handler's resync already covers it.
				return
			}
			controller.handleObject(new)
		},
		DeleteFunc: controller.handleDeploymentDelete,
	}); err != nil {
		return nil, err
	}

	return controller, nil
}

// indexFooByDeploymentName indexes Foos by "namespace/deploymentName".
func indexFooByDeploymentName(obj interface{}) ([]string, error) {
	foo, ok := obj.(*samplev1alpha1.Foo)
	if !ok || foo.Spec.DeploymentName == "" {
		return nil, nil
	}
	return []string{foo.Namespace + "/" + foo.Spec.DeploymentName}, nil
}

// indexDeploymentByControllingFoo indexes Deployments by the UID of the Foo
// that controls them.
func indexDeploymentByControllingFoo(obj interface{}) ([]string, error) {
	deployment, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, nil
	}
	ref := fooControllerRef(deployment)
	if ref == nil {
		return nil, nil
	}
	return []string{string(ref.UID)}, nil
}

// fooControllerRef returns the object's controller reference when its
// controller is a Foo, else nil.
func fooControllerRef(object metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(object)
	if ref == nil || ref.Kind != "Foo" || ref.APIVersion != samplev1alpha1.SchemeGroupVersion.String() {
		return nil
	}
	return ref
}

// Run waits for the informer caches to sync, then runs workers until ctx is
// cancelled. Then it stops taking work, lets the workers finish the Foo in
// hand and returns.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.eventBroadcaster.Shutdown()
	defer c.workqueue.ShutDown()
	logger := klog.FromContext(ctx)

	logger.Info("Starting Foo controller")
	logger.Info("Waiting for informer caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.deploymentsSynced, c.foosSynced); !ok {
		if ctx.Err() != nil {
			return nil // asked to stop before the caches synced
		}
		return errors.New("failed to wait for caches to sync")
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

// HasSynced reports whether both informer caches hold a full list.
func (c *Controller) HasSynced() bool {
	return c.deploymentsSynced() && c.foosSynced()
}

// runWorker processes work items until the queue shuts down or ctx ends;
// syncs themselves run on workCtx.
func (c *Controller) runWorker(ctx, workCtx context.Context) {
	for ctx.Err() == nil && c.processNextWorkItem(workCtx) {
	}
}

// processNextWorkItem takes one key off the queue and syncs it. A failed sync
// is queued again with backoff; a successful one resets the backoff.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	objRef, shutdown := c.workqueue.Get()
	if shutdown {
		return false
	}
	// Done lets the queue hand this key out again: to another worker if it
	// was queued meanwhile, or after its backoff if we requeue it below.
	defer c.workqueue.Done(objRef)

	start := time.Now()
	err := c.syncHandler(ctx, objRef)
	observeReconcile(time.Since(start), err)
	switch {
	case err == nil:
		c.workqueue.Forget(objRef)
	case apierrors.IsConflict(err):
		// The cache was behind the API server: nothing failed. Retry once
		// the watch has caught up.
		klog.FromContext(ctx).V(4).Info("Stale cache, retrying", "foo", objRef, "err", err)
		c.workqueue.AddRateLimited(objRef)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "Error syncing; requeuing for later retry", "objectReference", objRef)
		c.workqueue.AddRateLimited(objRef)
	}
	return true
}

// syncHandler brings the Deployment of one Foo in line with the Foo, and the
// Foo's status in line with what it observed. It reads from the caches and
// writes only what differs, so syncing a Foo that is already right makes no
// API call at all.
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

	if errs := validateFooSpec(&foo.Spec); len(errs) > 0 {
		// Retrying cannot help: the next change to the spec queues the Foo
		// again. Report it once and drop it.
		return c.reportProblem(ctx, foo, samplev1alpha1.ReasonInvalidSpec,
			fmt.Sprintf("Invalid spec: %v", errs.ToAggregate()))
	}

	deployment, err := c.ensureDeployment(ctx, foo)
	var taken *nameTakenError
	if errors.As(err, &taken) {
		// The Deployment is not ours to change. Report it, and return the
		// error so the Foo is retried with backoff: the name may be freed
		// by someone we do not watch.
		if err := c.reportProblem(ctx, foo, samplev1alpha1.ReasonResourceExists, taken.Error()); err != nil {
			return err
		}
		return taken
	}
	if err != nil {
		return err
	}

	// Only now that the requested Deployment is in place: a rename never
	// leaves the Foo without pods.
	if err := c.deleteStaleDeployments(ctx, foo); err != nil {
		return err
	}

	return c.updateFooStatus(ctx, foo, deployment, readyCondition(foo, deployment))
}

// nameTakenError says the requested Deployment exists and is not controlled
// by the Foo that asks for it.
type nameTakenError struct {
	deployment *appsv1.Deployment
}

func (e *nameTakenError) Error() string {
	owner := "no Foo"
	if ref := fooControllerRef(e.deployment); ref != nil {
		owner = fmt.Sprintf("Foo %q", ref.Name)
	}
	return fmt.Sprintf("Deployment %q already exists and is not managed by this Foo (it is controlled by %s)", e.deployment.Name, owner)
}

// ensureDeployment makes the Foo's Deployment exist with the fields the
// controller owns as newDeployment says, and returns it. A Deployment of that
// name that the Foo does not control is never modified: it is returned as a
// *nameTakenError.
func (c *Controller) ensureDeployment(ctx context.Context, foo *samplev1alpha1.Foo) (*appsv1.Deployment, error) {
	desired := newDeployment(foo)
	deployment, err := c.deploymentsLister.Deployments(foo.Namespace).Get(foo.Spec.DeploymentName)
	if apierrors.IsNotFound(err) {
		return c.createDeployment(ctx, foo, desired)
	}
	if err != nil {
		return nil, err
	}
	return c.repairDeployment(ctx, foo, desired, deployment)
}

// createDeployment creates the desired Deployment. A plain create, not an
// apply: an apply would take over a Deployment of that name that the cache
// cannot see because it lacks our label. When the name is taken, the API
// server's copy decides whose it is.
func (c *Controller) createDeployment(ctx context.Context, foo *samplev1alpha1.Foo, desired *appsv1ac.DeploymentApplyConfiguration) (*appsv1.Deployment, error) {
	deployments := c.kubeclientset.AppsV1().Deployments(foo.Namespace)
	deployment, err := deploymentFromApplyConfiguration(desired)
	if err != nil {
		return nil, err
	}
	created, err := deployments.Create(ctx, deployment, metav1.CreateOptions{FieldManager: samplev1alpha1.ControllerName})
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Created Deployment", "deployment", klog.KObj(created))
		c.recorder.Eventf(foo, corev1.EventTypeNormal, samplev1alpha1.ReasonSynced, "Created Deployment %s", created.Name)
		return created, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	existing, err := deployments.Get(ctx, foo.Spec.DeploymentName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return c.repairDeployment(ctx, foo, desired, existing)
}

// repairDeployment applies the desired state to a Deployment that differs
// from it in a field the controller owns. A Deployment the Foo does not
// control is returned untouched as a *nameTakenError.
func (c *Controller) repairDeployment(ctx context.Context, foo *samplev1alpha1.Foo, desired *appsv1ac.DeploymentApplyConfiguration, deployment *appsv1.Deployment) (*appsv1.Deployment, error) {
	if !metav1.IsControlledBy(deployment, foo) {
		return nil, &nameTakenError{deployment: deployment}
	}
	drift := deploymentDrift(desired, deployment)
	if len(drift) == 0 {
		return deployment, nil
	}
	// Force: fields the controller owns are its own, even when someone
	// changed them by hand since.
	applied, err := c.kubeclientset.AppsV1().Deployments(foo.Namespace).Apply(ctx, desired,
		metav1.ApplyOptions{FieldManager: samplev1alpha1.ControllerName, Force: true})
	if err != nil {
		return nil, err
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
			return err
		}
		klog.FromContext(ctx).V(2).Info("Deleted stale Deployment", "deployment", klog.KObj(deployment))
		c.recorder.Eventf(foo, corev1.EventTypeNormal, samplev1alpha1.ReasonSynced,
			"Deleted Deployment %s: spec.deploymentName is now %s", deployment.Name, foo.Spec.DeploymentName)
	}
	return nil
}

// reportProblem records a problem the user has to resolve: Ready=False with
// the reason and message in status, and a Warning event the first time this
// problem is seen, not on every retry.
func (c *Controller) reportProblem(ctx context.Context, foo *samplev1alpha1.Foo, reason, message string) error {
	prev := meta.FindStatusCondition(foo.Status.Conditions, samplev1alpha1.ConditionReady)
	isNew := prev == nil || prev.Status != metav1.ConditionFalse || prev.Reason != reason || prev.Message != message
	if err := c.updateFooStatus(ctx, foo, nil, notReady(reason, message)); err != nil {
		return err
	}
	if isNew {
		klog.FromContext(ctx).Info("Foo cannot be reconciled", "reason", reason, "message", message)
		c.recorder.Event(foo, corev1.EventTypeWarning, reason, message)
	}
	return nil
}

// updateFooStatus writes the Foo's status when it differs from what the
// Foo's Deployment (nil if it has none) and the Ready condition say, through
// the status subresource when the CRD has one.
func (c *Controller) updateFooStatus(ctx context.Context, foo *samplev1alpha1.Foo, deployment *appsv1.Deployment, ready metav1.Condition) error {
	status := newFooStatus(foo, deployment, ready, foo.Generation)
	if equality.Semantic.DeepEqual(foo.Status, status) {
		return nil
	}
	if !c.statusSubresource {
		// Without a status subresource the API server bumps
		// metadata.generation on every write that changes status, this one
		// included. Stamping the generation the write will produce keeps
		// observedGeneration truthful and lets the next sync find nothing
		// to do.
		status = newFooStatus(foo, deployment, ready, foo.Generation+1)
	}
	// A JSON patch replacing the whole status. Setting resourceVersion makes
	// it conditional: it applies only to the Foo version the status was
	// computed from. When the cache lags behind (a Deployment event often
	// requeues the Foo before the watch delivers our previous write) the API
	// server answers 409 Conflict and the Foo is retried on fresh data,
	// rather than a stale status overwriting a newer one, or a problem being
	// reported twice.
	patch, err := json.Marshal([]jsonPatchOperation{
		{Op: "replace", Path: "/metadata/resourceVersion", Value: foo.ResourceVersion},
		{Op: "add", Path: "/status", Value: status},
	})
	if err != nil {
		return err
	}
	var subresources []string
	if c.statusSubresource {
		subresources = []string{"status"}
	}
	_, err = c.sampleclientset.SamplecontrollerV1alpha1().Foos(foo.Namespace).Patch(ctx, foo.Name,
		types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: samplev1alpha1.ControllerName}, subresources...)
	return err
}

// jsonPatchOperation is one operation of an RFC 6902 JSON patch.
type jsonPatchOperation struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value,omitempty"`
}

// enqueueFoo queues a Foo's key. Only keys are queued, never objects: a worker
// reads the latest state from the cache when it gets to the key.
func (c *Controller) enqueueFoo(obj interface{}) {
	objectRef, err := cache.ObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.workqueue.Add(objectRef)
}

// handleObject queues the Foo that controls the given Deployment, if any. The
// object may be a cache.DeletedFinalStateUnknown tombstone, which the
// informer hands out when it missed a delete while disconnected.
func (c *Controller) handleObject(obj interface{}) {
	object, ok := objectFromTombstone(obj)
	if !ok {
		return
	}
	logger := klog.FromContext(context.Background())
	ref := fooControllerRef(object)
	if ref == nil {
		return
	}
	foo, err := c.foosLister.Foos(object.GetNamespace()).Get(ref.Name)
	if err != nil || foo.UID != ref.UID {
		// The controlling Foo is gone (or was replaced by a namesake); the
		// garbage collector takes care of its Deployment.
		logger.V(4).Info("Ignoring Deployment whose Foo is gone", "deployment", klog.KObj(object), "foo", ref.Name)
		return
	}
	c.enqueueFoo(foo)
}

// handleDeploymentDelete queues the Foo that controlled the deleted
// Deployment, and every Foo asking for its name: one that was refused the
// name can have it now. Only managed Deployments are watched, so a Foo
// refused a name by an unmanaged Deployment learns that it was freed from
// its own retries, with backoff.
func (c *Controller) handleDeploymentDelete(obj interface{}) {
	c.handleObject(obj)
	object, ok := objectFromTombstone(obj)
	if !ok {
		return
	}
	waiting, err := c.foosIndexer.ByIndex(fooDeploymentNameIndex, object.GetNamespace()+"/"+object.GetName())
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
