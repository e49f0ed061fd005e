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

package conversion

import (
	"context"
	"errors"
	"net/http"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// SelfWait breaks the one cycle a replica's readiness can fall into when it
// serves the conversion webhook of the very objects it lists.
//
// A replica is ready once its informer caches hold a full list, so that a
// rollout does not replace a replica that leads by one that cannot. But the
// webhook's Service sends the API server's calls to ready replicas only, and
// while a Foo is stored in a version other than the one the informer lists
// (v1alpha1, after an upgrade from the release that served it alone) the API
// server can answer that list only through the webhook. With no ready
// replica to convert, the list fails, the cache never syncs, no replica
// becomes ready: the upgrade never finishes, and the Foo API stays refused.
// The same holds after every replica restarts at once before the stored
// Foos are migrated.
//
// So the Foo cache counts as synced for readiness also while its list fails
// on the API server's side (a 5xx answer: a conversion that could not be
// made, which the API server reports as InternalError or StorageReadError).
// The replica then takes the webhook's calls, its next list is converted,
// by itself if need be, and its cache syncs. Any other failure (the list
// forbidden, the resource not found, the API server unreachable) keeps the
// replica unready: those it cannot get out of by serving.
type SelfWait struct {
	synced cache.InformerSynced
	// others are the caches whose lists need no conversion: they must
	// sync.
	others []cache.InformerSynced

	mu sync.Mutex
	// failed is whether a list or watch of the informer has failed, and
	// serverError whether the last that failed did with a 5xx answer.
	failed, serverError bool
}

// WatchSelfWait records why informer's list fails, for Synced, beside the
// caches of others. It sets the informer's watch error handler, which then
// also logs as client-go's default does: call it before the informer starts.
func WatchSelfWait(informer cache.SharedIndexInformer, others ...cache.InformerSynced) (*SelfWait, error) {
	w := &SelfWait{synced: informer.HasSynced, others: others}
	err := informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.failed, w.serverError = true, isServerError(err)
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Synced reports whether every other cache holds a full list, and the
// informer's does too or waits for one that only a conversion can give.
func (w *SelfWait) Synced() bool {
	for _, synced := range w.others {
		if !synced() {
			return false
		}
	}
	if w.synced() {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.serverError
}

// isServerError reports whether err is the API server's answer with a 5xx
// status.
func isServerError(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	return status.Status().Code >= http.StatusInternalServerError
}
