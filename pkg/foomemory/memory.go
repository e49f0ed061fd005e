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

// Package foomemory is what the controller remembers of each Foo beyond its
// cache: the parts the production lessons of pkg/expectations, pkg/takeover
// and pkg/prunedstatus keep, gathered so that a Foo's delete forgets them
// all at once.
package foomemory

import (
	"k8s.io/apimachinery/pkg/types"

	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/expectations"
	"github.com/kube-samples/sample-controller/pkg/prunedstatus"
)

// Memory is what the controller remembers of each Foo beyond its cache,
// each part the production lesson of its package. All of it is keyed by the
// Foo's UID and forgotten at once when the cache shows the Foo deleted
// (Forget): a part added here and not to Forget leaks an entry per deleted
// Foo. The versions replaced by a status write and those a takeover found
// outdated are kept apart, as they hold back different steps: an outdated
// Foo is not synced at all, and a Foo whose status write the cache has not
// shown gets its Deployment synced and no status written.
type Memory struct {
	StatusWrites expectations.ReplacedVersions                // by its status write, until the cache shows it
	Deleted      expectations.DeletedFoos                     // the API server said it is gone
	Outdated     expectations.ReplacedVersions                // changed while this replica stood by (pkg/takeover)
	PrunedStatus prunedstatus.Memory[samplev1beta1.FooStatus] // the status an outdated CRD pruned
}

// Forget forgets everything remembered of the Foo uid.
func (m *Memory) Forget(uid types.UID) {
	m.StatusWrites.Forget(uid)
	m.Deleted.Forget(uid)
	m.Outdated.Forget(uid)
	m.PrunedStatus.Forget(uid)
}
