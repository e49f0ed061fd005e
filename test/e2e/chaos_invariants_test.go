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

// What must hold once the faults have healed and the users stopped,
// whatever happened on the way: read from the API server (quorum reads),
// and from its audit log.

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// expectInvariants waits until the invariants hold, for as long as the
// cluster makes progress towards them (fewer problems) within the
// scenario's settle bound, reports how long after the last fault healed
// that was, and checks the audit log.
func (s *chaosScenario) expectInvariants(t *testing.T, healed time.Time) {
	t.Helper()
	var problems []string
	_, err := framework.PollProgress(context.Background(), time.Second, s.cfg.settle, func(ctx context.Context) (bool, string, error) {
		var err error
		problems, err = s.world.invariantProblems(ctx)
		return err == nil && len(problems) == 0, fmt.Sprint(len(problems)), err
	})
	if err != nil {
		t.Fatalf("the invariants did not hold once the users stopped: %v; %d problems:\n%s", err,
			len(problems), strings.Join(problems[:min(len(problems), 20)], "\n"))
	}
	t.Logf("quiescent %v after the last fault healed: every invariant holds", time.Since(healed).Round(100*time.Millisecond))
	if s.cfg.shards > 1 {
		s.world.checkShardedAuditLog(t, s.cfg.shards, s.refused)
		return
	}
	s.world.checkAuditLog(t, s.refused)
}

// invariantProblems lists what does not hold now. Each is worked out from
// the Foo's spec as the README states the contract, independently of the
// controller's code:
//   - every Foo has exactly the Deployment its spec names, controlled by
//     it, with the labels, selector, pod labels, replicas and container
//     the controller owns (compare, with checkManagedDeployment);
//   - no Deployment left over after a rename or a delete, and none
//     controlled by a Foo that names another (compare's orphans and extra
//     Deployments);
//   - every Deployment has rolled out, and every Foo's status says so for
//     its generation (statusProblem);
//   - the foreign Deployment is as its owner made it, and the controller
//     never wrote it (no field manager of the controller's on it).
func (w *chaosWorld) invariantProblems(ctx context.Context) ([]string, error) {
	listed, err := cluster.Sample.SamplecontrollerV1beta1().Foos(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	deployments, err := cluster.Kube.AppsV1().Deployments(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	c := compare(listed.Items, deployments.Items)
	problems := c.problems
	if c.missing > 0 {
		problems = append(problems, fmt.Sprintf("%d Foos without their Deployment", c.missing))
	}
	byName := map[string]*appsv1.Deployment{}
	for i := range deployments.Items {
		byName[deployments.Items[i].Name] = &deployments.Items[i]
	}
	for i := range listed.Items {
		foo := &listed.Items[i]
		d := byName[foo.Spec.Deployment.Name]
		if d == nil || metav1.IsControlledBy(d, foo) == false {
			continue // compare reported it
		}
		if p := statusProblem(foo, d); p != "" {
			problems = append(problems, p)
		}
	}
	if foreign := byName[foreignDeployment]; foreign == nil {
		problems = append(problems, "the foreign Deployment "+foreignDeployment+" is gone")
	} else if p := foreignProblem(w.foreign, foreign); p != "" {
		problems = append(problems, p)
	}
	return problems, nil
}

// statusProblem says how foo and its Deployment d fall short of a settled
// state ("" if they do not). Once the faults have healed, the node has room
// for every pod and the users have stopped, every Deployment rolls out its
// spec.replicas pods, and the Foo's status says so for its generation:
// Ready=True, reason Available, "Deployment <name>: <n> of <n> replicas
// available", replicas and availableReplicas n.
func statusProblem(foo *samplev1beta1.Foo, d *appsv1.Deployment) string {
	n := specReplicas(foo)
	st := d.Status
	if st.ObservedGeneration != d.Generation || st.Replicas != n || st.UpdatedReplicas != n || st.AvailableReplicas != n {
		return fmt.Sprintf("Deployment %s (generation %d) not rolled out to %d replicas: observed generation %d, %d replicas, %d updated, %d available",
			d.Name, d.Generation, n, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas)
	}
	want := fmt.Sprintf("Deployment %s: %d of %d replicas available", d.Name, n, n)
	got := readyCondition(foo)
	switch {
	case foo.Status.ObservedGeneration != foo.Generation:
		return fmt.Sprintf("Foo %s: status observed generation %d, the Foo is at %d", foo.Name, foo.Status.ObservedGeneration, foo.Generation)
	case got == nil || got.Status != metav1.ConditionTrue || got.Reason != samplecontroller.ReasonAvailable || got.Message != want ||
		got.ObservedGeneration != foo.Generation:
		return fmt.Sprintf("%s; want Ready True %s: %q", describeFoo(foo), samplecontroller.ReasonAvailable, want)
	case foo.Status.Replicas != n || foo.Status.AvailableReplicas != n:
		return fmt.Sprintf("%s; want %d replicas, %d available", describeFoo(foo), n, n)
	}
	return ""
}

// foreignProblem says how the foreign Deployment differs from what its
// owner created, in what the controller could have changed ("" if it
// does not).
func foreignProblem(created, now *appsv1.Deployment) string {
	switch {
	case touchedByController(now):
		return fmt.Sprintf("the foreign Deployment was written by the controller: field managers %v", managers(now))
	case len(now.OwnerReferences) != 0:
		return fmt.Sprintf("the foreign Deployment has owners %+v", now.OwnerReferences)
	case !reflect.DeepEqual(now.Labels, created.Labels) || !reflect.DeepEqual(now.Spec.Replicas, created.Spec.Replicas) ||
		!reflect.DeepEqual(now.Spec.Template.Spec.Containers[0].Image, created.Spec.Template.Spec.Containers[0].Image):
		return fmt.Sprintf("the foreign Deployment changed: labels %v, replicas %v, image %s", now.Labels, ptrInt32(now.Spec.Replicas),
			now.Spec.Template.Spec.Containers[0].Image)
	}
	return ""
}

func ptrInt32(p *int32) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}
