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

package conversionwebhook

import (
	"slices"

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
// So while the CRD's status.storedVersions names a version other than the
// one listed, the Foo cache is not waited for: the replica is ready once the
// other caches have synced (and, beside this check, once the caBundle trusts
// its certificate), takes the webhook's calls, and its list goes through,
// converted by itself if need be. The API server's answer to the failing
// list cannot tell this apart from other failures: it is a 5xx read from
// etcd, and a 429 from its watch cache, which cannot fill itself for the
// same want of conversion; and client-go retries a 429 of a streamed list
// without reporting it. storedVersions says exactly when the cycle can
// arise, and the migration (docs/api-versions.md) ends it.
type SelfWait struct {
	listed         string
	synced         cache.InformerSynced
	storedVersions func() []string
	others         []cache.InformerSynced
}

// NewSelfWait returns the readiness wait of an informer that lists the
// version listed and syncs as synced, given the CRD's storedVersions as last
// seen, beside the caches of others, which need no conversion and must sync.
func NewSelfWait(listed string, synced cache.InformerSynced, storedVersions func() []string,
	others ...cache.InformerSynced,
) *SelfWait {
	return &SelfWait{listed: listed, synced: synced, storedVersions: storedVersions, others: others}
}

// Synced reports whether every other cache holds a full list, and the
// informer's does too unless its list may need a conversion.
func (w *SelfWait) Synced() bool {
	for _, synced := range w.others {
		if !synced() {
			return false
		}
	}
	return w.synced() || w.mayNeedConversion()
}

// mayNeedConversion reports whether etcd may hold an object in a version
// other than the one listed.
func (w *SelfWait) mayNeedConversion() bool {
	return slices.ContainsFunc(w.storedVersions(), func(v string) bool { return v != w.listed })
}
