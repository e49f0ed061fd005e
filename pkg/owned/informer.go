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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ListWatcher lists and watches the objects of one kind in one namespace:
// a typed client of client-go, such as Deployments(namespace).
type ListWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NewInformer returns an informer of the controller's own for the objects
// that client lists and watches and that carry managedBy, a label and its
// value, whose cache holds each as its Object (transform: the registration's
// TransformFor the controller's field manager), with indexers. clientset
// is the clientset client comes from: client-go asks it whether the server
// streams lists (cache.ToListWatcherWithWatchListSemantics), as a shared
// informer factory's informer does.
//
// narrow, if not nil, narrows what it lists and watches (pkg/replicas'
// Shard.Narrow: the objects of one shard alone).
//
// Its own, not a shared informer factory's: the factory's informer comes
// with a typed lister that any other reader of that factory would trust to
// hand out the kind's Go type, and with this transform it would hand out
// Objects. Read it through its indexer (Registration.Get).
func NewInformer[L runtime.Object](
	transform cache.TransformFunc, client ListWatcher[L], clientset any, managedBy labels.Set,
	example runtime.Object, resyncPeriod time.Duration, indexers cache.Indexers,
	narrow func(*cache.ListWatch) *cache.ListWatch,
) (cache.SharedIndexInformer, error) {
	selector := labels.SelectorFromSet(managedBy).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return client.Watch(ctx, opts)
		},
	}
	if narrow != nil {
		lw = narrow(lw)
	}
	lwSemantics := cache.ToListWatcherWithWatchListSemantics(lw, clientset)
	informer := cache.NewSharedIndexInformerWithOptions(lwSemantics, example, cache.SharedIndexInformerOptions{
		ResyncPeriod: resyncPeriod,
		Indexers:     indexers,
	})
	if err := informer.SetTransform(transform); err != nil {
		return nil, err
	}
	return informer, nil
}
