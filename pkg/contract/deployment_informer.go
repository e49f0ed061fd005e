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

package contract

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// NewDeploymentInformer returns an informer of the controller's own for the
// Deployments it manages (labelled app.kubernetes.io/managed-by) in
// namespace ("" for all), whose cache holds each as its CachedDeployment,
// with DeploymentIndexers.
//
// Its own, not a shared informer factory's: the factory's Deployment
// informer comes with a typed lister that any other reader of that factory
// would trust to hand out *appsv1.Deployment, and with this transform it
// would hand out *CachedDeployment. Read it through its indexer.
//
// It lists and watches through the typed client as the factory's informer
// does, streaming lists included (cache.ToListWatcherWithWatchListSemantics).
func NewDeploymentInformer(
	client kubernetes.Interface, namespace string, resyncPeriod time.Duration,
) (cache.SharedIndexInformer, error) {
	selector := labels.SelectorFromSet(labels.Set{samplecontroller.LabelManagedBy: samplecontroller.ControllerName}).String()
	deployments := client.AppsV1().Deployments(namespace)
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			return deployments.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			return deployments.Watch(ctx, opts)
		},
	}, client)
	informer := cache.NewSharedIndexInformerWithOptions(lw, &appsv1.Deployment{}, cache.SharedIndexInformerOptions{
		ResyncPeriod: resyncPeriod,
		Indexers:     DeploymentIndexers(),
	})
	if err := informer.SetTransform(TrimForCache); err != nil {
		return nil, err
	}
	return informer, nil
}

// GetCachedDeployment returns the Deployment of that name from indexer, the
// cache of NewDeploymentInformer, or a NotFound error, as a lister would.
func GetCachedDeployment(indexer cache.Indexer, namespace, name string) (*CachedDeployment, error) {
	obj, exists, err := indexer.GetByKey(cache.NewObjectName(namespace, name).String())
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(appsv1.Resource("deployments"), name)
	}
	return obj.(*CachedDeployment), nil
}
