//go:build e2e

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

package e2e

// Foos: building, creating, changing, and waiting for their status.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

func int32p(i int32) *int32 { return &i }

// newFoo returns a Foo asking for the Deployment depName; replicas nil leaves
// spec.replicas out.
func newFoo(ns, name, depName string, replicas *int32) *samplev1beta1.Foo {
	return &samplev1beta1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       samplev1beta1.FooSpec{Deployment: samplev1beta1.FooDeployment{Name: depName}, Replicas: replicas},
	}
}

// rawFooManifest is a Foo with the given spec, verbatim YAML indented under
// "spec:"; with spec "" the Foo has no spec at all.
func rawFooManifest(ns, name, spec string) string {
	m := fmt.Sprintf("apiVersion: samplecontroller.k8s.io/v1beta1\nkind: Foo\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)
	if spec != "" {
		m += "spec:\n  " + strings.ReplaceAll(strings.TrimSpace(spec), "\n", "\n  ") + "\n"
	}
	return m
}

// createFoo creates foo with client-go.
func createFoo(t *testing.T, foo *samplev1beta1.Foo) *samplev1beta1.Foo {
	t.Helper()
	created, err := cluster.Sample.SamplecontrollerV1beta1().Foos(foo.Namespace).Create(context.Background(), foo, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// createFoos creates n Foos named prefix-000, prefix-001, ..., each asking
// for a Deployment of its own name with the default replicas, eight at a
// time, and returns their names.
func createFoos(t *testing.T, ns, prefix string, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	fooClient := cluster.Sample.SamplecontrollerV1beta1().Foos(ns)
	err := framework.Parallel(n, 8, func(i int) error {
		_, err := fooClient.Create(context.Background(), newFoo(ns, names[i], names[i], nil), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("creating %d Foos: %v", n, err)
	}
	return names
}

func getFoo(t *testing.T, ns, name string) *samplev1beta1.Foo {
	t.Helper()
	foo, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return foo
}

// updateFoo changes a Foo with mutate, retrying on conflicts.
func updateFoo(t *testing.T, ns, name string, mutate func(*samplev1beta1.Foo)) *samplev1beta1.Foo {
	t.Helper()
	fooClient := cluster.Sample.SamplecontrollerV1beta1().Foos(ns)
	var updated *samplev1beta1.Foo
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		foo, err := fooClient.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(foo)
		updated, err = fooClient.Update(context.Background(), foo, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return updated
}

func readyCondition(foo *samplev1beta1.Foo) *metav1.Condition {
	return meta.FindStatusCondition(foo.Status.Conditions, samplecontroller.ConditionReady)
}

func specReplicas(foo *samplev1beta1.Foo) int32 {
	if foo.Spec.Replicas == nil {
		return 1
	}
	return *foo.Spec.Replicas
}

// describeFoo sums up a Foo's status for failure messages.
func describeFoo(foo *samplev1beta1.Foo) string {
	c := readyCondition(foo)
	ready := "no Ready condition"
	if c != nil {
		ready = fmt.Sprintf("Ready=%s reason=%s observedGeneration=%d message=%q", c.Status, c.Reason, c.ObservedGeneration, c.Message)
	}
	return fmt.Sprintf("Foo %s/%s generation=%d status{observedGeneration=%d replicas=%d available=%d selector=%q} %s",
		foo.Namespace, foo.Name, foo.Generation, foo.Status.ObservedGeneration, foo.Status.Replicas,
		foo.Status.AvailableReplicas, foo.Status.Selector, ready)
}

// waitFoo polls a Foo until ok says it is as wanted; it returns that Foo.
func waitFoo(t *testing.T, ns, name, what string, ok func(*samplev1beta1.Foo) bool) *samplev1beta1.Foo {
	t.Helper()
	var last *samplev1beta1.Foo
	eventually(t, convergeTimeout, fmt.Sprintf("Foo %s/%s %s", ns, name, what), func(ctx context.Context) (bool, error) {
		foo, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = foo
		if ok(foo) {
			return true, nil
		}
		return false, fmt.Errorf("%s", describeFoo(foo))
	})
	return last
}

// isReady: Ready=True reason Available, status describing the current
// generation, every replica the spec asks for available.
func isReady(foo *samplev1beta1.Foo) bool {
	c := readyCondition(foo)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == samplecontroller.ReasonAvailable &&
		c.ObservedGeneration == foo.Generation &&
		foo.Status.ObservedGeneration == foo.Generation &&
		foo.Status.AvailableReplicas == specReplicas(foo) &&
		foo.Status.Replicas == specReplicas(foo)
}

func waitFooReady(t *testing.T, ns, name string) *samplev1beta1.Foo {
	t.Helper()
	return waitFoo(t, ns, name, "Ready (Available, all replicas available, current generation)", isReady)
}

// waitFooNotReady waits for Ready=False with the given reason, for the
// current generation.
func waitFooNotReady(t *testing.T, ns, name, reason string) *samplev1beta1.Foo {
	t.Helper()
	return waitFoo(t, ns, name, "Ready=False reason "+reason, func(foo *samplev1beta1.Foo) bool {
		c := readyCondition(foo)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason &&
			c.ObservedGeneration == foo.Generation && foo.Status.ObservedGeneration == foo.Generation
	})
}
