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

package takeover

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/expectations"
	"github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/fake"
	listers "github.com/kube-samples/sample-controller/pkg/generated/listers/samplecontroller/v1alpha1"
)

// The sequence the chaos test found: a standby's Foo cache lagged after a
// kube-apiserver restart; the user deleted Foos; the standby took over and
// created Deployments for them. Taking over, a standby now lists the Foos
// from the API server and remembers as deleted those its cache held before
// the list that the API server no longer has; a Foo that reaches the cache
// while the list runs is not judged by it.
func TestStandbyTakingOverSkipsFoosDeletedWhileItsCacheLagged(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	kept := testfixtures.NewFoo("kept", 1)
	gone := testfixtures.NewFoo("gone", 1)         // deleted on the API server, still cached
	arriving := testfixtures.NewFoo("arriving", 1) // created after the list's snapshot
	client := fake.NewSimpleClientset(kept.DeepCopy())
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, foo := range []*samplev1alpha1.Foo{kept, gone} {
		if err := indexer.Add(foo.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	client.PrependReactor("list", samplev1alpha1.FooResource, func(core.Action) (bool, runtime.Object, error) {
		if err := indexer.Add(arriving.DeepCopy()); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})

	var deleted expectations.DeletedFoos
	if err := RememberFoosDeletedWhileStandby(ctx, listers.NewFooLister(indexer), client.SamplecontrollerV1alpha1().Foos(""), &deleted); err != nil {
		t.Fatal(err)
	}
	for foo, wantDeleted := range map[*samplev1alpha1.Foo]bool{gone: true, kept: false, arriving: false} {
		if got := deleted.Has(foo.UID); got != wantDeleted {
			t.Errorf("%s remembered as deleted: %v, want %v", foo.Name, got, wantDeleted)
		}
	}
}
