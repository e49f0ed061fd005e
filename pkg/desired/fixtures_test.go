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

package desired_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/desired"
)

// The fixtures are written out; these say that they are what the mapping
// computes, so that a test starting from them starts from the real thing.
func TestOwnedDeploymentIsTheDesiredDeployment(t *testing.T) {
	foo := testfixtures.NewFoo("test", 3)
	want := desired.NewDeployment(foo)
	want.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	got := testfixtures.OwnedDeployment(t, foo)
	want.UID, want.ResourceVersion, want.Generation, want.Status = got.UID, "1", 1, got.Status
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("OwnedDeployment differs from the desired Deployment:\n%s", diff.Diff(want, got))
	}
}

func TestWithSyncedStatusIsTheDesiredStatus(t *testing.T) {
	foo := testfixtures.NewFoo("test", 3)
	d := testfixtures.OwnedDeployment(t, foo)
	got := testfixtures.WithSyncedStatus(t, foo.DeepCopy(), d).Status
	cached := desired.CacheDeployment(d)
	foo.Status = got // the condition keeps its transition time when unchanged
	if want := desired.StatusFor(foo, cached, desired.ReadyCondition(foo, cached)); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("WithSyncedStatus differs from the desired status:\n%s", diff.Diff(want, got))
	}
}
