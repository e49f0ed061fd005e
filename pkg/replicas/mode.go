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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Mode is who filters a shard's objects.
type Mode string

const (
	// ModeServer is when the API server sends the shard's objects alone.
	ModeServer Mode = "server"
	// ModeClient is when the API server sends everything, and the replica drops
	// what is not its shard's (Narrow): the same caches, at the cost of
	// every object crossing the network once per shard held.
	ModeClient Mode = "client"
)

// Lister lists objects of one resource, as a typed client of client-go does.
type Lister func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)

// DetectMode asks the API server for one object of a shard and reads who
// filtered the list: a server that applied the shardSelector echoes it in the
// list's ListMeta.ShardInfo, and one that did not (no ShardedListAndWatch
// feature gate, or older than 1.36) leaves it out. A watch carries no such
// mark, and neither does the streamed list client-go's informers make, so
// this one plain list is the only way to tell.
//
// list must be of a built-in kind, Deployments say: the API server filters
// custom resources too, but in 1.37 it does not echo the selector on their
// lists (unstructured.UnstructuredList has no ShardInfo), so a list of Foos
// would read as not filtered. The feature gate is the API server's, the same
// for every resource.
func DetectMode(ctx context.Context, list Lister, shard Shard) (Mode, error) {
	obj, err := list(ctx, metav1.ListOptions{ShardSelector: shard.Selector().String(), Limit: 1})
	if err != nil {
		return "", fmt.Errorf("listing the shard %s to learn whether the API server filters it: %w", shard, err)
	}
	listMeta, err := meta.ListAccessor(obj)
	if err != nil {
		return "", err
	}
	withInfo, ok := listMeta.(metav1.ShardedListInterface)
	if !ok {
		return "", fmt.Errorf("a list of %T carries no ListMeta", obj)
	}
	if info := withInfo.GetShardInfo(); info != nil && info.Selector != "" {
		return ModeServer, nil
	}
	return ModeClient, nil
}
