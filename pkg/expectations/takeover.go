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

package expectations

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	"k8s.io/klog/v2"

	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// FooClient lists Foos from the API server: the typed client of the Foos in a
// namespace, SamplecontrollerV1beta1().Foos(namespace), is one.
type FooClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*samplev1beta1.FooList, error)
}

// RememberChangedWhileStandby is what a standby does when it becomes the
// leader, before it syncs anything: it compares the Foos in cached, the Foo
// informer's store, with those foos, the client of the Foos the informer
// watches, lists page by page from the API server. It remembers as Deleted
// the Foos the API server no longer has, and as Outdated those it holds in
// another version than the cache.
//
// Why: upstream has no standby, and trusts a synced cache. A standby's
// informers may lag by seconds when it takes over: after an API server
// outage they re-list and re-watch with backoff, and their caches still
// count as synced from their first list. Found by the chaos test
// (docs/failure-modes.md, Post-mortems): a new leader created Deployments for
// Foos the user had already deleted, which the garbage collector then
// deleted; and, under load, a new leader scaled a Deployment back to what its
// Foo had asked for before.
//
// The list from the API server is a quorum read: the newest state. A Foo
// that was cached before that list began is certainly gone if the list does
// not have it, and certainly outdated if the list has another version of it.
// A Foo cached only after the list began is left alone: it may be newer.
//
// A failed list is not fatal, and is logged: a Foo deleted meanwhile costs one create, one changed meanwhile a write
// undone when the watch catches up.
func (f *Foos) RememberChangedWhileStandby(ctx context.Context, cached cache.Store, foos FooClient) {
	if err := f.rememberChangedWhileStandby(ctx, cached, foos); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Could not check the Foo cache against the API server")
	}
}

func (f *Foos) rememberChangedWhileStandby(ctx context.Context, cached cache.Store, foos FooClient) error {
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return foos.List(ctx, opts)
	}
	before := cached.List()
	// What the API server's list holds of each Foo, by UID: its version and
	// generation, not the Foo, so that its pages are collected as they go.
	listed := map[types.UID]*metav1.ObjectMeta{}
	err := pager.New(list).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		foo, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		listed[foo.GetUID()] = &metav1.ObjectMeta{ResourceVersion: foo.GetResourceVersion(), Generation: foo.GetGeneration()}
		return nil
	})
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	for _, obj := range before {
		foo, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		current, present := listed[foo.GetUID()]
		switch {
		case !present:
			logger.V(2).Info("Foo deleted while this replica stood by, not syncing it", "foo", klog.KObj(foo))
			f.Deleted.Add(foo.GetUID())
		case current.GetResourceVersion() != foo.GetResourceVersion():
			logger.V(2).Info("Foo changed while this replica stood by, syncing it once the cache shows it",
				"foo", klog.KObj(foo), "cached", foo.GetResourceVersion(), "current", current.GetResourceVersion())
			f.Outdated.ListedNewer(foo, current)
		}
	}
	return nil
}
