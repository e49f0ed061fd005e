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
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/foocache"
	"github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/fake"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions"
	"github.com/kube-samples/sample-controller/pkg/metrics"
)

// fixture is a controller on fake clientsets whose caches the test fills by
// hand. Informers are never started: a sync sees exactly the objects the test
// put in the caches, and the fakes record every API call it makes.
type fixture struct {
	t *testing.T

	client     *fake.Clientset
	kubeclient *k8sfake.Clientset
	controller *Controller
	recorder   *record.FakeRecorder

	// Objects in the caches as the informer transform keeps them
	// (foocache.Transform, desired.TransformDeployment); also on the fake API
	// servers, complete.
	foos        []*samplev1beta1.Foo
	deployments []*appsv1.Deployment
	// Objects only on the fake API server, not in the cache: what the
	// label-filtered Deployment informer does not see.
	uncachedDeployments []*appsv1.Deployment
	// untrimmedFoos caches complete Foos, as if there were no informer
	// transform. (Deployments are always cached as the controller reads
	// them, as desired.CachedDeployment.)
	untrimmedFoos bool
	// admission says when a worker may sync (Config.Admission); nil for at once.
	admission admission
}

// admission is what Config.Admission is: pkg/replicas' Scope, or a test's.
type admission interface {
	Admit(ctx context.Context) (release func(), err error)
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t}
}

func (f *fixture) newController(ctx context.Context) {
	f.t.Helper()
	objects := make([]runtime.Object, 0, len(f.foos))
	kubeobjects := make([]runtime.Object, 0, len(f.deployments)+len(f.uncachedDeployments))
	for _, foo := range f.foos {
		objects = append(objects, foo)
	}
	for _, d := range append(append([]*appsv1.Deployment{}, f.deployments...), f.uncachedDeployments...) {
		kubeobjects = append(kubeobjects, d)
	}
	// The Foo fake is the simple one: the field-managed fake needs an
	// OpenAPI schema of Foo, and the controller never applies Foos.
	f.client = fake.NewSimpleClientset(objects...)
	f.kubeclient = k8sfake.NewClientset(kubeobjects...)

	i := informers.NewSharedInformerFactory(f.client, 0)
	deploymentInformer, err := desired.NewDeploymentInformer(f.kubeclient, metav1.NamespaceAll, 0, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	config := Config{}
	if f.admission != nil {
		config.Admission = f.admission
	}
	c, err := NewController(ctx, f.kubeclient, f.client, deploymentInformer, i.Samplecontroller().V1beta1().Foos(),
		config)
	if err != nil {
		f.t.Fatal(err)
	}
	c.deploymentsSynced = alwaysReady
	c.foosSynced = alwaysReady
	f.recorder = record.NewFakeRecorder(100)
	c.recorder = recordedInMemory{f.recorder}
	c.status.Recorder = c.recorder

	for _, foo := range f.foos {
		f.addToCache(c.foosIndexer, foo.DeepCopy())
	}
	for _, d := range f.deployments {
		f.addToCache(deploymentCache(c), d.DeepCopy())
	}
	f.controller = c
}

// addToCache adds obj to a cache as the informer would: through the informer
// transform, which trims a Foo in place (unless f.untrimmedFoos) and keeps a
// Deployment as a desired.CachedDeployment.
func (f *fixture) addToCache(indexer cache.Indexer, obj interface{}) {
	f.t.Helper()
	var err error
	switch o := obj.(type) {
	case *samplev1beta1.Foo:
		if !f.untrimmedFoos {
			obj, err = foocache.Transform(o)
		}
	case *appsv1.Deployment:
		obj, err = desired.TransformDeployment(o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	if err := indexer.Add(obj); err != nil {
		f.t.Fatal(err)
	}
}

func alwaysReady() bool { return true }

// recordedInMemory is the controller's event recorder in tests: a
// FakeRecorder, whose events are in memory already at shutdown.
type recordedInMemory struct{ *record.FakeRecorder }

func (recordedInMemory) Shutdown(context.Context, time.Duration) {}

// deploymentCache is the controller's Deployment cache.
func deploymentCache(c *Controller) cache.Indexer {
	return c.informers[1].GetIndexer() // NewController's: the Foo informer's, then the Deployment informer's
}

// build builds the controller, once: a test that changes the fakes before
// its first sync calls it first.
func (f *fixture) build() {
	f.t.Helper()
	if f.controller == nil {
		_, ctx := ktesting.NewTestContext(f.t)
		f.newController(ctx)
	}
}

// answerStatusWritesAtVersion2 makes the fake API server answer each status
// write with foo as stored at resourceVersion 2, passed through edit when not
// nil: what the API server stored of the write.
func (f *fixture) answerStatusWritesAtVersion2(foo *samplev1beta1.Foo, edit func(stored *samplev1beta1.Foo)) {
	f.build()
	f.client.PrependReactor("patch", samplecontroller.FooResource, func(core.Action) (bool, runtime.Object, error) {
		stored := foo.DeepCopy()
		stored.ResourceVersion = "2"
		if edit != nil {
			edit(stored)
		}
		return true, stored, nil
	})
}

// sync runs one sync of the Foo and returns its error.
func (f *fixture) sync(foo *samplev1beta1.Foo) error {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	f.build()
	f.client.ClearActions()
	f.kubeclient.ClearActions()
	return f.controller.syncHandler(ctx, cache.MetaObjectToName(foo))
}

// writes returns the API calls other than reads (list, watch, get are the
// informers' and the AlreadyExists path's business, checked separately).
func writes(actions []core.Action) []core.Action {
	ret := make([]core.Action, 0, len(actions))
	for _, a := range actions {
		switch a.GetVerb() {
		case "list", "watch", "get":
			continue
		}
		ret = append(ret, a)
	}
	return ret
}

// describe renders an action as "verb resource[/subresource] name" so tests can
// compare the exact list of calls.
func describe(a core.Action) string {
	res := a.GetResource().Resource
	if sub := a.GetSubresource(); sub != "" {
		res += "/" + sub
	}
	name := ""
	switch a := a.(type) {
	case core.CreateAction: // or a core.UpdateAction: the two have the same methods
		name = a.GetObject().(metav1.Object).GetName()
	case core.PatchAction:
		name = a.GetName() + " " + string(a.GetPatchType())
	case core.DeleteAction:
		name = a.GetName()
	case core.GetAction:
		name = a.GetName()
	}
	return strings.TrimSpace(a.GetVerb() + " " + res + " " + name)
}

func (f *fixture) expectActions(kind string, got []core.Action, want ...string) {
	f.t.Helper()
	gotDesc := make([]string, 0, len(got))
	for _, a := range got {
		gotDesc = append(gotDesc, describe(a))
	}
	if strings.Join(gotDesc, "; ") != strings.Join(want, "; ") {
		f.t.Errorf("%s actions:\n got: %q\nwant: %q", kind, gotDesc, want)
	}
}

func (f *fixture) expectKubeWrites(want ...string) {
	f.t.Helper()
	f.expectActions("kube", writes(f.kubeclient.Actions()), want...)
}

func (f *fixture) expectFooWrites(want ...string) {
	f.t.Helper()
	f.expectActions("foo", writes(f.client.Actions()), want...)
}

// expectEvents checks the events recorded since the last call, in order.
func (f *fixture) expectEvents(want ...string) {
	f.t.Helper()
	var got []string
	for {
		select {
		case e := <-f.recorder.Events:
			got = append(got, e)
			continue
		default:
		}
		break
	}
	if len(got) != len(want) {
		f.t.Errorf("events:\n got: %q\nwant prefixes: %q", got, want)
		return
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			f.t.Errorf("event %d: got %q, want prefix %q", i, got[i], want[i])
		}
	}
}

// writtenStatus returns the status the last Foo write set: the value of its
// JSON patch replacing /status.
func (f *fixture) writtenStatus() samplev1beta1.FooStatus {
	f.t.Helper()
	acts := writes(f.client.Actions())
	if len(acts) == 0 {
		f.t.Fatal("no Foo write")
	}
	patch, ok := acts[len(acts)-1].(core.PatchAction)
	if !ok || patch.GetPatchType() != types.JSONPatchType {
		f.t.Fatalf("last Foo write is not a JSON patch: %s", describe(acts[len(acts)-1]))
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch.GetPatch(), &ops); err != nil {
		f.t.Fatal(err)
	}
	// The write is conditional on the resourceVersion the status was
	// computed from, then replaces the whole status.
	if len(ops) != 2 || ops[0].Op != "replace" || ops[0].Path != "/metadata/resourceVersion" || ops[1].Op != "add" || ops[1].Path != "/status" {
		f.t.Fatalf("status patch %s, want a resourceVersion precondition and one add of /status", patch.GetPatch())
	}
	var status samplev1beta1.FooStatus
	if err := json.Unmarshal(ops[1].Value, &status); err != nil {
		f.t.Fatal(err)
	}
	return status
}

func expectReady(t *testing.T, status samplev1beta1.FooStatus, want metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(status.Conditions, samplecontroller.ConditionReady)
	if c == nil {
		t.Fatalf("no Ready condition in %+v", status)
	}
	if c.Status != want || c.Reason != reason {
		t.Errorf("Ready = %s/%s (%q), want %s/%s", c.Status, c.Reason, c.Message, want, reason)
	}
	return c
}

func TestCreatesDeployment(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	f.foos = append(f.foos, foo)

	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites("create deployments test-deployment")
	f.expectFooWrites("patch foos/status test application/json-patch+json")
	f.expectEvents("Normal Synced Created Deployment test-deployment")

	created := writes(f.kubeclient.Actions())[0].(core.CreateAction).GetObject().(*appsv1.Deployment)
	if !metav1.IsControlledBy(created, foo) {
		t.Errorf("created Deployment is not controlled by the Foo: %+v", created.OwnerReferences)
	}
	if *created.Spec.Replicas != 1 || created.Labels["app"] != "nginx" || created.Labels["controller"] != "test" ||
		created.Labels[samplecontroller.LabelManagedBy] != samplecontroller.ControllerName {
		t.Errorf("unexpected Deployment: replicas %d labels %v", *created.Spec.Replicas, created.Labels)
	}
	if c := created.Spec.Template.Spec.Containers; len(c) != 1 || c[0].Name != "nginx" || c[0].Image != desired.ContainerImage {
		t.Errorf("unexpected containers %+v", c)
	}
	status := f.writtenStatus()
	if status.ObservedGeneration != 1 || status.AvailableReplicas != 0 || status.Selector != "app=nginx,controller=test" {
		t.Errorf("unexpected status %+v", status)
	}
	expectReady(t, status, metav1.ConditionFalse, samplecontroller.ReasonProgressing)
}

func TestInSyncMakesNoWrites(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 3)
	d := testfixtures.OwnedDeployment(t, foo)
	f.foos = append(f.foos, testfixtures.WithSyncedStatus(t, foo, d))
	f.deployments = append(f.deployments, d)

	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites()
	f.expectFooWrites()
	f.expectEvents()
	if n := len(f.client.Actions()) + len(f.kubeclient.Actions()); n != 0 {
		t.Errorf("a sync in steady state made %d API calls, want 0", n)
	}
}

func TestStaleStatusIsTheOnlyWrite(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 2)
	d := testfixtures.OwnedDeployment(t, foo)
	f.foos = append(f.foos, foo) // status never written
	f.deployments = append(f.deployments, d)

	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites()
	f.expectFooWrites("patch foos/status test application/json-patch+json")
	f.expectEvents() // a status write is no edge worth an event
	status := f.writtenStatus()
	if status.AvailableReplicas != 2 || status.Replicas != 2 {
		t.Errorf("status replicas: %+v", status)
	}
	expectReady(t, status, metav1.ConditionTrue, samplecontroller.ReasonAvailable)
}

func TestUpdatesReplicas(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	d := testfixtures.OwnedDeployment(t, foo)
	d.ResourceVersion = "41"
	foo.Spec.Replicas = ptr.To[int32](3)
	foo.Generation = 2
	f.foos = append(f.foos, foo)
	f.deployments = append(f.deployments, d)

	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites("patch deployments test-deployment application/apply-patch+yaml")
	f.expectFooWrites("patch foos/status test application/json-patch+json")
	f.expectEvents("Normal Synced Updated Deployment test-deployment: .spec.replicas")

	patch := appliedPatch(t, f)
	if got := patch["spec"].(map[string]interface{})["replicas"]; got != float64(3) {
		t.Errorf("applied replicas %v, want 3", got)
	}
	// Conditional on the Deployment the drift was seen on: a replica
	// acting on a stale cache gets 409 instead of undoing a newer write.
	if got := patch["metadata"].(map[string]interface{})["resourceVersion"]; got != "41" {
		t.Errorf("applied resourceVersion %v, want 41", got)
	}
	status := f.writtenStatus()
	if status.ObservedGeneration != 2 {
		t.Errorf("observedGeneration %d, want 2", status.ObservedGeneration)
	}
	// The fake applied the patch, so the Deployment now asks for 3 pods
	// but its status still counts 1.
	expectReady(t, status, metav1.ConditionFalse, samplecontroller.ReasonProgressing)
}

// appliedPatch decodes the body of the single server-side apply the sync made.
func appliedPatch(t *testing.T, f *fixture) map[string]interface{} {
	t.Helper()
	var patch map[string]interface{}
	for _, a := range f.kubeclient.Actions() {
		if p, ok := a.(core.PatchAction); ok {
			if patch != nil {
				t.Fatal("more than one patch")
			}
			if err := json.Unmarshal(p.GetPatch(), &patch); err != nil {
				t.Fatal(err)
			}
			if opts := p.(core.PatchActionImpl).PatchOptions; opts.FieldManager != samplecontroller.ControllerName || opts.Force == nil || !*opts.Force {
				t.Errorf("apply options %+v, want field manager %s and force", opts, samplecontroller.ControllerName)
			}
		}
	}
	if patch == nil {
		t.Fatal("no patch")
	}
	return patch
}

func TestRepairsDriftKeepingForeignFields(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 2)
	d := testfixtures.OwnedDeployment(t, foo)
	d.Labels["team"] = "payments"                        // someone else's label
	delete(d.Labels, "controller")                       // ours, removed by hand
	d.Spec.Template.Spec.Containers[0].Image = "busybox" // ours, changed by hand
	f.foos = append(f.foos, testfixtures.WithSyncedStatus(t, foo, d))
	f.deployments = append(f.deployments, d)

	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites("patch deployments test-deployment application/apply-patch+yaml")
	f.expectEvents(`Normal Synced Updated Deployment test-deployment: .metadata.labels.controller, .spec.template.spec.containers[name="nginx"].image`)

	patch := appliedPatch(t, f)
	applied := patch["metadata"].(map[string]interface{})["labels"].(map[string]interface{})
	if applied["controller"] != "test" {
		t.Errorf("apply does not restore the controller label: %v", applied)
	}
	if _, ok := applied["team"]; ok {
		t.Errorf("apply claims a foreign label: %v", applied)
	}
	// The fake API server merged the apply: the foreign label survives, the
	// hand edits are reverted.
	got, err := f.kubeclient.AppsV1().Deployments(d.Namespace).Get(context.Background(), d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["team"] != "payments" || got.Labels["controller"] != "test" || got.Spec.Template.Spec.Containers[0].Image != desired.ContainerImage {
		t.Errorf("after repair: labels %v image %s", got.Labels, got.Spec.Template.Spec.Containers[0].Image)
	}
}

// A create records the fields it set as the controller's update, not its
// apply. The first repair hands them to the apply (a JSON patch of
// managedFields, conditional on the version the cache holds), then applies:
// the Deployment ends with the controller's apply as its only manager, so
// that a field the Foo stops asking for is given up.
func TestFirstRepairOfACreatedDeploymentHandsItsFieldsToTheApply(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	f.foos = append(f.foos, foo)
	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites("create deployments test-deployment")
	f.expectEvents("Normal Synced Created Deployment test-deployment")
	deployments := f.kubeclient.AppsV1().Deployments(foo.Namespace)
	created, err := deployments.Get(context.Background(), "test-deployment", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(created); got != "sample-controller Update" {
		t.Fatalf("the created Deployment's managers are %q, want the controller's update", got)
	}
	f.addToCache(deploymentCache(f.controller), created) // as the informer would: ManagedByUpdate

	scaled := foo.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](2)
	if err := f.controller.foosIndexer.Update(scaled); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(scaled); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites("patch deployments test-deployment application/json-patch+json",
		"patch deployments test-deployment application/apply-patch+yaml")
	f.expectEvents("Normal Synced Updated Deployment test-deployment: .spec.replicas")
	repaired, err := deployments.Get(context.Background(), "test-deployment", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := managers(repaired); got != "sample-controller Apply" {
		t.Errorf("the repaired Deployment's managers are %q, want the controller's apply alone", got)
	}
	if *repaired.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *repaired.Spec.Replicas)
	}
}

// managers lists obj's managedFields entries, "manager operation".
func managers(obj metav1.Object) string {
	entries := make([]string, 0, len(obj.GetManagedFields()))
	for _, m := range obj.GetManagedFields() {
		entries = append(entries, m.Manager+" "+string(m.Operation))
	}
	return strings.Join(entries, "; ")
}

func TestUnownedDeploymentIsNeverModified(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	d := testfixtures.OwnedDeployment(t, foo)
	d.OwnerReferences = nil
	f.foos = append(f.foos, foo)
	f.deployments = append(f.deployments, d)

	err := f.sync(foo)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("sync error %v, want one naming the existing Deployment", err)
	}
	f.expectKubeWrites()
	f.expectFooWrites("patch foos/status test application/json-patch+json")
	f.expectEvents(`Warning ResourceExists Deployment "test-deployment" already exists and is not managed by this Foo (it is controlled by no Foo)`)
	expectReady(t, f.writtenStatus(), metav1.ConditionFalse, samplecontroller.ReasonResourceExists)

	// The retry finds the problem reported already: no write, no event, but
	// still an error so the Foo keeps being retried with backoff.
	foo = foo.DeepCopy()
	foo.Status = f.writtenStatus()
	f.foos[0] = foo
	f.controller = nil
	if err := f.sync(foo); err == nil {
		t.Fatal("retry succeeded, want the error again")
	}
	f.expectKubeWrites()
	f.expectFooWrites()
	f.expectEvents()
}

func TestSecondFooForTheSameNameIsRefused(t *testing.T) {
	f := newFixture(t)
	first := testfixtures.NewFoo("first", 1)
	second := testfixtures.NewFoo("second", 1)
	second.Spec.Deployment.Name = first.Spec.Deployment.Name
	d := testfixtures.OwnedDeployment(t, first)
	f.foos = append(f.foos, testfixtures.WithSyncedStatus(t, first, d), second)
	f.deployments = append(f.deployments, d)

	if err := f.sync(second); err == nil {
		t.Fatal("want an error for the second Foo")
	}
	f.expectKubeWrites()
	f.expectFooWrites("patch foos/status second application/json-patch+json")
	f.expectEvents(`Warning ResourceExists Deployment "first-deployment" already exists and is not managed by this Foo (it is controlled by Foo "first")`)

	if err := f.sync(first); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites()
	f.expectFooWrites()
}

// A Deployment the cache does not see (it lacks the managed-by label) is
// discovered through the API: the create fails, a GET shows whose it is.
func TestUncachedNameCollision(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	d := testfixtures.OwnedDeployment(t, foo)
	d.OwnerReferences = nil
	d.Labels = map[string]string{"app": "someone-elses"}
	f.foos = append(f.foos, foo)
	f.uncachedDeployments = append(f.uncachedDeployments, d)

	if err := f.sync(foo); err == nil {
		t.Fatal("want an error")
	}
	f.expectKubeWrites("create deployments test-deployment")
	f.expectActions("kube", f.kubeclient.Actions(), "create deployments test-deployment", "get deployments test-deployment")
	f.expectEvents("Warning ResourceExists")
	stored, _ := f.kubeclient.AppsV1().Deployments(d.Namespace).Get(context.Background(), d.Name, metav1.GetOptions{})
	if stored.Labels["app"] != "someone-elses" || stored.ResourceVersion != d.ResourceVersion {
		t.Errorf("unowned Deployment was modified: %+v", stored.ObjectMeta)
	}
}

// Our own Deployment that lost the managed-by label dropped out of the cache;
// the create collides, the GET shows it is ours, and an apply restores it.
func TestUncachedOwnDeploymentIsRelabelled(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	d := testfixtures.OwnedDeployment(t, foo)
	delete(d.Labels, samplecontroller.LabelManagedBy)
	f.foos = append(f.foos, testfixtures.WithSyncedStatus(t, foo, d))
	f.uncachedDeployments = append(f.uncachedDeployments, d)

	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites("create deployments test-deployment", "patch deployments test-deployment application/apply-patch+yaml")
	f.expectEvents("Normal Synced Updated Deployment test-deployment: .metadata.labels.app.kubernetes.io/managed-by")
}

func TestFooDeletedDoesNothing(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	// Not in the cache: deleted.
	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	f.expectKubeWrites()
	f.expectFooWrites()
	f.expectEvents()
}

func TestInvalidSpec(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate  func(*samplev1beta1.Foo)
		message string
	}{
		"empty deployment name": {func(f *samplev1beta1.Foo) { f.Spec.Deployment.Name = "" }, "spec.deployment.name: Required value"},
		"Bad_Name":              {func(f *samplev1beta1.Foo) { f.Spec.Deployment.Name = "Bad_Name" }, `spec.deployment.name: Invalid value: "Bad_Name"`},
		"replicas 11":           {func(f *samplev1beta1.Foo) { f.Spec.Replicas = ptr.To[int32](11) }, "spec.replicas: Invalid value: 11: must be between 1 and 10"},
		"replicas 0":            {func(f *samplev1beta1.Foo) { f.Spec.Replicas = ptr.To[int32](0) }, "spec.replicas: Invalid value: 0"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			foo := testfixtures.NewFoo("test", 1)
			tc.mutate(foo)
			f.foos = append(f.foos, foo)

			if err := f.sync(foo); err != nil {
				t.Fatalf("an invalid spec must not be retried, got error %v", err)
			}
			f.expectKubeWrites()
			f.expectFooWrites("patch foos/status test application/json-patch+json")
			f.expectEvents("Warning InvalidSpec Invalid spec: " + tc.message)
			c := expectReady(t, f.writtenStatus(), metav1.ConditionFalse, samplecontroller.ReasonInvalidSpec)
			if !strings.Contains(c.Message, tc.message) {
				t.Errorf("condition message %q does not contain %q", c.Message, tc.message)
			}
		})
	}
}

func TestInvalidSpecIsNotRequeued(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	foo.Spec.Deployment.Name = ""
	f.foos = append(f.foos, foo)
	_, ctx := ktesting.NewTestContext(t)
	f.newController(ctx)

	f.controller.enqueueFoo(foo, true)
	if !f.controller.processNextWorkItem(ctx) {
		t.Fatal("queue shut down")
	}
	key := cache.MetaObjectToName(foo)
	if n := f.controller.workqueue.NumRequeues(key); n != 0 {
		t.Errorf("invalid Foo requeued %d times, want 0", n)
	}
	if l := f.controller.workqueue.Len(); l != 0 {
		t.Errorf("queue length %d, want 0", l)
	}
}

func TestFailedSyncIsRequeued(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	d := testfixtures.OwnedDeployment(t, foo)
	d.OwnerReferences = nil
	f.foos = append(f.foos, foo)
	f.deployments = append(f.deployments, d)
	_, ctx := ktesting.NewTestContext(t)
	f.newController(ctx)

	f.controller.enqueueFoo(foo, true)
	f.controller.processNextWorkItem(ctx)
	if n := f.controller.workqueue.NumRequeues(cache.MetaObjectToName(foo)); n != 1 {
		t.Errorf("failed Foo requeued %d times, want 1", n)
	}
}

func TestRenameDeletesOldDeployment(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	old := testfixtures.OwnedDeployment(t, foo)
	foo.Spec.Deployment.Name = "renamed"
	foo.Generation = 2
	f.foos = append(f.foos, foo)
	f.deployments = append(f.deployments, old)

	if err := f.sync(foo); err != nil {
		t.Fatal(err)
	}
	// The new Deployment first, then the old one goes: no moment without.
	f.expectKubeWrites("create deployments renamed", "delete deployments test-deployment")
	f.expectFooWrites("patch foos/status test application/json-patch+json")
	f.expectEvents(
		"Normal Synced Created Deployment renamed",
		"Normal Synced Deleted Deployment test-deployment: replaced by renamed")
	del := writes(f.kubeclient.Actions())[1].(core.DeleteAction)
	if pre := del.GetDeleteOptions().Preconditions; pre == nil || pre.UID == nil || *pre.UID != old.UID {
		t.Errorf("delete without the UID precondition: %+v", del.GetDeleteOptions())
	}
}

// Renamed to a name someone else holds: the Foo keeps its working Deployment
// until it can have the new one.
func TestRenameToTakenNameKeepsOldDeployment(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	old := testfixtures.OwnedDeployment(t, foo)
	taken := testfixtures.OwnedDeployment(t, foo)
	taken.Name, taken.UID, taken.OwnerReferences = "taken", "uid-taken", nil
	foo.Spec.Deployment.Name = "taken"
	f.foos = append(f.foos, foo)
	f.deployments = append(f.deployments, old, taken)

	if err := f.sync(foo); err == nil {
		t.Fatal("want the ResourceExists error")
	}
	f.expectKubeWrites()
	f.expectEvents("Warning ResourceExists")
}

// A status write that finds the cache stale (409 Conflict) is retried, and
// counted as a conflict, not an error.
func TestConflictIsRetried(t *testing.T) {
	f := newFixture(t)
	foo := testfixtures.NewFoo("test", 1)
	d := testfixtures.OwnedDeployment(t, foo)
	f.foos = append(f.foos, foo)
	f.deployments = append(f.deployments, d)
	_, ctx := ktesting.NewTestContext(t)
	f.newController(ctx)
	f.client.PrependReactor("patch", samplecontroller.FooResource, func(core.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(samplev1beta1.Resource(samplecontroller.FooResource), foo.Name, fmt.Errorf("the object has been modified"))
	})

	before := reconcileCount(t, "conflict")
	f.controller.enqueueFoo(foo, true)
	f.controller.processNextWorkItem(ctx)
	if n := f.controller.workqueue.NumRequeues(cache.MetaObjectToName(foo)); n != 1 {
		t.Errorf("requeues %d, want 1", n)
	}
	if got := reconcileCount(t, "conflict") - before; got != 1 {
		t.Errorf("conflicts counted %v, want 1", got)
	}
}

// reconcileCount reads samplecontroller_reconcile_total for one result.
func reconcileCount(t *testing.T, result string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.ReconcileTotal.WithLabelValues(result))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDeploymentEventsEnqueueTheControllingFoo(t *testing.T) {
	foo := testfixtures.NewFoo("test", 1)
	waiting := testfixtures.NewFoo("waiting", 1)
	waiting.Spec.Deployment.Name = foo.Spec.Deployment.Name
	other := testfixtures.NewFoo("other", 1)

	// The handlers get Deployments as the cache keeps them.
	d := testfixtures.OwnedDeployment(t, foo)
	controlled := desired.CacheDeployment(d)
	d.OwnerReferences[0].UID = "an-older-foo"
	staleOwner := desired.CacheDeployment(d)
	d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: "x", Controller: ptr.To(true)}}
	d.Name = "unrelated"
	ownedByOther := desired.CacheDeployment(d)

	for name, tc := range map[string]struct {
		handle func(c *Controller)
		want   []string
	}{
		"add":    {func(c *Controller) { c.handleObject(controlled, true) }, []string{"test"}},
		"delete": {func(c *Controller) { c.onOwnedDelete(controlled) }, []string{"test", "waiting"}},
		"delete tombstone": {func(c *Controller) {
			c.onOwnedDelete(cache.DeletedFinalStateUnknown{Key: "default/x", Obj: controlled})
		}, []string{"test", "waiting"}},
		"controlled by other kind": {func(c *Controller) { c.handleObject(ownedByOther, true) }, nil},
		"stale owner UID":          {func(c *Controller) { c.handleObject(staleOwner, true) }, nil},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.foos = append(f.foos, foo, waiting, other)
			_, ctx := ktesting.NewTestContext(t)
			f.newController(ctx)
			tc.handle(f.controller)

			var got []string
			for f.controller.workqueue.Len() > 0 {
				key, _ := f.controller.workqueue.Get()
				got = append(got, key.Name)
				f.controller.workqueue.Done(key)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("enqueued %v, want %v", got, tc.want)
			}
		})
	}
}

// informedController is a controller on fake clientsets fed by running
// informers, built as main.go builds them, for config.Namespace; the
// informers stop when ctx ends.
func informedController(ctx context.Context, t *testing.T, config Config) (*Controller, *fake.Clientset, *k8sfake.Clientset) {
	t.Helper()
	client := fake.NewSimpleClientset()
	kubeclient := k8sfake.NewClientset()
	i := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(config.Namespace))
	deploymentInformer, err := desired.NewDeploymentInformer(kubeclient, config.Namespace, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewController(ctx, kubeclient, client, deploymentInformer, i.Samplecontroller().V1beta1().Foos(), config)
	if err != nil {
		t.Fatal(err)
	}
	i.Start(ctx.Done())
	go deploymentInformer.RunWithContext(ctx)
	return c, client, kubeclient
}

// The Deployment a sync creates reaches the Deployment informer, whose add
// event queues its Foo again, ahead of the backlog. (The echo of the status
// write goes to the backlog, which nothing feeds here: only the Deployment's
// event can put the Foo in the workers' queue.)
func TestCreatedDeploymentsEventQueuesItsFooAgain(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, client, kubeclient := informedController(ctx, t, Config{})
	if !cache.WaitForCacheSync(ctx.Done(), c.CachesSynced()...) {
		t.Fatal("caches not synced")
	}
	foo := testfixtures.NewFoo("test", 2)
	if _, err := client.SamplecontrollerV1beta1().Foos(foo.Namespace).Create(ctx, foo, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitQueued := func(what string) {
		t.Helper()
		deadline := time.Now().Add(wait30s)
		for c.workqueue.Len() != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d keys queued, want the Foo", what, c.workqueue.Len())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitQueued("Foo created")
	if !c.processNextWorkItem(ctx) {
		t.Fatal("queue shut down")
	}
	if _, err := kubeclient.AppsV1().Deployments(foo.Namespace).Get(ctx, foo.Spec.Deployment.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the sync created no Deployment: %v", err)
	}
	waitQueued("Deployment created")
	if key, _ := c.workqueue.Get(); key != cache.MetaObjectToName(foo) {
		t.Errorf("queued %v, want the Foo %v", key, cache.MetaObjectToName(foo))
	}
}

// The informer pipeline end to end on the fakes, with the informers built as
// main.go builds them: a Foo created through the API reaches the queue, a
// worker's sync creates its Deployment, and the Deployment cache holds it as
// a desired.CachedDeployment.
func TestRunReconcilesThroughInformers(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, client, kubeclient := informedController(ctx, t, Config{})
	done := make(chan error)
	go func() { done <- c.Run(ctx, 2) }()

	foo := testfixtures.NewFoo("test", 2)
	if _, err := client.SamplecontrollerV1beta1().Foos(foo.Namespace).Create(ctx, foo, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait30s)
	for {
		d, err := kubeclient.AppsV1().Deployments(foo.Namespace).Get(ctx, foo.Spec.Deployment.Name, metav1.GetOptions{})
		if err == nil && *d.Spec.Replicas == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Deployment not created: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The Deployment cache holds what NewController's transform keeps.
	for {
		obj, exists, _ := deploymentCache(c).GetByKey(foo.Namespace + "/" + foo.Spec.Deployment.Name)
		if exists {
			if _, ok := obj.(*desired.CachedDeployment); !ok {
				t.Fatalf("the Deployment cache holds a %T, want a *desired.CachedDeployment", obj)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Deployment not cached")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait30s):
		t.Fatal("Run did not return after cancel")
	}
}

const wait30s = 30 * time.Second

// A controller confined to one namespace (Config.Namespace), taking over as
// a standby whose caches were synced before it led, lists the Foos of that
// namespace only: a namespaced Role refuses a list over all namespaces.
func TestTakeoverListsOnlyTheConfiguredNamespace(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, client, _ := informedController(ctx, t, Config{Namespace: "team-a"})
	if !cache.WaitForCacheSync(ctx.Done(), c.CachesSynced()...) {
		t.Fatal("caches not synced")
	}
	done := make(chan error)
	go func() { done <- c.Run(ctx, 1) }()

	// The informer's list, then the takeover's.
	fooLists := func() []string {
		var lists []string
		for _, a := range client.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == samplecontroller.FooResource {
				lists = append(lists, a.GetNamespace())
			}
		}
		return lists
	}
	deadline := time.Now().Add(wait30s)
	for len(fooLists()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := fooLists(), []string{"team-a", "team-a"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Foos listed in namespaces %q, want %q (the informer's list, then the takeover's)", got, want)
	}
}

// What a controller's caches tell the metrics (metrics.Caches, summed over a
// replica's controllers by pkg/metrics): the Foos cached, and the Deployments.
func TestControllerTellsTheMetricsWhatItCaches(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"a", "b"} {
		foo := testfixtures.NewFoo(name, 1)
		f.foos = append(f.foos, foo)
		f.deployments = append(f.deployments, testfixtures.OwnedDeployment(t, foo))
	}
	f.newController(context.Background())
	if got, want := f.controller.OwnedCached(), map[string]int{"deployments": 2}; !maps.Equal(got, want) {
		t.Errorf("OwnedCached() = %v, want %v", got, want)
	}
	cached, err := f.controller.CachedFoos(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(cached) != 2 {
		t.Errorf("CachedFoos(everything) = %d Foos, want 2", len(cached))
	}
}
