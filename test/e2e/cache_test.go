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

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// Deployments the controller does not manage are not cached; a name
// collision with one is still found (through the API) and nothing of them
// is touched.
func TestCollisionsWithUncachedDeploymentsFoundAndNothingTouched(t *testing.T) {
	ns := newNamespace(t, "unrelated")
	ensureStandardCRD(t)
	deployments := cluster.Kube.AppsV1().Deployments(ns)
	const unrelated = 200
	create := func(from, to int) {
		for i := from; i < to; i++ {
			d := unmanagedDeployment(ns, fmt.Sprintf("unrelated-%03d", i), 0)
			if _, err := deployments.Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	create(0, unrelated/2) // before the controller starts
	c := startController(t, "controller", controllerArgs(ns)...)
	create(unrelated/2, unrelated) // while it runs
	waitControllerReady(t, c)

	// Let the deployment controller finish with them, then remember them.
	snapshot := map[string]appsv1.Deployment{}
	eventually(t, 2*convergeTimeout, "the unrelated Deployments rolled out", func(ctx context.Context) (bool, error) {
		list, err := deployments.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pending := 0
		for _, d := range list.Items {
			if !rolledOut(&d) {
				pending++
			}
		}
		if len(list.Items) != unrelated || pending > 0 {
			return false, fmt.Errorf("%d Deployments, %d not rolled out", len(list.Items), pending)
		}
		for _, d := range list.Items {
			snapshot[d.Name] = d
		}
		return true, nil
	})

	// Foos asking for names taken by unrelated Deployments, some created
	// before the controller started, some after: none of them is in its
	// cache, the API tells it the name is taken.
	var colliding []*samplev1beta1.Foo
	for i := 0; i < unrelated; i += 10 {
		name := fmt.Sprintf("unrelated-%03d", i+i/10%10)
		colliding = append(colliding, createFoo(t, newFoo(ns, "wants-"+name, name, int32p(1))))
	}
	for i, foo := range colliding {
		colliding[i] = waitFooNotReady(t, ns, foo.Name, samplecontroller.ReasonResourceExists)
		want := fmt.Sprintf("Deployment %q already exists and is not managed by this Foo (it is controlled by no Foo)", foo.Spec.Deployment.Name)
		if msg := readyCondition(colliding[i]).Message; msg != want {
			t.Errorf("Foo %s Ready message %q, want %q", foo.Name, msg, want)
		}
		waitEvent(t, foo, samplecontroller.ReasonResourceExists)
	}
	// Each is retried with backoff meanwhile; each problem is reported once.
	consistently(t, 2*time.Second, "one ResourceExists event per Foo", func(ctx context.Context) error {
		var problems []string
		for _, foo := range colliding {
			events, err := fooEvents(ctx, ns, string(foo.UID), samplecontroller.ReasonResourceExists)
			if err != nil {
				return err
			}
			if len(events) != 1 || events[0].Count != 1 || events[0].Type != corev1.EventTypeWarning {
				problems = append(problems, foo.Name+": "+describeEvents(events))
			}
		}
		if len(problems) > 0 {
			return fmt.Errorf("want exactly one Warning event with count 1 per Foo:\n%s", strings.Join(problems, "\n"))
		}
		return nil
	})

	list, err := deployments.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != unrelated {
		t.Fatalf("%d Deployments in %s, want the %d unrelated ones only", len(list.Items), ns, unrelated)
	}
	for _, d := range list.Items {
		was, ok := snapshot[d.Name]
		switch {
		case !ok:
			t.Errorf("unexpected Deployment %s", d.Name)
		case d.ResourceVersion != was.ResourceVersion || !equality.Semantic.DeepEqual(d.Spec, was.Spec) ||
			!equality.Semantic.DeepEqual(d.Labels, was.Labels):
			t.Errorf("Deployment %s changed: resourceVersion %s (was %s), managers %v", d.Name, d.ResourceVersion, was.ResourceVersion, managers(&d))
		case len(d.OwnerReferences) != 0 || touchedByController(&d) || d.Labels[samplecontroller.LabelManagedBy] != "":
			t.Errorf("Deployment %s touched by the controller: owners %+v, managers %v, labels %v", d.Name, d.OwnerReferences, managers(&d), d.Labels)
		}
	}
}
