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

package owned

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/klog/v2"
)

// The steps of the sync of one object an owner owns, written once for every
// kind, in upstream's order: read it from the cache (Get),
// create it if missing (Create), leave it alone if another controls its name
// (the caller's check, ControlledBy), repair the fields the controller owns
// where they drifted (Repair), then delete the owner's objects under a name
// it no longer asks for (DeleteStale), each write with an event on the
// owner. The steps read the cache and write only differences: an owner
// whose objects are right costs no API call. The controller calls them
// itself, so that each is a line a reader can point to, through Registered,
// which hands them out whatever the kind.

// Client is client-go's typed client of one kind in one namespace, such as
// clientset.AppsV1().Deployments(namespace).
type Client[T, L runtime.Object, AC any] interface {
	ListWatcher[L]
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Apply(ctx context.Context, obj AC, opts metav1.ApplyOptions) (T, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions,
		subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// ApplyConfiguration is client-go's apply configuration of a kind, AC.
type ApplyConfiguration[AC any] interface {
	GetName() *string
	WithResourceVersion(value string) AC
}

// Owner is an object that owns others, such as a Foo: events are recorded
// about it.
type Owner interface {
	metav1.Object
	runtime.Object
}

// Writer is what every write of the objects owners own carries that is the
// controller's, not a kind's: its client, field manager and events, and
// its words for a refused write.
type Writer struct {
	Clientset kubernetes.Interface
	// FieldManager signs every write: server-side apply's manager of the
	// fields the controller owns.
	FieldManager string
	// Recorder records a Normal event of reason SyncedReason on the owner
	// for every write.
	Recorder     record.EventRecorder
	SyncedReason string
	// Refused turns a write (action: "create", "update" or "delete") of the
	// named object of a kind, which the API server refused for a reason the
	// owner's user must address (IsRefused), into the error that stops the
	// sync, in words for that user.
	Refused func(action, kind, name string, err error) error
}

// IsRefused reports whether err is the API server refusing a write for a
// reason its user must address: a quota exceeded, an admission webhook or
// policy that denies it, missing permission, a namespace being deleted. The
// ReplicaSet controller reports such refusals as FailedCreate. Any other
// error (a timeout, throttling, a conflict) is passing, to be retried
// without bothering the user.
func IsRefused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// Registration is one kind of object T, listed as L, applied as AC, that
// owners of type O own: the function of the object an owner asks for (For),
// and what the machinery needs to know of the kind to cache, compare and
// write it. S is what the controller reads of a T's status. Owning another
// kind is another Registration; nothing else here names a kind.
type Registration[O Owner, T, L runtime.Object, AC ApplyConfiguration[AC], S any] struct {
	// Kind is the kind, as messages name it ("Deployment").
	Kind string
	// Resource is the kind's group and resource, as RBAC rules, audit
	// policies and NotFound errors name it.
	Resource schema.GroupResource
	// For returns the object owner asks for: a pure function of the owner
	// that names exactly the fields the controller owns.
	For func(owner O) AC
	// Fields returns the fields the controller owns on a T (those For
	// sets), found once (NewFields).
	Fields func() (*Fields, error)
	// ReadStatus is what is read of a T's status, which the cache keeps.
	ReadStatus func(T) S
	// Client is the kind's typed client in namespace.
	Client func(clientset kubernetes.Interface, namespace string) Client[T, L, AC]
}

// Registered is a Registration as a controller holds it, whatever the kind:
// the steps of the sync of one object its owner asks for, and the informer
// whose cache they read. An object goes in and out of the steps as a
// metav1.Object: the kind's Object, as its cache holds it. The cache is
// passed to the steps that read it (Get, DeleteStale): a Registration is
// the kind's and shared, a cache is one controller's.
type Registered[O Owner] interface {
	// GroupResource is the kind's group and resource (Registration.Resource).
	GroupResource() schema.GroupResource
	// NewInformer returns the controller's informer of the objects of the
	// kind labelled managedBy in namespace ("" for all), whose cache holds
	// each as its Object for the controller's fieldManager, indexed by the
	// owner that controls it; narrow, if not nil, narrows its lists and
	// watches further (NewInformer).
	NewInformer(clientset kubernetes.Interface, namespace string, managedBy labels.Set, fieldManager string,
		ownerKind schema.GroupKind, resyncPeriod time.Duration, narrow func(*cache.ListWatch) *cache.ListWatch,
	) (cache.SharedIndexInformer, error)

	// Want is the object owner asks for (Registration.For).
	Want(owner O) Wanted
	// Get reads the object of that name from indexer, the cache of the
	// kind's informer, as a lister would: a NotFound error if it is not
	// there.
	Get(indexer cache.Indexer, namespace, name string) (metav1.Object, error)
	// Create creates the object wanted, missing from the cache.
	Create(ctx context.Context, w *Writer, owner O, want Wanted) (metav1.Object, error)
	// Repair applies the object wanted where a field the controller owns
	// drifted in obj, and returns the object as it then is.
	Repair(ctx context.Context, w *Writer, owner O, want Wanted, obj metav1.Object) (metav1.Object, error)
	// DeleteStale deletes the objects owner controls, as indexer holds them,
	// under another name than keep.
	DeleteStale(ctx context.Context, w *Writer, indexer cache.Indexer, owner O, keep string) error
}

// Wanted is the object an owner asks for, of one registered kind.
type Wanted struct {
	// Kind is the kind, as messages name it (Registration.Kind).
	Kind string
	// Name is the object's name, in the owner's namespace.
	Name string
	// ApplyConfiguration is the object as Registration.For returned it: the
	// kind's apply configuration, which names exactly the fields the
	// controller owns.
	ApplyConfiguration any
}

// GroupResource implements Registered.
func (r *Registration[O, T, L, AC, S]) GroupResource() schema.GroupResource { return r.Resource }

// NewInformer implements Registered.
func (r *Registration[O, T, L, AC, S]) NewInformer(clientset kubernetes.Interface, namespace string,
	managedBy labels.Set, fieldManager string, ownerKind schema.GroupKind, resyncPeriod time.Duration,
	narrow func(*cache.ListWatch) *cache.ListWatch,
) (cache.SharedIndexInformer, error) {
	informer, err := NewInformer(r.TransformFor(fieldManager), r.Client(clientset, namespace), clientset,
		managedBy, r.newObject(), resyncPeriod, Indexers(ownerKind), narrow)
	if err != nil {
		return nil, fmt.Errorf("the %s informer: %w", r.Kind, err)
	}
	return informer, nil
}

// Want implements Registered.
func (r *Registration[O, T, L, AC, S]) Want(owner O) Wanted {
	ac := r.For(owner)
	name := ""
	if n := ac.GetName(); n != nil {
		name = *n
	}
	return Wanted{Kind: r.Kind, Name: name, ApplyConfiguration: ac}
}

// applyConfiguration is the kind's apply configuration in want.
func (r *Registration[O, T, L, AC, S]) applyConfiguration(want Wanted) (AC, error) {
	ac, ok := want.ApplyConfiguration.(AC)
	if !ok {
		return ac, fmt.Errorf("the %s wanted is a %T, not the kind's apply configuration",
			r.Kind, want.ApplyConfiguration)
	}
	return ac, nil
}

// Cached is obj, an object of the kind from its cache or from a step, as
// its type: what the cache keeps of a T.
func (r *Registration[O, T, L, AC, S]) Cached(obj any) (*Object[S], error) {
	o, ok := obj.(*Object[S])
	if !ok {
		return nil, fmt.Errorf("a cached %s is a %T, not what the transform makes", r.Kind, obj)
	}
	return o, nil
}

// newObject returns a new, empty T.
func (r *Registration[O, T, L, AC, S]) newObject() T {
	var zero T
	return reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
}

// Get implements Registered: the object of that name from indexer, the cache
// of the kind's informer, or a NotFound error, as a lister would.
func (r *Registration[O, T, L, AC, S]) Get(indexer cache.Indexer, namespace, name string) (metav1.Object, error) {
	obj, exists, err := indexer.GetByKey(cache.NewObjectName(namespace, name).String())
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(r.Resource, name)
	}
	return r.Cached(obj)
}

// Create implements Registered: it creates the object wanted, missing from
// the cache, and returns what the cache keeps of it: a plain create, as an
// apply would take over an object of that name the cache does not see. If
// the name is taken by such an object (it lacks the controller's label), or
// the create is refused, as a quota at its limit refuses a second create of
// the one the controller made and the cache has not shown yet, it returns
// the API server's copy of the object of that name, whose controller the
// caller checks; a refused create of a name nobody has is the owner's
// problem (Writer.Refused).
func (r *Registration[O, T, L, AC, S]) Create(ctx context.Context, w *Writer, owner O,
	want Wanted) (metav1.Object, error) {
	ac, err := r.applyConfiguration(want)
	if err != nil {
		return nil, err
	}
	client := r.Client(w.Clientset, owner.GetNamespace())
	object := r.newObject()
	if err := ToObject(ac, object); err != nil {
		return nil, err
	}
	created, err := client.Create(ctx, object, metav1.CreateOptions{FieldManager: w.FieldManager})
	if err == nil {
		cached := r.CompactFor(created, w.FieldManager)
		klog.FromContext(ctx).V(2).Info("Created "+r.Kind, "object", klog.KObj(cached))
		w.Recorder.Eventf(owner, corev1.EventTypeNormal, w.SyncedReason, "Created %s %s", r.Kind, cached.Name)
		return cached, nil
	}
	refused := IsRefused(err)
	if !apierrors.IsAlreadyExists(err) && !refused {
		return nil, err
	}
	// Taken and uncached, or refused: judge the API server's copy.
	served, getErr := client.Get(ctx, want.Name, metav1.GetOptions{})
	if refused && apierrors.IsNotFound(getErr) {
		return nil, w.Refused("create", r.Kind, want.Name, err)
	}
	if getErr != nil {
		return nil, getErr
	}
	return r.CompactFor(served, w.FieldManager), nil
}

// handToApply makes the fields obj records under the controller's field
// manager as an update its apply's, and returns the object as it then is.
// Server-side apply keeps a manager's updates apart from its applies: a
// field the create set stays the update's, and an apply that no longer sets
// it does not remove it (a port the wanted object moved from 8080 to 9090
// would be served twice, and refused). client-go's csaupgrade rewrites
// managedFields so, as for a client moving from client-side to server-side
// apply; the cache does not keep managedFields, so they are read from the
// API server first. Once per object, at its first repair: a create is not
// followed by a write that nothing may need.
func (r *Registration[O, T, L, AC, S]) handToApply(ctx context.Context, w *Writer, client Client[T, L, AC],
	obj *Object[S]) (*Object[S], error) {
	served, err := client.Get(ctx, obj.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if version := any(served).(metav1.Object).GetResourceVersion(); version != obj.ResourceVersion {
		// Changed since the cache saw it: the owner is synced again once the cache has the change.
		return nil, apierrors.NewConflict(r.Resource, obj.Name,
			fmt.Errorf("the cache holds version %s, the API server %s", obj.ResourceVersion, version))
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(served, sets.New(w.FieldManager), w.FieldManager)
	if err != nil || patch == nil {
		return obj, err // nil: handed over already
	}
	// The patch replaces managedFields and the resourceVersion read: conditional on the object read.
	patched, err := client.Patch(ctx, obj.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("Handed "+r.Kind+"'s fields from the field manager's update to its apply",
		"object", klog.KObj(obj))
	return r.CompactFor(patched, w.FieldManager), nil
}

// Repair implements Registered: it applies the object wanted where a field
// the controller owns drifted in obj, what the cache keeps of an object the
// owner controls, and returns what the cache keeps of the object then: obj
// itself when nothing drifted, and no API call made.
func (r *Registration[O, T, L, AC, S]) Repair(ctx context.Context, w *Writer, owner O, want Wanted,
	obj metav1.Object) (metav1.Object, error) {
	ac, err := r.applyConfiguration(want)
	if err != nil {
		return nil, err
	}
	cached, err := r.Cached(obj)
	if err != nil {
		return nil, err
	}
	drift, err := r.Drift(ac, cached)
	if err != nil {
		return nil, err
	}
	if len(drift) == 0 {
		return cached, nil
	}
	client := r.Client(w.Clientset, owner.GetNamespace())
	if cached.ManagedByUpdate {
		if cached, err = r.handToApply(ctx, w, client, cached); err != nil {
			return nil, err
		}
	}
	// Force: fields the controller owns are its own. The resourceVersion makes it conditional: an
	// object changed since the cache saw it is answered 409 and the owner synced again, not undone.
	applied, err := client.Apply(ctx, ac.WithResourceVersion(cached.ResourceVersion),
		metav1.ApplyOptions{FieldManager: w.FieldManager, Force: true})
	if IsRefused(err) {
		return nil, w.Refused("update", r.Kind, cached.Name, err)
	}
	if err != nil {
		return nil, err
	}
	repaired := r.CompactFor(applied, w.FieldManager)
	klog.FromContext(ctx).V(2).Info("Updated "+r.Kind, "object", klog.KObj(repaired), "fields", drift)
	w.Recorder.Eventf(owner, corev1.EventTypeNormal, w.SyncedReason, "Updated %s %s: %s",
		r.Kind, repaired.Name, strings.Join(drift, ", "))
	return repaired, nil
}

// DeleteStale implements Registered: it deletes the objects owner controls
// under another name than keep, as after the owner changed the name it asks
// for.
func (r *Registration[O, T, L, AC, S]) DeleteStale(ctx context.Context, w *Writer, indexer cache.Indexer, owner O,
	keep string) error {
	controlled, err := indexer.ByIndex(ByControllerUID, string(owner.GetUID()))
	if err != nil {
		return err
	}
	for _, obj := range controlled {
		stale, err := r.Cached(obj)
		if err != nil {
			return err
		}
		if stale.Name == keep {
			continue
		}
		// The UID precondition: the very object we saw, not a namesake.
		err = r.Client(w.Clientset, stale.Namespace).Delete(ctx, stale.Name,
			metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(stale.UID))})
		if apierrors.IsNotFound(err) {
			continue // deleted already; the cache had not caught up
		}
		if IsRefused(err) {
			return w.Refused("delete", r.Kind, stale.Name, err)
		}
		if err != nil {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Deleted stale "+r.Kind, "object", klog.KObj(stale))
		w.Recorder.Eventf(owner, corev1.EventTypeNormal, w.SyncedReason, "Deleted %s %s: replaced by %s",
			r.Kind, stale.Name, keep)
	}
	return nil
}
