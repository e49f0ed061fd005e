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

package replicas

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadataclient "k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
)

// Sharding is how the replicas split the Foos: into Shards shards (1:
// unsharded), whose ranges are equal or, with Boundaries
// BoundariesWeighted, split at the quantiles of the namespaces holding
// objects of resource Weighed, weighted by how many each holds.
type Sharding struct {
	Shards     int
	Boundaries string
	Weighed    schema.GroupVersionResource
}

// BoundariesEqual splits the hash space into equal ranges: the default.
const BoundariesEqual = "equal"

// countByNamespace returns what counts the objects of resource in each
// namespace of namespace ("" for all): the weights the shards' ranges split
// by (Weigh). It lists their metadata alone (PartialObjectMetadata, as the
// garbage collector reads what it does not need whole), a page of 500 at a
// time, so that the one replica that weighs, that assigned shard 0, holds no
// copy of every Foo.
func countByNamespace(cfg *rest.Config, resource schema.GroupVersionResource, namespace string) (Weigh, error) {
	client, err := metadataclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building metadata client: %w", err)
	}
	return countWith(client.Resource(resource).Namespace(namespace).List), nil
}

// countWith is countByNamespace's Weigh, listing a page with list.
func countWith(list func(context.Context, metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)) Weigh {
	return func(ctx context.Context) (map[string]int, error) {
		pages := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return list(ctx, opts)
		})
		counts := map[string]int{}
		err := pages.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			object, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return fmt.Errorf("listed a %T, not an object's metadata", obj)
			}
			counts[object.Namespace]++
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing the objects' metadata: %w", err)
		}
		return counts, nil
	}
}
