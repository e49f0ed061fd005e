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

package metrics

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/metrics/testutil"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/expectations"
	listers "github.com/kube-samples/sample-controller/pkg/generated/listers/samplecontroller/v1beta1"
)

// samplecontroller_foos counts the cached Foos by Ready status and reason,
// with no label per Foo; a Foo the controller has not reported on yet counts
// as Unknown.
func TestFooReadinessIsCountedFromTheCache(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	withReady := func(name string, status metav1.ConditionStatus, reason string) *samplev1beta1.Foo {
		foo := testfixtures.NewFoo(name, 1)
		foo.Status.Conditions = []metav1.Condition{{Type: samplecontroller.ConditionReady, Status: status, Reason: reason}}
		return foo
	}
	for _, foo := range []*samplev1beta1.Foo{
		withReady("a", metav1.ConditionTrue, "Available"),
		withReady("b", metav1.ConditionTrue, "Available"),
		withReady("c", metav1.ConditionFalse, "FailedCreate"),
		withReady("d", metav1.ConditionFalse, "Progressing"),
		testfixtures.NewFoo("e", 1),
	} {
		if err := indexer.Add(foo); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP samplecontroller_foos [ALPHA] Foos by the status and reason of their Ready condition (ready="Unknown", reason="" before the controller reported one), counted in this replica's cache at scrape time: every replica, leader or standby, serves it.
# TYPE samplecontroller_foos gauge
samplecontroller_foos{ready="False",reason="FailedCreate"} 1
samplecontroller_foos{ready="False",reason="Progressing"} 1
samplecontroller_foos{ready="True",reason="Available"} 2
samplecontroller_foos{ready="Unknown",reason=""} 1
`
	collector := NewFooReadinessCollector(listers.NewFooLister(indexer).List)
	if err := testutil.CustomCollectAndCompare(collector, strings.NewReader(want), "samplecontroller_foos"); err != nil {
		t.Error(err)
	}
}

// reconcile_total's help says what each result SyncResult gives means, and
// for a deferred sync both of its causes, what it skipped and what comes
// next, as processNextWorkItem handles it: an operator reads only the help.
func TestReconcileTotalHelpExplainsEveryResult(t *testing.T) {
	help := ReconcileTotal.Help
	for err, result := range map[error]string{
		nil:                                 SyncSucceeded,
		expectations.ErrCacheBehindOwnWrite: SyncDeferred,
		expectations.ErrCacheOutdated:       SyncDeferred,
		apierrors.NewConflict(schema.GroupResource{Resource: "foos"}, "foo", errors.New("stale")): SyncConflict,
		errors.New("anything else"): SyncFailed,
	} {
		if got := SyncResult(err); got != result {
			t.Errorf("SyncResult(%v) = %q, want %q", err, got, result)
		}
		if !strings.Contains(help, "; "+result+" (") && !strings.Contains(help, "by result: "+result+";") {
			t.Errorf("reconcile_total's help does not explain %q: %s", result, help)
		}
	}
	for _, said := range []string{"the controller's own last status write", "takeover relist", "wrote no status",
		"nothing at all", "not retried with backoff", "synced again when the watch brings the newer Foo"} {
		if !strings.Contains(help, said) {
			t.Errorf("reconcile_total's help on deferred syncs does not say %q: %s", said, help)
		}
	}
}

func TestOwnedCachedCountsTheCachedObjectsByResource(t *testing.T) {
	want := `
# HELP samplecontroller_owned_cached [ALPHA] Objects of each kind a Foo owns (by resource, e.g. deployments) in this replica's caches at scrape time: those the controller manages, in the namespaces it watches; sharded, in the shards this replica holds.
# TYPE samplecontroller_owned_cached gauge
samplecontroller_owned_cached{resource="deployments"} 40
samplecontroller_owned_cached{resource="services"} 3
`
	collector := NewOwnedCachedCollector(func() map[string]int { return map[string]int{"deployments": 40, "services": 3} })
	if err := testutil.CustomCollectAndCompare(collector, strings.NewReader(want), "samplecontroller_owned_cached"); err != nil {
		t.Error(err)
	}
}
