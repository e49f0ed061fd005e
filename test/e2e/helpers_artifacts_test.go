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

// The installation of artifacts/deploy, shared by the test of the artifacts
// themselves and the test of their ServiceAccount's permissions.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/desired"
)

const (
	// deployKustomization is what an operator applies (kubectl apply -k),
	// relative to the repository root.
	deployKustomization = "artifacts/deploy"
	// deployNamespace, deployServiceAccount and deployName are the names
	// artifacts/deploy uses: the Namespace, the ServiceAccount, the
	// Deployment, the ClusterRole and its binding, and the Lease the
	// leader election Role allows (resourceNames).
	deployNamespace      = samplecontroller.ControllerName
	deployServiceAccount = samplecontroller.ControllerName
	deployName           = samplecontroller.ControllerName
	// deployLeaseFlowSchema is the FlowSchema of artifacts/deploy that
	// sends the ServiceAccount's Lease requests to the leader-election
	// priority level.
	deployLeaseFlowSchema = samplecontroller.ControllerName + "-leader-election"
)

// applyDeployArtifacts applies artifacts/deploy from the repository root
// (kubectl kustomize, then kubectl apply), as an operator does with kubectl
// apply -k, and returns kubectl's output. One change: the CRD's conversion
// webhook is reached at the suite's URL (standardCRD), as the suite's API
// server, running on this machine, cannot reach a Service. When
// the test ends it removes what was installed, except the CRD that other
// tests use: the Namespace (with everything in it), the ClusterRole, the
// ClusterRoleBinding, the FlowSchema, and the admission policies and their
// bindings, those of each kind a Foo owns (desired.OwnedKinds) among
// them. A Namespace still terminating from an earlier test is waited for
// first, and the Lease quota's first count after: until the quota
// controller has counted, the API server refuses every Lease create in the
// namespace ("status unknown for quota"). Applying twice in one test is
// fine.
func applyDeployArtifacts(t *testing.T) string {
	t.Helper()
	namespaces := cluster.Kube.CoreV1().Namespaces()
	eventually(t, gcTimeout, "no Namespace "+deployNamespace+" terminating", func(ctx context.Context) (bool, error) {
		ns, err := namespaces.Get(ctx, deployNamespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if ns.DeletionTimestamp != nil {
			return false, fmt.Errorf("Namespace %s is %s", deployNamespace, ns.Status.Phase)
		}
		return true, nil
	})
	out, err := cluster.Kubectl(deployManifests(t), "apply", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	waitLeaseQuotaCounted(t)
	t.Cleanup(func() {
		ctx := context.Background()
		rbac := cluster.Kube.RbacV1()
		admission := cluster.Kube.AdmissionregistrationV1()
		errs := make([]error, 0, 14+2*len(desired.OwnedKinds))
		errs = append(errs,
			rbac.ClusterRoleBindings().Delete(ctx, deployName, metav1.DeleteOptions{}),
			rbac.ClusterRoles().Delete(ctx, deployName, metav1.DeleteOptions{}),
			cluster.Kube.FlowcontrolV1().FlowSchemas().Delete(ctx, deployLeaseFlowSchema, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicyBindings().Delete(ctx, samplecontroller.CRDWritePolicyName, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicies().Delete(ctx, samplecontroller.CRDWritePolicyName, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicyBindings().Delete(ctx, samplecontroller.OwnNamespacePolicyName, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicies().Delete(ctx, samplecontroller.OwnNamespacePolicyName, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicyBindings().Delete(ctx, samplecontroller.OwnNamesPolicyName, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicies().Delete(ctx, samplecontroller.OwnNamesPolicyName, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicyBindings().Delete(ctx, samplecontroller.OwnEventsPolicyName, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicies().Delete(ctx, samplecontroller.OwnEventsPolicyName, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicyBindings().Delete(ctx, samplecontroller.OwnLeasesPolicyName, metav1.DeleteOptions{}),
			admission.ValidatingAdmissionPolicies().Delete(ctx, samplecontroller.OwnLeasesPolicyName, metav1.DeleteOptions{}),
			namespaces.Delete(ctx, deployNamespace, metav1.DeleteOptions{}),
		)
		for _, kind := range desired.OwnedKinds {
			name := samplecontroller.OwnedWritesPolicyName(kind.Resource.Resource)
			errs = append(errs, admission.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}),
				admission.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}))
		}
		for _, err := range errs {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing %s: %v", deployKustomization, err)
			}
		}
		eventually(t, gcTimeout, "Namespace "+deployNamespace+" to be gone", func(ctx context.Context) (bool, error) {
			_, err := namespaces.Get(ctx, deployNamespace, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	})
	return out
}

// waitLeaseQuotaCounted waits until the quota controller has counted the
// Leases of the deployed namespace against its Lease quota.
func waitLeaseQuotaCounted(t *testing.T) {
	t.Helper()
	quotas := cluster.Kube.CoreV1().ResourceQuotas(deployNamespace)
	eventually(t, convergeTimeout, "quota "+samplecontroller.LeaseQuotaName+" counted", func(ctx context.Context) (bool, error) {
		q, err := quotas.Get(ctx, samplecontroller.LeaseQuotaName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for resource := range q.Spec.Hard {
			if _, ok := q.Status.Used[resource]; !ok {
				return false, fmt.Errorf("status %+v", q.Status)
			}
		}
		return true, nil
	})
}

// deployManifests renders artifacts/deploy, with the Foo CRD's webhook
// clientConfig that of the suite's standard CRD.
func deployManifests(t *testing.T) string {
	t.Helper()
	rendered := kubectl(t, "kustomize", deployKustomization)
	clientConfig, _, err := unstructured.NestedMap(standardCRD(t).Object, "spec", "conversion", "webhook", "clientConfig")
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	decoder := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if obj.GetKind() == "CustomResourceDefinition" {
			if err := unstructured.SetNestedMap(obj.Object, clientConfig, "spec", "conversion", "webhook", "clientConfig"); err != nil {
				t.Fatal(err)
			}
		}
		js, err := obj.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(js))
	}
	return strings.Join(docs, "\n")
}
