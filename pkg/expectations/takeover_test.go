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
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/fake"
)

// The sequence the chaos test found: a standby's Foo cache lagged after a
// kube-apiserver restart; the user deleted Foos, or scaled them; the standby
// took over and created Deployments for the deleted Foos, and scaled others
// back to what their Foos had asked for before. Taking over, a standby now
// lists the Foos from the API server and remembers as deleted those its
// cache held before the list that the API server no longer has, and as
// outdated those the API server has in another version; a Foo that reaches
// the cache while the list runs is not judged by it.
func TestStandbyTakingOverRemembersFoosDeletedOrChangedWhileItsCacheLagged(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	kept := testfixtures.NewFoo("kept", 1)
	kept.ResourceVersion = "10"
	gone := testfixtures.NewFoo("gone", 1) // deleted on the API server, still cached
	gone.ResourceVersion = "11"
	scaled := testfixtures.NewFoo("scaled", 1) // scaled to 3 on the API server, cached at 1
	scaled.ResourceVersion = "12"
	scaledOnServer := scaled.DeepCopy()
	scaledOnServer.Spec.Replicas = ptr.To[int32](3)
	scaledOnServer.ResourceVersion = "20"
	scaledOnServer.Generation = scaled.Generation + 1 // a change of spec
	arriving := testfixtures.NewFoo("arriving", 1)    // created after the list's snapshot
	arriving.ResourceVersion = "30"
	client := fake.NewSimpleClientset(kept.DeepCopy(), scaledOnServer)
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, foo := range []*samplev1beta1.Foo{kept, gone, scaled} {
		if err := indexer.Add(foo.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	client.PrependReactor("list", samplecontroller.FooResource, func(core.Action) (bool, runtime.Object, error) {
		if err := indexer.Add(arriving.DeepCopy()); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})

	var known Foos
	if err := known.rememberChangedWhileStandby(ctx, indexer, client.SamplecontrollerV1beta1().Foos("")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		foo                     *samplev1beta1.Foo
		wantDeleted, wantBehind bool
	}{
		{foo: gone, wantDeleted: true},
		{foo: scaled, wantBehind: true},
		{foo: kept},
		{foo: arriving},
	} {
		if got := known.Deleted.Has(tc.foo.UID); got != tc.wantDeleted {
			t.Errorf("%s remembered as deleted: %v, want %v", tc.foo.Name, got, tc.wantDeleted)
		}
		if got := known.Outdated.CacheIsBehind(tc.foo); got != tc.wantBehind {
			t.Errorf("%s at resourceVersion %s remembered as outdated: %v, want %v", tc.foo.Name, tc.foo.ResourceVersion, got, tc.wantBehind)
		}
	}
	if known.Outdated.CacheIsBehind(scaledOnServer) {
		t.Error("the API server's version of the scaled Foo counts as outdated")
	}
}
