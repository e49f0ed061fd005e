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

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/contract"
	"github.com/kube-samples/sample-controller/test/framework"
)

// expectInvariants waits, up to the scenario's settle bound, until the
// invariants hold, reports how long after the last fault healed that was,
// and checks the audit log.
func (s *chaosScenario) expectInvariants(t *testing.T, healed time.Time) {
	t.Helper()
	var problems []string
	err := framework.Poll(context.Background(), time.Second, s.cfg.settle, func(ctx context.Context) (bool, error) {
		var err error
		problems, err = s.world.invariantProblems(ctx)
		return err == nil && len(problems) == 0, err
	})
	if err != nil {
		t.Fatalf("the invariants did not hold within %v of the users stopping: %v; %d problems:\n%s", s.cfg.settle, err,
			len(problems), strings.Join(problems[:min(len(problems), 20)], "\n"))
	}
	t.Logf("quiescent %v after the last fault healed: every invariant holds", time.Since(healed).Round(100*time.Millisecond))
	s.world.checkAuditLog(t)
}

// invariantProblems lists what does not hold now:
//   - every Foo has exactly the Deployment its spec names, controlled by
//     it, with the fields the controller owns as contract.DesiredDeployment
//     says (compare, with contract.Drift);
//   - no Deployment left over after a rename or a delete, and none
//     controlled by a Foo that names another (compare's orphans and extra
//     Deployments);
//   - every Foo's status observed its generation and reports its
//     Deployment's readiness (contract.ReadyCondition) and replica counts;
//   - the foreign Deployment is as its owner made it, and the controller
//     never wrote it (no field manager of the controller's on it).
func (w *chaosWorld) invariantProblems(ctx context.Context) ([]string, error) {
	foos, err := cluster.Sample.SamplecontrollerV1alpha1().Foos(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	deployments, err := cluster.Kube.AppsV1().Deployments(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	c := compare(foos.Items, deployments.Items)
	problems := c.problems
	if c.missing > 0 {
		problems = append(problems, fmt.Sprintf("%d Foos without their Deployment", c.missing))
	}
	byName := map[string]*appsv1.Deployment{}
	for i := range deployments.Items {
		byName[deployments.Items[i].Name] = &deployments.Items[i]
	}
	for i := range foos.Items {
		foo := &foos.Items[i]
		d := byName[foo.Spec.DeploymentName]
		if d == nil || metav1.IsControlledBy(d, foo) == false {
			continue // compare reported it
		}
		if drift := contract.Drift(contract.DesiredDeployment(foo), contract.NewCachedDeployment(d)); len(drift) > 0 {
			problems = append(problems, fmt.Sprintf("Deployment %s drifted from Foo %s: %v", d.Name, foo.Name, drift))
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

// statusProblem says how foo's status fails to report its Deployment d
// ("" if it does not).
func statusProblem(foo *samplev1alpha1.Foo, d *appsv1.Deployment) string {
	want := contract.ReadyCondition(foo, contract.NewCachedDeployment(d))
	got := readyCondition(foo)
	switch {
	case foo.Status.ObservedGeneration != foo.Generation:
		return fmt.Sprintf("Foo %s: status observed generation %d, the Foo is at %d", foo.Name, foo.Status.ObservedGeneration, foo.Generation)
	case got == nil || got.Status != want.Status || got.Reason != want.Reason || got.Message != want.Message || got.ObservedGeneration != foo.Generation:
		return fmt.Sprintf("%s; Deployment %s says %s %s: %q", describeFoo(foo), d.Name, want.Status, want.Reason, want.Message)
	case foo.Status.Replicas != d.Status.Replicas || foo.Status.AvailableReplicas != d.Status.AvailableReplicas:
		return fmt.Sprintf("%s; Deployment %s has %d replicas, %d available", describeFoo(foo), d.Name, d.Status.Replicas, d.Status.AvailableReplicas)
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
