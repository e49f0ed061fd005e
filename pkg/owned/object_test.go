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

package owned_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/kube-samples/sample-controller/pkg/owned"
)

// HandToApply works for any kind's typed client: here a Service's.
var servicesResource = corev1.Resource("services")

// An object changed since the cache saw it is not handed over: its owner is
// synced again once the cache shows the change, and nothing is written.
func TestHandToApplyRefusesAnObjectChangedSinceCached(t *testing.T) {
	served := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	client := k8sfake.NewClientset(served)
	services := client.CoreV1().Services("default")
	current, err := services.Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	_, err = owned.HandToApply(context.Background(), services, servicesResource, "web",
		current.ResourceVersion+"0", "widget-controller")
	if !apierrors.IsConflict(err) {
		t.Fatalf("error %v, want a conflict", err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("wrote %s %s, want a read alone", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// Fields already the manager's apply are not patched: the object read comes back.
func TestHandToApplyLeavesAnObjectHandedOverAlready(t *testing.T) {
	client := k8sfake.NewClientset()
	services := client.CoreV1().Services("default")
	created, err := services.Create(context.Background(),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}},
		metav1.CreateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	got, err := owned.HandToApply(context.Background(), services, servicesResource, "web", created.ResourceVersion,
		"widget-controller")
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != created.ResourceVersion {
		t.Errorf("resourceVersion %s, want %s: nothing to hand over", got.ResourceVersion, created.ResourceVersion)
	}
	if n := len(client.Actions()); n != 1 || client.Actions()[0].GetVerb() != "get" {
		t.Errorf("actions %v, want one get", client.Actions())
	}
}
