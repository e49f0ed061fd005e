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

// When the API server refuses a write the controller makes for a Foo, the
// Foo's user reads why on the Foo: Ready=False with a reason of its own and
// the server's message, and one Warning event; the controller retries with
// backoff and converges once the cause is gone, without a restart.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// expectRefusal waits for the Foo to report the refusal: Ready=False with
// reason and a message carrying want, and exactly one Warning event saying
// the same.
func expectRefusal(t *testing.T, ns, name, reason, want string) *samplev1beta1.Foo {
	t.Helper()
	foo := waitFooNotReady(t, ns, name, reason)
	msg := readyCondition(foo).Message
	if !strings.Contains(msg, want) {
		t.Fatalf("Foo %s: Ready message %q does not carry %q", name, msg, want)
	}
	waitEvent(t, foo, reason)
	if e := expectOneEvent(t, foo, corev1.EventTypeWarning, reason); e.Message != msg {
		t.Errorf("Foo %s: event message %q, want the Ready message %q", name, e.Message, msg)
	}
	return foo
}

func TestQuotaRefusalIsReportedAndConvergesWhenRaised(t *testing.T) {
	ns := newNamespace(t, "quota")
	ensureStandardCRD(t)
	quotas := cluster.Kube.CoreV1().ResourceQuotas(ns)
	quota := limitDeployments(t, ns, "one-deployment", 1)
	c := startController(t, "controller", controllerArgs(ns)...)

	first := createFoo(t, newFoo(ns, "first", "first", int32p(1)))
	waitFooReady(t, ns, first.Name)
	second := createFoo(t, newFoo(ns, "second", "second", int32p(1)))
	second = expectRefusal(t, ns, second.Name, samplecontroller.ReasonFailedCreate, "exceeded quota: one-deployment")
	failures := reconciles(scrape(t, c), "error")

	// The cause goes away.
	quota, err := quotas.Get(context.Background(), quota.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	quota.Spec.Hard["count/deployments.apps"] = resource.MustParse("2")
	if _, err := quotas.Update(context.Background(), quota, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	second = waitFooReady(t, ns, second.Name)
	waitManagedDeployment(t, ns, "second", second)
	expectOneEvent(t, second, corev1.EventTypeWarning, samplecontroller.ReasonFailedCreate)
	t.Logf("failed syncs of the refused Foo before the quota was raised: %v (retried with backoff)", failures)
}

// policyManifest is a ValidatingAdmissionPolicy, bound to one namespace, that
// denies Deployments of more than max replicas.
func policyManifest(ns string, max int) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: %[1]s-max-replicas
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: object.spec.replicas <= %[2]d
    message: this namespace allows at most %[2]d replicas per Deployment
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: %[1]s-max-replicas
spec:
  policyName: %[1]s-max-replicas
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: %[1]s
`, ns, max)
}

func TestAdmissionPolicyDenialIsReportedAndConvergesWhenLifted(t *testing.T) {
	ns := newNamespace(t, "policy")
	ensureStandardCRD(t)
	policy := policyManifest(ns, 5)
	if _, err := cluster.Kubectl(policy, "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = cluster.Kubectl(policy, "delete", "--ignore-not-found", "-f", "-") })
	// The API server loads policies from a watch: wait until it enforces
	// this one (a dry-run create of a Deployment it must deny).
	eventually(t, convergeTimeout, "the policy enforced", func(ctx context.Context) (bool, error) {
		_, err := cluster.Kube.AppsV1().Deployments(ns).Create(ctx, unmanagedDeployment(ns, "probe", 6),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "at most 5 replicas"), nil
	})
	startController(t, "controller", controllerArgs(ns)...)

	// Create refused.
	big := createFoo(t, newFoo(ns, "big", "big", int32p(6)))
	expectRefusal(t, ns, big.Name, samplecontroller.ReasonFailedCreate, "at most 5 replicas per Deployment")
	// Update refused: a Foo that was fine, scaled beyond the policy.
	grown := createFoo(t, newFoo(ns, "grown", "grown", int32p(2)))
	waitFooReady(t, ns, grown.Name)
	updateFoo(t, ns, grown.Name, func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(7) })
	expectRefusal(t, ns, grown.Name, samplecontroller.ReasonFailedUpdate, "at most 5 replicas per Deployment")
	if d, err := getDeployment(context.Background(), ns, "grown"); err != nil || *d.Spec.Replicas != 2 {
		t.Fatalf("the refused update changed the Deployment: %v", err)
	}

	// The cause goes away: both converge without a restart.
	if _, err := cluster.Kubectl(policy, "delete", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"big", "grown"} {
		foo := waitFooReady(t, ns, name)
		waitManagedDeployment(t, ns, name, foo)
	}
}
