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

package foocache

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	clientset "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions/samplecontroller/v1beta1"
	listers "github.com/kube-samples/sample-controller/pkg/generated/listers/samplecontroller/v1beta1"
)

// NewInformer returns an informer of the Foos of namespace ("" for all), as
// the generated factory's, whose lists and watches narrow, if not nil,
// narrows (pkg/replicas' Shard.Narrow: one shard's Foos). The factory can add
// to a list's options (WithTweakListOptions) but not drop what the API server
// sends, which a server that does not shard its answers makes necessary.
func NewInformer(client clientset.Interface, namespace string, resyncPeriod time.Duration,
	narrow func(*cache.ListWatch) *cache.ListWatch) informers.FooInformer {
	foos := client.SamplecontrollerV1beta1().Foos(namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return foos.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return foos.Watch(ctx, opts)
		},
	}
	if narrow != nil {
		lw = narrow(lw)
	}
	informer := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client),
		&samplev1beta1.Foo{}, resyncPeriod, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return narrowedInformer{informer}
}

// narrowedInformer is a FooInformer of an informer built outside the factory.
type narrowedInformer struct{ informer cache.SharedIndexInformer }

func (i narrowedInformer) Informer() cache.SharedIndexInformer { return i.informer }

func (i narrowedInformer) Lister() listers.FooLister {
	return listers.NewFooLister(i.informer.GetIndexer())
}
