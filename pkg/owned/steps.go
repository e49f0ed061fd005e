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
// itself, so that each is a line a reader can point to; Registration hands
// them out whatever the kind, without type parameters.

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
	// Problems says what stops a sync in words for the owner's user.
	Problems Problems
}

// Problems turn what stops a sync into errors its owner's user reads.
type Problems interface {
	// Refused is a write (action: "create", "update" or "delete") the API
	// server refused for a reason the user must address (IsRefused).
	Refused(action, kind, name string, err error) error
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

// Registration is a kind of object owners of type O own, registered with
// Register: what a controller needs of it, whatever the kind, the steps of
// its sync among it. An object goes in and out of the steps as a
// metav1.Object: the kind's Object, as its cache holds it.
type Registration[O Owner] interface {
	// Kind is the kind, as messages name it.
	Kind() string
	// Resource is the kind's group and resource, as RBAC rules and audit
	// policies name it.
	Resource() schema.GroupResource
	// NewInformer returns the controller's informer of the objects of the
	// kind labelled managedBy in namespace ("" for all), whose cache holds
	// each as its Object for the controller's fieldManager, indexed by the
	// owner that controls it.
	NewInformer(clientset kubernetes.Interface, namespace string, managedBy labels.Set, fieldManager string,
		ownerKind schema.GroupKind, resyncPeriod time.Duration) (cache.SharedIndexInformer, error)

	// Desired is the object owner asks for: the registered function's.
	Desired(owner O) Desired
	// Get reads the object of that name from indexer, the cache of the
	// kind's informer, as a lister would: a NotFound error if it is not
	// there.
	Get(indexer cache.Indexer, namespace, name string) (metav1.Object, error)
	// Create creates the desired object, missing from the cache (Kind.Create).
	Create(ctx context.Context, w *Writer, owner O, desired Desired) (metav1.Object, error)
	// Repair applies the desired object where a field the controller owns
	// drifted in obj, and returns the object as it then is (Kind.Repair).
	Repair(ctx context.Context, w *Writer, owner O, desired Desired, obj metav1.Object) (metav1.Object, error)
	// DeleteStale deletes the objects owner controls under another name than
	// keep (Kind.DeleteStale).
	DeleteStale(ctx context.Context, w *Writer, indexer cache.Indexer, owner O, keep string) error
}

// Desired is the object an owner asks for, of one registered kind.
type Desired struct {
	// Name is the object's name, in the owner's namespace.
	Name string
	// ApplyConfiguration is the object as the registered function returned
	// it: the kind's apply configuration, which names exactly the fields
	// the controller owns.
	ApplyConfiguration any
}

// Register registers kind k, whose object an owner of type O asks for is
// desired(owner), a pure function that names exactly the fields the
// controller owns.
func Register[O Owner, T, L runtime.Object, AC ApplyConfiguration[AC], S any](
	k *Kind[T, L, AC, S], desired func(O) AC,
) Registration[O] {
	return &registration[O, T, L, AC, S]{kind: k, desired: desired}
}

type registration[O Owner, T, L runtime.Object, AC ApplyConfiguration[AC], S any] struct {
	kind    *Kind[T, L, AC, S]
	desired func(O) AC
}

func (r *registration[O, T, L, AC, S]) Kind() string { return r.kind.Name }

func (r *registration[O, T, L, AC, S]) Resource() schema.GroupResource { return r.kind.Resource }

func (r *registration[O, T, L, AC, S]) NewInformer(clientset kubernetes.Interface, namespace string,
	managedBy labels.Set, fieldManager string, ownerKind schema.GroupKind, resyncPeriod time.Duration,
) (cache.SharedIndexInformer, error) {
	return NewInformer(r.kind, r.kind.Client(clientset, namespace), clientset, managedBy, fieldManager,
		r.kind.newObject(), resyncPeriod, Indexers(ownerKind))
}

func (r *registration[O, T, L, AC, S]) Desired(owner O) Desired {
	ac := r.desired(owner)
	name := ""
	if n := ac.GetName(); n != nil {
		name = *n
	}
	return Desired{Name: name, ApplyConfiguration: ac}
}

func (r *registration[O, T, L, AC, S]) Get(indexer cache.Indexer, namespace, name string) (metav1.Object, error) {
	obj, err := r.kind.Get(indexer, namespace, name)
	if err != nil {
		return nil, err // not a nil *Object[S] in a non-nil interface
	}
	return obj, nil
}

func (r *registration[O, T, L, AC, S]) Create(ctx context.Context, w *Writer, owner O,
	desired Desired) (metav1.Object, error) {
	ac, err := r.applyConfiguration(desired)
	if err != nil {
		return nil, err
	}
	obj, err := r.kind.Create(ctx, w, owner, desired.Name, ac)
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (r *registration[O, T, L, AC, S]) Repair(ctx context.Context, w *Writer, owner O, desired Desired,
	obj metav1.Object) (metav1.Object, error) {
	ac, err := r.applyConfiguration(desired)
	if err != nil {
		return nil, err
	}
	cached, ok := obj.(*Object[S])
	if !ok {
		return nil, fmt.Errorf("%s %s is a %T, not what its cache holds", r.kind.Name, obj.GetName(), obj)
	}
	repaired, err := r.kind.Repair(ctx, w, owner, ac, cached)
	if err != nil {
		return nil, err
	}
	return repaired, nil
}

func (r *registration[O, T, L, AC, S]) DeleteStale(ctx context.Context, w *Writer, indexer cache.Indexer, owner O,
	keep string) error {
	return r.kind.DeleteStale(ctx, w, indexer, owner, keep)
}

// applyConfiguration is the kind's apply configuration in desired.
func (r *registration[O, T, L, AC, S]) applyConfiguration(desired Desired) (AC, error) {
	ac, ok := desired.ApplyConfiguration.(AC)
	if !ok {
		return ac, fmt.Errorf("the desired %s is a %T, not the kind's apply configuration",
			r.kind.Name, desired.ApplyConfiguration)
	}
	return ac, nil
}

// newObject returns a new, empty T.
func (k *Kind[T, L, AC, S]) newObject() T {
	var zero T
	return reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
}

// Create creates the object name as desired says, missing from the cache,
// and returns what the cache keeps of it: a plain create, as an apply would
// take over an object of that name the cache does not see. If the name is
// taken by such an object (it lacks the controller's label), or the create
// is refused, as a quota at its limit refuses a second create of the one the
// controller made and the cache has not shown yet, it returns the API
// server's copy of the object of that name, whose controller the caller
// checks; a refused create of a name nobody has is a problem
// (Problems.Refused).
func (k *Kind[T, L, AC, S]) Create(ctx context.Context, w *Writer, owner Owner, name string,
	desired AC) (*Object[S], error) {
	client := k.Client(w.Clientset, owner.GetNamespace())
	object := k.newObject()
	if err := ToObject(desired, object); err != nil {
		return nil, err
	}
	created, err := client.Create(ctx, object, metav1.CreateOptions{FieldManager: w.FieldManager})
	if err == nil {
		cached := k.CompactFor(created, w.FieldManager)
		klog.FromContext(ctx).V(2).Info("Created "+k.Name, "object", klog.KObj(cached))
		w.Recorder.Eventf(owner, corev1.EventTypeNormal, w.SyncedReason, "Created %s %s", k.Name, cached.Name)
		return cached, nil
	}
	refused := IsRefused(err)
	if !apierrors.IsAlreadyExists(err) && !refused {
		return nil, err
	}
	// Taken and uncached, or refused: judge the API server's copy.
	served, getErr := client.Get(ctx, name, metav1.GetOptions{})
	if refused && apierrors.IsNotFound(getErr) {
		return nil, w.Problems.Refused("create", k.Name, name, err)
	}
	if getErr != nil {
		return nil, getErr
	}
	return k.CompactFor(served, w.FieldManager), nil
}

// handToApply makes the fields obj records under the controller's field
// manager as an update its apply's, and returns the object as it then is.
// Server-side apply keeps a manager's updates apart from its applies: a
// field the create set stays the update's, and an apply that no longer sets
// it does not remove it (a port the desired state moved from 8080 to 9090
// would be served twice, and refused). client-go's csaupgrade rewrites
// managedFields so, as for a client moving from client-side to server-side
// apply; the cache does not keep managedFields, so they are read from the
// API server first. Once per object, at its first repair: a create is not
// followed by a write that nothing may need.
func (k *Kind[T, L, AC, S]) handToApply(ctx context.Context, w *Writer, client Client[T, L, AC],
	obj *Object[S]) (*Object[S], error) {
	served, err := client.Get(ctx, obj.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if version := any(served).(metav1.Object).GetResourceVersion(); version != obj.ResourceVersion {
		// Changed since the cache saw it: the owner is synced again once the cache has the change.
		return nil, apierrors.NewConflict(k.Resource, obj.Name,
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
	klog.FromContext(ctx).V(2).Info("Handed "+k.Name+"'s fields from the field manager's update to its apply",
		"object", klog.KObj(obj))
	return k.CompactFor(patched, w.FieldManager), nil
}

// Repair applies the desired state where a field the controller owns
// drifted in obj, what the cache keeps of an object the owner controls, and
// returns what the cache keeps of the object then: obj itself when nothing
// drifted, and no API call made.
func (k *Kind[T, L, AC, S]) Repair(ctx context.Context, w *Writer, owner Owner,
	desired AC, obj *Object[S]) (*Object[S], error) {
	client := k.Client(w.Clientset, owner.GetNamespace())
	drift, err := k.Drift(desired, obj)
	if err != nil {
		return nil, err
	}
	if len(drift) == 0 {
		return obj, nil
	}
	if obj.ManagedByUpdate {
		if obj, err = k.handToApply(ctx, w, client, obj); err != nil {
			return nil, err
		}
	}
	// Force: fields the controller owns are its own. The resourceVersion makes it conditional: an
	// object changed since the cache saw it is answered 409 and the owner synced again, not undone.
	applied, err := client.Apply(ctx, desired.WithResourceVersion(obj.ResourceVersion),
		metav1.ApplyOptions{FieldManager: w.FieldManager, Force: true})
	if IsRefused(err) {
		return nil, w.Problems.Refused("update", k.Name, obj.Name, err)
	}
	if err != nil {
		return nil, err
	}
	cached := k.CompactFor(applied, w.FieldManager)
	klog.FromContext(ctx).V(2).Info("Updated "+k.Name, "object", klog.KObj(cached), "fields", drift)
	w.Recorder.Eventf(owner, corev1.EventTypeNormal, w.SyncedReason, "Updated %s %s: %s",
		k.Name, cached.Name, strings.Join(drift, ", "))
	return cached, nil
}

// DeleteStale deletes the objects owner controls under another name than
// keep, as after the owner changed the name it asks for.
func (k *Kind[T, L, AC, S]) DeleteStale(ctx context.Context, w *Writer, indexer cache.Indexer, owner Owner,
	keep string) error {
	controlled, err := indexer.ByIndex(ByControllerUID, string(owner.GetUID()))
	if err != nil {
		return err
	}
	for _, obj := range controlled {
		stale, ok := obj.(*Object[S])
		if !ok {
			return fmt.Errorf("cached %s is a %T, not what the transform makes", k.Name, obj)
		}
		if stale.Name == keep {
			continue
		}
		// The UID precondition: the very object we saw, not a namesake.
		err := k.Client(w.Clientset, stale.Namespace).Delete(ctx, stale.Name,
			metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(stale.UID))})
		if apierrors.IsNotFound(err) {
			continue // deleted already; the cache had not caught up
		}
		if IsRefused(err) {
			return w.Problems.Refused("delete", k.Name, stale.Name, err)
		}
		if err != nil {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Deleted stale "+k.Name, "object", klog.KObj(stale))
		w.Recorder.Eventf(owner, corev1.EventTypeNormal, w.SyncedReason, "Deleted %s %s: replaced by %s",
			k.Name, stale.Name, keep)
	}
	return nil
}
