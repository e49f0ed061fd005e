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

// Package takeover is what a standby does when it becomes the leader before
// it syncs anything: it lists the Foos from the API server once, remembers
// as deleted the Foos its cache holds that the API server no longer has,
// and as outdated those the API server holds in a newer version.
//
// Why upstream's way is not enough: upstream has no standby, and trusts a
// synced cache. A standby's informers may lag by seconds when it takes over:
// after an API server outage they re-list and re-watch with backoff, and
// their caches still count as synced from their first list. Found by the
// chaos test (docs/failure-modes.md, Chaos): a new leader created
// Deployments for Foos the user had already deleted, which the garbage
// collector then deleted; and, under load, a new leader scaled a Deployment
// back to what its Foo had asked for before.
package takeover

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/pager"
	"k8s.io/klog/v2"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/expectations"
	typedv1alpha1 "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/typed/samplecontroller/v1alpha1"
	listers "github.com/kube-samples/sample-controller/pkg/generated/listers/samplecontroller/v1alpha1"
)

// RememberFoosChangedWhileStandby compares what cached lists with foos, the
// API server: it adds to deleted the Foos the API server no longer has, and
// to outdated those it holds in another version than the cache.
//
// The list from the API server is a quorum read: the newest state. A Foo
// that was cached before that list began is certainly gone if the list does
// not have it, and certainly outdated if the list has another version of it.
// A Foo cached only after the list began is left alone: it may be newer.
func RememberFoosChangedWhileStandby(
	ctx context.Context, cached listers.FooLister, foos typedv1alpha1.FooInterface,
	deleted *expectations.DeletedFoos, outdated *expectations.ReplacedVersions,
) error {
	before, err := cached.List(labels.Everything())
	if err != nil {
		return err
	}
	listed := map[types.UID]string{} // resourceVersion by UID
	err = pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return foos.List(ctx, opts)
	}).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		foo := obj.(*samplev1alpha1.Foo)
		listed[foo.UID] = foo.ResourceVersion
		return nil
	})
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	for _, foo := range before {
		version, present := listed[foo.UID]
		switch {
		case !present:
			logger.V(2).Info("Foo deleted while this replica stood by, not syncing it", "foo", klog.KObj(foo))
			deleted.Add(foo.UID)
		case version != foo.ResourceVersion:
			logger.V(2).Info("Foo changed while this replica stood by, syncing it once the cache shows it",
				"foo", klog.KObj(foo), "cached", foo.ResourceVersion, "current", version)
			outdated.ListedNewer(foo)
		}
	}
	return nil
}
