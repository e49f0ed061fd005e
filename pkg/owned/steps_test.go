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

package owned_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/applyconfigurations"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/kube-samples/sample-controller/pkg/owned"
)

// A kind other than the Deployment, registered as a fork registers one: the
// same machinery creates, repairs, refuses and cleans up its objects. Here a
// Service, owned by a Widget (example.com), the only owner kind the
// machinery is told of.

var widgetKind = schema.GroupKind{Group: "example.com", Kind: "Widget"}

// widget is an owner: a Widget's metadata is all the machinery reads.
func widget() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "default", UID: "uid-w"},
	}
}

// serviceFor is the Service a Widget asks for, named name.
func serviceFor(w *metav1.PartialObjectMetadata, name string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(name, w.Namespace).
		WithLabels(map[string]string{"app": w.Name, "managed-by": "widget-controller"}).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion(w.APIVersion).WithKind(w.Kind).
			WithName(w.Name).WithUID(w.UID).WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(map[string]string{"app": w.Name}).
			WithPorts(corev1ac.ServicePort().WithName("http").WithPort(80).WithTargetPort(intstr.FromInt32(8080))))
}

// servicesAsking registers the Service a Widget asks for as asks says.
func servicesAsking(asks func(*metav1.PartialObjectMetadata) *corev1ac.ServiceApplyConfiguration,
) *owned.Registration[*metav1.PartialObjectMetadata, *corev1.Service, *corev1.ServiceList,
	*corev1ac.ServiceApplyConfiguration, struct{}] {
	return &owned.Registration[*metav1.PartialObjectMetadata, *corev1.Service, *corev1.ServiceList,
		*corev1ac.ServiceApplyConfiguration, struct{}]{
		Kind:     "Service",
		For:      asks,
		Resource: corev1.Resource("services"),
		Fields: func() (*owned.Fields, error) {
			tv, err := applyconfigurations.NewTypeConverter(scheme.Scheme).ObjectToTyped(&corev1.Service{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}})
			if err != nil {
				return nil, err
			}
			probe := func(name string) interface{} {
				w := widget()
				w.Name, w.UID = name, types.UID("uid-probe-"+name)
				return serviceFor(w, name)
			}
			return owned.NewFields("Service", typed.ParseableType{Schema: tv.Schema(), TypeRef: tv.TypeRef()},
				[2]interface{}{probe("p1"), probe("p2")})
		},
		ReadStatus: func(*corev1.Service) struct{} { return struct{}{} },
		Client: func(clientset kubernetes.Interface, namespace string) owned.Client[*corev1.Service,
			*corev1.ServiceList, *corev1ac.ServiceApplyConfiguration] {
			return clientset.CoreV1().Services(namespace)
		},
	}
}

// services is the Service "web" a Widget asks for, registered.
var services = servicesAsking(func(w *metav1.PartialObjectMetadata) *corev1ac.ServiceApplyConfiguration {
	return serviceFor(w, "web")
})

// nameTaken and refused word what stops a Widget's reconcile.
func nameTaken(kind string, object metav1.Object) error {
	return &problem{kind + " " + object.GetName() + " is taken"}
}

func refused(action, kind, name string, _ error) error {
	return &problem{"cannot " + action + " " + kind + " " + name}
}

type problem struct{ message string }

func (p *problem) Error() string { return p.message }

// servedService is what the API server holds of the Service w asks for.
func servedService(t *testing.T, w *metav1.PartialObjectMetadata, name string) *corev1.Service {
	t.Helper()
	s := &corev1.Service{}
	if err := owned.ToObject(serviceFor(w, name), s); err != nil {
		t.Fatal(err)
	}
	s.UID, s.ResourceVersion = types.UID("uid-svc-"+name), "1"
	s.Spec.Ports[0].Protocol = corev1.ProtocolTCP // defaulted
	return s
}

// serviceFixture is a fake API server holding services, a cache holding
// them as the informer would, and the Writer of a Widget's controller.
type serviceFixture struct {
	client   *k8sfake.Clientset
	indexer  cache.Indexer
	recorder *record.FakeRecorder
	writer   *owned.Writer
}

func newServiceFixture(t *testing.T, served ...*corev1.Service) *serviceFixture {
	t.Helper()
	objects := make([]runtime.Object, 0, len(served))
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, owned.Indexers(widgetKind))
	for _, s := range served {
		objects = append(objects, s.DeepCopy())
		if err := indexer.Add(services.Compact(s)); err != nil {
			t.Fatal(err)
		}
	}
	f := &serviceFixture{client: k8sfake.NewClientset(objects...), indexer: indexer, recorder: record.NewFakeRecorder(10)}
	f.writer = &owned.Writer{Clientset: f.client, FieldManager: "widget-controller",
		Recorder: f.recorder, SyncedReason: "Synced", Refused: refused}
	return f
}

// reconcile reconciles the Service "web" that w asks for.
func (f *serviceFixture) reconcile(t *testing.T, w *metav1.PartialObjectMetadata) error {
	t.Helper()
	return f.reconcileWith(t, w, services)
}

// reconcileWith reconciles the Service that w asks for as registered.
func (f *serviceFixture) reconcileWith(t *testing.T, w *metav1.PartialObjectMetadata,
	registered owned.Registered[*metav1.PartialObjectMetadata]) error {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	f.client.ClearActions()
	return syncService(ctx, registered, f.writer, f.indexer, w)
}

// syncService runs the steps of a sync on the Service w asks for, as the
// syncOwned in the repository root does on each kind a Foo owns.
func syncService(ctx context.Context, services owned.Registered[*metav1.PartialObjectMetadata], writer *owned.Writer,
	indexer cache.Indexer, w *metav1.PartialObjectMetadata) error {
	want := services.Want(w)
	object, err := services.Get(indexer, w.Namespace, want.Name)
	if apierrors.IsNotFound(err) {
		object, err = services.Create(ctx, writer, w, want)
	}
	if err != nil {
		return err
	}
	if !owned.ControlledBy(object, w, widgetKind) {
		return nameTaken(want.Kind, object)
	}
	if _, err := services.Repair(ctx, writer, w, want, object); err != nil {
		return err
	}
	return services.DeleteStale(ctx, writer, indexer, w, want.Name)
}

// expect checks the writes made and the events recorded, in order.
func (f *serviceFixture) expect(t *testing.T, writes []string, events ...string) {
	t.Helper()
	var got []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		name := ""
		switch a := a.(type) {
		case core.CreateAction:
			name = a.GetObject().(metav1.Object).GetName()
		case core.PatchAction:
			name = a.GetName() + " " + string(a.GetPatchType())
		case core.DeleteAction:
			name = a.GetName()
		}
		got = append(got, a.GetVerb()+" "+a.GetResource().Resource+" "+name)
	}
	if strings.Join(got, "; ") != strings.Join(writes, "; ") {
		t.Errorf("writes %q, want %q", got, writes)
	}
	var gotEvents []string
	for len(f.recorder.Events) > 0 {
		gotEvents = append(gotEvents, <-f.recorder.Events)
	}
	if strings.Join(gotEvents, "; ") != strings.Join(events, "; ") {
		t.Errorf("events %q, want %q", gotEvents, events)
	}
}

func TestAnotherKindIsCreated(t *testing.T) {
	f := newServiceFixture(t)
	if err := f.reconcile(t, widget()); err != nil {
		t.Fatal(err)
	}
	f.expect(t, []string{"create services web"}, "Normal Synced Created Service web")
	got, err := f.client.CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !owned.ControlledBy(got, widget(), widgetKind) || got.Spec.Ports[0].Port != 80 {
		t.Errorf("created %+v, want the Widget's Service on port 80", got)
	}
}

func TestAnotherKindAtRestIsNotWritten(t *testing.T) {
	f := newServiceFixture(t, servedService(t, widget(), "web"))
	if err := f.reconcile(t, widget()); err != nil {
		t.Fatal(err)
	}
	f.expect(t, nil)
}

func TestAnotherKindIsRepairedKeepingForeignFields(t *testing.T) {
	s := servedService(t, widget(), "web")
	s.Labels["team"] = "payments"      // someone else's
	delete(s.Labels, "app")            // ours, removed by hand
	s.Spec.Selector["app"] = "another" // ours, changed by hand
	f := newServiceFixture(t, s)
	if err := f.reconcile(t, widget()); err != nil {
		t.Fatal(err)
	}
	f.expect(t, []string{"patch services web application/apply-patch+yaml"},
		"Normal Synced Updated Service web: .metadata.labels.app, .spec.selector") // an atomic map
	got, err := f.client.CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["team"] != "payments" || got.Labels["app"] != "w" || got.Spec.Selector["app"] != "w" {
		t.Errorf("after repair: labels %v, selector %v", got.Labels, got.Spec.Selector)
	}
}

// A create records what it set as the controller's update, not its apply:
// the first repair hands it over, conditional on the version the cache
// holds, and the apply then gives up what the Widget stopped asking for.
func TestAnotherKindCreatedGivesUpAValueTheOwnerStopsAskingFor(t *testing.T) {
	f := newServiceFixture(t)
	if err := f.reconcile(t, widget()); err != nil {
		t.Fatal(err)
	}
	f.expect(t, []string{"create services web"}, "Normal Synced Created Service web")
	created, err := f.client.CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(created); got != "widget-controller Update" {
		t.Errorf("created Service's managers %q, want the controller's update", got)
	}
	cached, err := services.TransformFor("widget-controller")(created) // as the informer would
	if err != nil {
		t.Fatal(err)
	}
	if !cached.(*owned.Object[struct{}]).ManagedByUpdate {
		t.Error("the cached Service does not say its fields are the controller's update")
	}
	if err := f.indexer.Add(cached); err != nil {
		t.Fatal(err)
	}
	// The Widget's Service now serves https on 443: the old port is no value it sets.
	if err := f.reconcileWith(t, widget(), servicesAsking(func(w *metav1.PartialObjectMetadata) *corev1ac.ServiceApplyConfiguration {
		s := serviceFor(w, "web")
		s.Spec.Ports[0].WithTargetPort(intstr.FromInt32(8443)).WithName("https").WithPort(443)
		return s
	})); err != nil {
		t.Fatal(err)
	}
	f.expect(t, []string{"patch services web application/json-patch+json", "patch services web application/apply-patch+yaml"},
		`Normal Synced Updated Service web: .spec.ports[port=443,protocol="TCP"]`)
	got, err := f.client.CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Ports) != 1 || got.Spec.Ports[0].Name != "https" || got.Spec.Ports[0].Port != 443 {
		t.Errorf("ports %+v, want https on 443 alone", got.Spec.Ports)
	}
	if m := managers(got); m != "widget-controller Apply" {
		t.Errorf("repaired Service's managers %q, want the controller's apply alone", m)
	}
}

// A Service changed since the cache saw it is not handed over: the Widget is
// synced again once the cache shows the change.
func TestAnotherKindChangedSinceCachedIsNotHandedOver(t *testing.T) {
	s := servedService(t, widget(), "web")
	s.Spec.Selector["app"] = "another"
	s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "widget-controller", Operation: "Update"}}
	cached := services.CompactFor(s, "widget-controller")
	s.ResourceVersion = "2"
	f := newServiceFixture(t, s)
	if err := f.indexer.Update(cached); err != nil {
		t.Fatal(err)
	}
	if err := f.reconcile(t, widget()); !apierrors.IsConflict(err) {
		t.Fatalf("reconcile error %v, want a conflict", err)
	}
	f.expect(t, nil)
}

// managers lists obj's managedFields entries, "manager operation".
func managers(obj metav1.Object) string {
	entries := make([]string, 0, len(obj.GetManagedFields()))
	for _, m := range obj.GetManagedFields() {
		entries = append(entries, m.Manager+" "+string(m.Operation))
	}
	return strings.Join(entries, "; ")
}

func TestAnotherKindNotOwnedIsNeverModified(t *testing.T) {
	s := servedService(t, widget(), "web")
	s.OwnerReferences = nil
	f := newServiceFixture(t, s)
	err := f.reconcile(t, widget())
	if err == nil || err.Error() != "Service web is taken" {
		t.Fatalf("reconcile error %v, want the name taken", err)
	}
	f.expect(t, nil)
}

func TestAnotherKindUnderAnOldNameIsDeleted(t *testing.T) {
	f := newServiceFixture(t, servedService(t, widget(), "old"))
	if err := f.reconcile(t, widget()); err != nil {
		t.Fatal(err)
	}
	f.expect(t, []string{"create services web", "delete services old"},
		"Normal Synced Created Service web", "Normal Synced Deleted Service old: replaced by web")
}

func TestAnotherKindRefusedIsAProblem(t *testing.T) {
	f := newServiceFixture(t)
	f.client.PrependReactor("create", "services", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("services"), "web", errors.New("quota"))
	})
	err := f.reconcile(t, widget())
	if err == nil || err.Error() != "cannot create Service web" {
		t.Fatalf("reconcile error %v, want the create refused", err)
	}
	f.expect(t, []string{"create services web"})
}
