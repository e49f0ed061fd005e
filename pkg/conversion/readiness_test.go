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
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/fake"
	informers "github.com/kube-samples/sample-controller/pkg/generated/informers/externalversions"
)

var foosResource = schema.GroupResource{Group: "samplecontroller.k8s.io", Resource: "foos"}

// The errors the API server answers a list of Foos with, each as it is sent.
var (
	// A Foo stored in v1alpha1 listed in v1beta1 with no webhook to convert
	// it.
	conversionFailed = apierrors.NewInternalError(errors.New(
		`conversion webhook for samplecontroller.k8s.io/v1alpha1, Kind=Foo failed: Post "https://sample-controller-webhook.sample-controller.svc:443/convert?timeout=30s": EOF`))
	storageReadFailed = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500,
		Reason: metav1.StatusReasonStoreReadError, Message: "failed to read foos: object not decodable"}}
	forbidden = apierrors.NewForbidden(foosResource, "", errors.New(`User "system:serviceaccount:sample-controller:sample-controller" cannot list resource "foos"`))
	notFound  = apierrors.NewNotFound(foosResource, "")
)

// startFooInformer runs a Foo informer over a fake clientset whose lists
// fail with listErr while it is set, and returns its SelfWait beside others.
func startFooInformer(t *testing.T, listErr *atomic.Pointer[error], others ...cache.InformerSynced) (*SelfWait, cache.SharedIndexInformer) {
	t.Helper()
	client := fake.NewClientset()
	client.PrependReactor("list", "foos", func(clienttesting.Action) (bool, runtime.Object, error) {
		if err := listErr.Load(); err != nil {
			return true, nil, *err
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	informer := factory.Samplecontroller().V1beta1().Foos().Informer()
	wait, err := WatchSelfWait(informer, others...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	return wait, informer
}

// eventually waits for cond, as long as an informer takes to try a list.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitListFailed waits until the informer's first list has failed.
func waitListFailed(t *testing.T, wait *SelfWait) {
	t.Helper()
	eventually(t, "a list failed", func() bool {
		wait.mu.Lock()
		defer wait.mu.Unlock()
		return wait.failed
	})
}

func TestSelfWaitCountsAListRefusedForWantOfConversionAsSynced(t *testing.T) {
	for name, listErr := range map[string]error{"InternalError": conversionFailed, "StorageReadError": storageReadFailed} {
		t.Run(name, func(t *testing.T) {
			var failing atomic.Pointer[error]
			failing.Store(&listErr)
			wait, informer := startFooInformer(t, &failing)
			eventually(t, "Synced while the list fails with "+name, wait.Synced)
			if informer.HasSynced() {
				t.Fatal("the informer synced while every list failed")
			}
			// The webhook serves: the next list succeeds, and the cache
			// syncs.
			failing.Store(nil)
			eventually(t, "the informer synced", informer.HasSynced)
			if !wait.Synced() {
				t.Fatal("not Synced once the informer synced")
			}
		})
	}
}

func TestSelfWaitKeepsUnsyncedAListItCannotGetOutOfByServing(t *testing.T) {
	for name, listErr := range map[string]error{"Forbidden": forbidden, "NotFound": notFound} {
		t.Run(name, func(t *testing.T) {
			var failing atomic.Pointer[error]
			failing.Store(&listErr)
			wait, _ := startFooInformer(t, &failing)
			waitListFailed(t, wait)
			if wait.Synced() {
				t.Fatalf("Synced while the list fails with %v", listErr)
			}
		})
	}
}

func TestSelfWaitWaitsForTheOtherCaches(t *testing.T) {
	var othersSynced atomic.Bool
	var failing atomic.Pointer[error]
	listErr := error(conversionFailed)
	failing.Store(&listErr)
	wait, _ := startFooInformer(t, &failing, othersSynced.Load)
	waitListFailed(t, wait)
	if wait.Synced() {
		t.Fatal("Synced before the other caches")
	}
	othersSynced.Store(true)
	if !wait.Synced() {
		t.Fatal("not Synced with the other caches synced and the Foo list waiting on conversion")
	}
}
