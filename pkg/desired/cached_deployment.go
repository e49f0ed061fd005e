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

package desired

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/listers"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// What the Deployment cache keeps of a Deployment.
//
// The cache holds every Deployment the controller manages for as long as it
// runs, so its memory grows with the number of Foos. Most of a served
// Deployment is never read: managedFields, annotations (kubectl's
// last-applied-configuration alone repeats the whole object), the spec
// beyond the fields the controller sets, the reasons, messages and
// timestamps of its conditions. A CachedDeployment is what is read, and
// nothing else: code cannot read what the cache lacks, it does not compile.
// Of the spec and labels it keeps the values at the fields DeploymentFor
// sets, whatever they are (owned.Fields): a field DeploymentFor starts to
// set is cached and compared with no edit here. Deployments the controller
// gets from the API directly (the result of a create or an apply, a GET) are
// complete; they are read through the same CacheDeployment, so the
// controller judges every Deployment by the same few fields.
//
// An *appsv1.Deployment trimmed in place would not do: its Go type is large
// whatever it holds (the pod template is inline), and its label maps cost
// far more than the few labels they hold (docs/performance.md has the bytes
// each way). It is rebuilt from an allow-list of fields, so whatever a newer
// API version adds is dropped by default, and a CachedDeployment passes
// through the transform unchanged, as client-go requires of a transform that
// may see an object twice (a watch-list stream's initial sync does).

// CachedDeployment is what the Deployment cache holds of a Deployment the
// controller manages: the metadata it reads (owned.CompactMeta), the values
// at the fields the Foo owns, and how its rollout goes. Embedding
// metav1.ObjectMeta makes it a metav1.Object, which the informer's keys and
// tombstones and metav1.IsControlledBy need.
type CachedDeployment struct {
	metav1.ObjectMeta

	// Values holds, as JSON, the Deployment's values at the fields
	// DeploymentFor sets, and only those: another team's labels, containers
	// and defaults are not kept. DeploymentDrift compares the wanted values
	// with them. Empty only when they could not be encoded, which
	// DeploymentDrift reports.
	Values string

	// Status is what the controller reads of the Deployment's status.
	Status Rollout

	// ManagedByUpdate: the Deployment's managedFields record fields under the
	// controller's field manager as an update, not an apply
	// (owned.ManagedByUpdate): a repair hands them to the apply first.
	ManagedByUpdate bool
}

// Rollout is what ReadyCondition and StatusFor read of a Deployment's
// status: how its rollout goes. Not appsv1.DeploymentStatus: the cache
// keeps these fields, and nothing else of it. Values only: a copy of a
// CachedDeployment is a deep copy.
type Rollout struct {
	ObservedGeneration                           int64
	Replicas, UpdatedReplicas, AvailableReplicas int32
	// ProgressDeadlineExceeded says the deployment controller gave up on the
	// rollout: its Progressing condition is False.
	ProgressDeadlineExceeded bool
}

// A CachedDeployment is a runtime.Object, as client-go expects of what an
// informer caches: its cache mutation detector (KUBE_CACHE_MUTATION_DETECTOR)
// copies each cached object, and its watch-list consistency check
// (KUBE_WATCHLIST_INCONSISTENCY_DETECTOR) compares the cache with a list. It
// has no kind of its own: it is never sent to or decoded from the API server.

// GetObjectKind implements runtime.Object.
func (d *CachedDeployment) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (d *CachedDeployment) DeepCopyObject() runtime.Object { return d.DeepCopy() }

// DeepCopy returns a copy of d that shares nothing with it but strings.
func (d *CachedDeployment) DeepCopy() *CachedDeployment {
	if d == nil {
		return nil
	}
	out := *d // Values is a string and Status holds values only
	d.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// CacheDeployment returns what the cache keeps of d. d is not modified, and
// the result shares none of its structs, maps or slices (only strings, which
// the decoders allocate one by one), so d can be collected at once.
func CacheDeployment(d *appsv1.Deployment) *CachedDeployment {
	// An error leaves Values empty, and DeploymentDrift reports it where it
	// can be returned: the sync of the Foo.
	var values string
	if fields, err := deploymentFields(); err == nil {
		values, _ = fields.Values(d)
	}
	return &CachedDeployment{
		ObjectMeta:      owned.CompactMeta(d),
		Values:          values,
		Status:          rolloutOf(d),
		ManagedByUpdate: owned.ManagedByUpdate(d, samplecontroller.ControllerName),
	}
}

// rolloutOf is what is read of d's status.
func rolloutOf(d *appsv1.Deployment) Rollout {
	st := Rollout{
		ObservedGeneration: d.Status.ObservedGeneration,
		Replicas:           d.Status.Replicas,
		UpdatedReplicas:    d.Status.UpdatedReplicas,
		AvailableReplicas:  d.Status.AvailableReplicas,
	}
	// The first Progressing condition says whether the rollout progresses.
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			st.ProgressDeadlineExceeded = c.Status == corev1.ConditionFalse
			break
		}
	}
	return st
}

// TransformDeployment is the Deployment informer's transform: it turns an
// *appsv1.Deployment into its CachedDeployment; anything else, a
// CachedDeployment or a cache.DeletedFinalStateUnknown tombstone (whose
// object was turned when it entered the cache) among them, passes through
// unchanged.
func TransformDeployment(obj interface{}) (interface{}, error) {
	if d, ok := obj.(*appsv1.Deployment); ok && d != nil {
		return CacheDeployment(d), nil
	}
	return obj, nil
}

// DeploymentDrift lists the fields the Foo owns that differ in d from want,
// the Deployment the Foo asks for, as server-side apply compares them
// (owned.Fields.Drift): none when a repair would change nothing.
func DeploymentDrift(want *appsv1ac.DeploymentApplyConfiguration, d *CachedDeployment) ([]string, error) {
	fields, err := deploymentFields()
	if err != nil {
		return nil, err
	}
	return fields.Drift(want, d.Namespace+"/"+d.Name, d.Values)
}

// NewDeploymentInformer returns the controller's informer of the Deployments
// it manages (labelled ManagedByLabels) in namespace ("" for all), which
// caches each as its CachedDeployment (TransformDeployment), indexed by the
// Foo that controls it (owned.Indexers); narrow, if not nil, narrows its
// lists and watches to one shard (pkg/replicas). Read it through a
// DeploymentLister.
//
// Its own, not a shared informer factory's: the factory's informer comes
// with a typed lister that any other reader of that factory would trust to
// hand out *appsv1.Deployment, and with this transform it would hand out
// CachedDeployments. client-go is still asked whether the server streams
// lists (cache.ToListWatcherWithWatchListSemantics), as the factory's
// informer is.
func NewDeploymentInformer(clientset kubernetes.Interface, namespace string, resyncPeriod time.Duration,
	narrow func(*cache.ListWatch) *cache.ListWatch,
) (cache.SharedIndexInformer, error) {
	deployments := clientset.AppsV1().Deployments(namespace)
	managed := labels.SelectorFromSet(ManagedByLabels).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = managed
			return deployments.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = managed
			return deployments.Watch(ctx, opts)
		},
	}
	if narrow != nil {
		lw = narrow(lw)
	}
	informer := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, clientset),
		&appsv1.Deployment{}, cache.SharedIndexInformerOptions{
			ResyncPeriod: resyncPeriod,
			Indexers:     owned.Indexers(samplecontroller.FooGroupKind),
		})
	if err := informer.SetTransform(TransformDeployment); err != nil {
		return nil, err
	}
	return informer, nil
}

// DeploymentLister reads the Deployment cache as client-go's
// appsv1listers.DeploymentLister reads one of *appsv1.Deployment, each as
// the cache keeps it.
type DeploymentLister struct {
	indexer cache.Indexer
}

// NewDeploymentLister returns a lister of indexer, a NewDeploymentInformer's.
func NewDeploymentLister(indexer cache.Indexer) DeploymentLister {
	return DeploymentLister{indexer: indexer}
}

// Deployments reads the cached Deployments of one namespace: Get returns one
// by name, or a NotFound error.
func (l DeploymentLister) Deployments(namespace string) listers.ResourceIndexer[*CachedDeployment] {
	return listers.NewNamespaced(listers.New[*CachedDeployment](l.indexer, DeploymentsResource),
		namespace)
}

// ControlledBy returns the cached Deployments the Foo of uid controls.
func (l DeploymentLister) ControlledBy(uid types.UID) ([]*CachedDeployment, error) {
	objs, err := l.indexer.ByIndex(owned.ByControllerUID, string(uid))
	if err != nil {
		return nil, err
	}
	controlled := make([]*CachedDeployment, 0, len(objs))
	for _, obj := range objs {
		if d, ok := obj.(*CachedDeployment); ok {
			controlled = append(controlled, d)
		}
	}
	return controlled, nil
}

// Len is how many Deployments the cache holds.
func (l DeploymentLister) Len() int {
	return len(l.indexer.ListKeys())
}
