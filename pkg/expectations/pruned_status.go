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
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
)

// PrunedStatuses remember, per Foo, the last status the API server pruned:
// the fields an outdated CRD's schema lacks are dropped from every status
// write, silently.
//
// Why: upstream writes the status again whenever the cache's copy differs
// from what it computed, and a pruned status always differs, so a
// controller running against an outdated CRD would write every Foo's status
// on every sync, forever, and report nothing. Remembered, the same status is
// not written again, and the problem is reported once per Foo (a Warning
// event StatusPruned, PrunedStatusMessage) until the Foo asks for a different
// one.
//
// Its zero value is ready to use.
type PrunedStatuses struct {
	mu    sync.Mutex
	byUID map[types.UID]samplev1beta1.FooStatus
}

// SameAsPruned reports whether status is the one last pruned for the Foo,
// transition times aside: a condition the server dropped comes back with a
// new lastTransitionTime on every sync.
func (p *PrunedStatuses) SameAsPruned(uid types.UID, status samplev1beta1.FooStatus) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev, ok := p.byUID[uid]
	return ok && desired.EqualIgnoringTransitionTimes(prev, status)
}

// Remember records the status pruned for the Foo; it returns true when the
// Foo had none recorded, that is, when this is news to report.
func (p *PrunedStatuses) Remember(uid types.UID, status samplev1beta1.FooStatus) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byUID == nil {
		p.byUID = map[types.UID]samplev1beta1.FooStatus{}
	}
	_, known := p.byUID[uid]
	p.byUID[uid] = status
	return !known
}

// Forget drops what is recorded for the Foo: its status was stored whole, or
// the Foo is gone.
func (p *PrunedStatuses) Forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byUID, uid)
}

// StatusToWrite reports whether status must be written on foo, the Foo as
// the cache holds it: not when foo has it already, or when it is the status
// last pruned (PrunedStatuses). ErrCacheBehindOwnWrite: foo is the version the
// last status write replaced, and status was computed from it; the write would
// be refused 409, and the write's echo queues the Foo again.
func (f *Foos) StatusToWrite(foo *samplev1beta1.Foo, status samplev1beta1.FooStatus) (bool, error) {
	if equality.Semantic.DeepEqual(foo.Status, status) || f.PrunedStatus.SameAsPruned(foo.UID, status) {
		return false, nil
	}
	if f.StatusWrites.CacheIsBehind(foo) {
		return false, ErrCacheBehindOwnWrite
	}
	return true, nil
}

// WroteStatus records the status written on foo, stored as updated: the cache
// is behind until it shows updated (ReplacedVersions.Wrote). It returns the
// status fields the API server pruned, when that is news to report: the first
// time for this Foo and this status (PrunedStatuses.Remember); nil otherwise.
func (f *Foos) WroteStatus(foo *samplev1beta1.Foo, status samplev1beta1.FooStatus,
	updated *samplev1beta1.Foo) []string {
	f.StatusWrites.Wrote(foo, updated)
	pruned := desired.PrunedStatusFields(status, updated.Status)
	if len(pruned) == 0 {
		f.PrunedStatus.Forget(foo.UID)
		return nil
	}
	if !f.PrunedStatus.Remember(foo.UID, status) {
		return nil
	}
	return pruned
}

// PrunedStatusMessage is the Warning event that tells a user the API server
// pruned the given status fields, and how to fix it.
func PrunedStatusMessage(pruned []string) string {
	return fmt.Sprintf("The API server dropped %s from the status written: the installed CRD %s is outdated; "+
		"update it with: %s", strings.Join(pruned, ", "), samplecontroller.FooCRDName, apicheck.InstallHint)
}
