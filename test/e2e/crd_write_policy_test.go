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
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/cert"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// The messages of the policy's three validations (artifacts/deploy/crd-policy.yaml),
// each enough of it to tell which refused.
const (
	policyRefusesOtherWrites = "may update the CRD " + samplecontroller.FooCRDName + " alone"
	policyRefusesMetadata    = "may not change a CRD's metadata"
	policyRefusesSpec        = "may change nothing of a CRD's spec but spec.conversion.webhook.clientConfig.caBundle"
)

// The API server lets the deployed ServiceAccount change the Foo CRD's
// caBundle, as the controller does, and nothing else: each write a stolen
// token could use to take over conversions, or to break the Foo API, is
// refused by the policy of artifacts/deploy and leaves the CRD as it was.
// Create, delete and status writes, which RBAC already refuses, are refused
// by the policy too once a wider role is bound. An administrator's kubectl
// apply of a changed CRD, as an upgrade makes, still passes.
func TestCRDWritePolicyLetsTheServiceAccountWriteTheCABundleAlone(t *testing.T) {
	ensureStandardCRD(t)
	restoreStandardCRDAtEnd(t)
	applyDeployArtifacts(t)
	ctx := context.Background()
	saCRDs := crdsAs(t, serviceAccountKubeconfig(t, deployNamespace, deployServiceAccount))
	waitPolicyChecked(t, samplecontroller.CRDWritePolicyName)
	waitCRDWritePolicyInForce(t, saCRDs)

	before, err := crds(t).Get(ctx, samplecontroller.FooCRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(before.Object, "spec", "versions")
	served := -1 // a served version that is not the storage version
	for i, v := range versions {
		if v := v.(map[string]interface{}); v["served"] == true && v["storage"] != true {
			served = i
		}
	}
	if served < 0 {
		t.Fatalf("CRD %s serves no version but its storage version: %v", samplecontroller.FooCRDName, versions)
	}
	jsonPatch := func(ops ...string) string { return "[" + strings.Join(ops, ",") + "]" }
	refused := []struct {
		what, patch, message string
		patchType            types.PatchType
	}{
		{"the webhook's URL", `{"spec":{"conversion":{"webhook":{"clientConfig":{"url":"https://attacker.invalid/convert"}}}}}`,
			policyRefusesSpec, types.MergePatchType},
		{"the webhook's Service", `{"spec":{"conversion":{"webhook":{"clientConfig":{"url":null,` +
			`"service":{"namespace":"attacker","name":"convert","path":"/convert","port":443}}}}}}`,
			policyRefusesSpec, types.MergePatchType},
		{"the webhook's review versions", `{"spec":{"conversion":{"webhook":{"conversionReviewVersions":["v1","v1beta1"]}}}}`,
			policyRefusesSpec, types.MergePatchType},
		{"the conversion strategy", `{"spec":{"conversion":{"strategy":"None","webhook":null}}}`,
			policyRefusesSpec, types.MergePatchType},
		{"served", jsonPatch(fmt.Sprintf(`{"op":"replace","path":"/spec/versions/%d/served","value":false}`, served)),
			policyRefusesSpec, types.JSONPatchType},
		{"the schema", jsonPatch(fmt.Sprintf(`{"op":"replace","path":"/spec/versions/%d/schema/openAPIV3Schema",`+
			`"value":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}`, served)),
			policyRefusesSpec, types.JSONPatchType},
		{"the names", `{"spec":{"names":{"shortNames":["attacker"]}}}`, policyRefusesSpec, types.MergePatchType},
		{"a label", `{"metadata":{"labels":{"attacker":"was-here"}}}`, policyRefusesMetadata, types.MergePatchType},
		{"a finalizer", `{"metadata":{"finalizers":["attacker.invalid/hold"]}}`, policyRefusesMetadata, types.MergePatchType},
		// The caBundle is allowed; one more field with it is not.
		{"the caBundle and the URL at once", `{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":"` +
			base64.StdEncoding.EncodeToString(newCABundle(t)) + `","url":"https://attacker.invalid/convert"}}}}}`,
			policyRefusesSpec, types.MergePatchType},
	}
	for _, r := range refused {
		_, err := saCRDs.Patch(ctx, samplecontroller.FooCRDName, r.patchType, []byte(r.patch), metav1.PatchOptions{})
		if problem := policyRefusal(err, r.message); problem != nil {
			t.Errorf("a patch of %s as %s: %v", r.what, deployServiceAccount, problem)
		}
	}
	after, err := crds(t).Get(ctx, samplecontroller.FooCRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != before.GetResourceVersion() || !apiequality.Semantic.DeepEqual(after.Object["spec"], before.Object["spec"]) {
		t.Errorf("CRD %s changed by refused patches: resourceVersion %s, then %s; spec equal: %v", samplecontroller.FooCRDName,
			before.GetResourceVersion(), after.GetResourceVersion(), apiequality.Semantic.DeepEqual(after.Object["spec"], before.Object["spec"]))
	}

	// The controller's write (pkg/certauthority's patchCABundle): a JSON merge
	// patch of the caBundle alone. A new CA is added, then the bundle is put
	// back, both with the token.
	original, _, _ := unstructured.NestedString(before.Object, caBundlePath...)
	decoded, err := base64.StdEncoding.DecodeString(original)
	if err != nil {
		t.Fatal(err)
	}
	bundle := append(bytes.Clone(decoded), newCABundle(t)...)
	written, err := saCRDs.Patch(ctx, samplecontroller.FooCRDName, types.MergePatchType, mergePatchOfCABundle(t, bundle), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("the caBundle write as %s: %v", deployServiceAccount, err)
	}
	if got, _, _ := unstructured.NestedString(written.Object, caBundlePath...); got != base64.StdEncoding.EncodeToString(bundle) {
		t.Errorf("after the caBundle write, the caBundle is %q, want %q", got, base64.StdEncoding.EncodeToString(bundle))
	}
	withoutCABundle := func(crd *unstructured.Unstructured) interface{} {
		spec := crd.DeepCopy()
		unstructured.RemoveNestedField(spec.Object, caBundlePath...)
		return spec.Object["spec"]
	}
	if !apiequality.Semantic.DeepEqual(withoutCABundle(written), withoutCABundle(before)) {
		t.Errorf("the caBundle write changed more of the spec than the caBundle")
	}
	restore := []byte(`{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":null}}}}}`)
	if original != "" {
		restore = mergePatchOfCABundle(t, decoded)
	}
	if _, err := saCRDs.Patch(ctx, samplecontroller.FooCRDName, types.MergePatchType, restore, metav1.PatchOptions{}); err != nil {
		t.Errorf("putting the caBundle back as %s: %v", deployServiceAccount, err)
	}

	// Create, delete and the status subresource: RBAC refuses them before
	// the policy is asked. Were a wider role bound to the ServiceAccount,
	// the policy would refuse them. Dry runs: admission runs, nothing is
	// stored, should the policy let one through.
	dryRun := []string{metav1.DryRunAll}
	otherCRD := standardCRD(t)
	otherCRD.SetName("bars." + samplecontroller.GroupName)
	if err := unstructured.SetNestedStringMap(otherCRD.Object, map[string]string{
		"kind": "Bar", "listKind": "BarList", "plural": "bars", "singular": "bar"}, "spec", "names"); err != nil {
		t.Fatal(err)
	}
	beyondRBAC := []struct {
		what string
		call func(ctx context.Context) error
	}{
		{"create CRD " + otherCRD.GetName(), func(ctx context.Context) error {
			_, err := saCRDs.Create(ctx, otherCRD, metav1.CreateOptions{DryRun: dryRun})
			return err
		}},
		{"delete CRD " + samplecontroller.FooCRDName, func(ctx context.Context) error {
			return saCRDs.Delete(ctx, samplecontroller.FooCRDName, metav1.DeleteOptions{DryRun: dryRun})
		}},
		{"patch the status of CRD " + samplecontroller.FooCRDName, func(ctx context.Context) error {
			_, err := saCRDs.Patch(ctx, samplecontroller.FooCRDName, types.MergePatchType,
				[]byte(`{"status":{"storedVersions":["v1alpha1","v1beta1"]}}`), metav1.PatchOptions{DryRun: dryRun}, "status")
			return err
		}},
	}
	for _, c := range beyondRBAC {
		err := c.call(ctx)
		if !apierrors.IsForbidden(err) || strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			t.Errorf("%s as %s: %v, want RBAC's Forbidden", c.what, deployServiceAccount, err)
		}
	}
	bindWiderCRDRole(t)
	for _, c := range beyondRBAC {
		// RBAC's authorizer learns of the binding through its informer.
		eventually(t, convergeTimeout, c.what+" refused by the policy, not RBAC", func(ctx context.Context) (bool, error) {
			err := c.call(ctx)
			if apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
				return false, err
			}
			if problem := policyRefusal(err, policyRefusesOtherWrites); problem != nil {
				t.Errorf("%s as %s with a wider role: %v", c.what, deployServiceAccount, problem)
			}
			return true, nil
		})
	}

	// An administrator applies a new release of the CRD: kubectl apply, as
	// make deploy does, with a schema that says more.
	upgraded := standardCRD(t)
	const description = "A Foo, as the next release describes it."
	editFooVersion(t, upgraded, func(version map[string]interface{}) {
		if err := unstructured.SetNestedField(version, description, "schema", "openAPIV3Schema", "description"); err != nil {
			t.Fatal(err)
		}
	})
	js, err := upgraded.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cluster.Kubectl(string(js), "apply", "-f", "-")
	if err != nil {
		t.Fatalf("an administrator's kubectl apply of the CRD with the policy in force: %v", err)
	}
	if want := "customresourcedefinition.apiextensions.k8s.io/" + samplecontroller.FooCRDName + " configured"; !strings.Contains(out, want) {
		t.Errorf("kubectl apply printed %q, want %q", out, want)
	}
	applied, err := crds(t).Get(ctx, samplecontroller.FooCRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	editFooVersion(t, applied, func(version map[string]interface{}) {
		if got, _, _ := unstructured.NestedString(version, "schema", "openAPIV3Schema", "description"); got != description {
			t.Errorf("after kubectl apply, the schema's description is %q, want %q", got, description)
		}
	})
	if got, _, _ := unstructured.NestedString(applied.Object, caBundlePath...); got != original {
		t.Errorf("after kubectl apply, the caBundle is %q, want it kept: %q", got, original)
	}
}

// crdsAs is the dynamic client for CustomResourceDefinitions that
// authenticates with the given kubeconfig.
func crdsAs(t *testing.T, kubeconfig string) dynamic.ResourceInterface {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client.Resource(crdGVR)
}

// policyRefusal says why err is not the CRD write policy's refusal with a
// message containing message (nil if it is).
func policyRefusal(err error, message string) error {
	return refusalBy(samplecontroller.CRDWritePolicyName, err, message)
}

// refusalBy says why err is not the refusal of the admission policy name,
// through its binding of the same name, with a message containing message
// (nil if it is).
func refusalBy(name string, err error, message string) error {
	if err == nil {
		return errors.New("accepted, want the policy's refusal")
	}
	want := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ", name, name)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), message) {
		return fmt.Errorf("%w; want Forbidden, %q ... %q", err, want, message)
	}
	return nil
}

// waitPolicyChecked waits until the API server has checked the types of
// the expressions of the admission policy name, and fails the test if it
// warns about any: a policy's status is written once, a moment after it is
// created.
func waitPolicyChecked(t *testing.T, name string) {
	t.Helper()
	// Not named policies: that is the API package of the Policy controller
	// hack/new-controller makes, where this file is rewritten.
	vaps := cluster.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	eventually(t, convergeTimeout, "the type check of policy "+name, func(ctx context.Context) (bool, error) {
		p, err := vaps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Status.ObservedGeneration != p.Generation {
			return false, nil
		}
		if p.Status.TypeChecking != nil && len(p.Status.TypeChecking.ExpressionWarnings) > 0 {
			t.Errorf("policy %s: type checking warns: %+v", p.Name, p.Status.TypeChecking.ExpressionWarnings)
		}
		for _, c := range p.Status.Conditions {
			t.Errorf("policy %s: condition %+v", p.Name, c)
		}
		return true, nil
	})
}

// waitCRDWritePolicyInForce waits until the API server enforces the CRD
// write policy on the client saCRDs of the controller's ServiceAccount: the
// API server loads a new policy and binding through its informers, a moment
// after they are created. Probed with a dry run of a write the policy
// refuses, which changes nothing until then.
func waitCRDWritePolicyInForce(t *testing.T, saCRDs dynamic.ResourceInterface) {
	t.Helper()
	probe := []byte(`{"spec":{"conversion":{"webhook":{"clientConfig":{"url":"https://policy-probe.invalid/convert"}}}}}`)
	eventually(t, convergeTimeout, "policy "+samplecontroller.CRDWritePolicyName+" in force", func(ctx context.Context) (bool, error) {
		_, err := saCRDs.Patch(ctx, samplecontroller.FooCRDName, types.MergePatchType, probe,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		if problem := policyRefusal(err, policyRefusesSpec); problem != nil {
			return false, problem
		}
		return true, nil
	})
}

// mergePatchOfCABundle is the patch pkg/certauthority writes the caBundle
// with: a JSON merge patch of that field alone.
func mergePatchOfCABundle(t *testing.T, bundle []byte) []byte {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"conversion": map[string]any{
		"webhook": map[string]any{"clientConfig": map[string]any{"caBundle": bundle}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return patch
}

// newCABundle returns a new self-signed CA certificate, PEM.
func newCABundle(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := cert.NewSelfSignedCACert(cert.Config{CommonName: "crd-write-policy-test"}, key)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := cert.EncodeCertificates(ca)
	if err != nil {
		t.Fatal(err)
	}
	return pem
}

// bindWiderCRDRole binds to the controller's ServiceAccount, until the test
// ends, a ClusterRole that grants what RBAC otherwise refuses it of CRDs:
// create, delete, and patch of the status.
func bindWiderCRDRole(t *testing.T) {
	t.Helper()
	bindWiderRole(t, "wider-crd-writes",
		rbacv1.PolicyRule{APIGroups: []string{crdGVR.Group}, Resources: []string{crdGVR.Resource}, Verbs: []string{"create", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{crdGVR.Group}, Resources: []string{crdGVR.Resource + "/status"}, Verbs: []string{"patch"}})
}

// bindWiderRole binds to the controller's ServiceAccount, until the test
// ends, a ClusterRole <ControllerName>-<suffix> of rules: what RBAC
// otherwise refuses it, to show that a policy would refuse it too.
func bindWiderRole(t *testing.T, suffix string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	rbac := cluster.Kube.RbacV1()
	name := samplecontroller.ControllerName + "-" + suffix
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: deployServiceAccount, Namespace: deployNamespace}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// ownNamespaceRefusal is enough of the own-namespace policy's message
// (artifacts/deploy/namespace-policy.yaml) to tell it.
const ownNamespaceRefusal = "in its own namespace the " + samplecontroller.ControllerName +
	" writes its Lease, its CA Secret and ConfigMap, and Events alone"

// The deployed ServiceAccount can no longer create, change or delete a
// Deployment in its own namespace, the controller's own among them, with
// which a stolen token would outlive itself as a pod of that account; it
// still may create a Foo's Deployment in any other namespace.
// Dry runs: admission runs, nothing is stored.
func TestOwnNamespacePolicyKeepsTheServiceAccountsDeploymentsOut(t *testing.T) {
	ensureStandardCRD(t)
	applyDeployArtifacts(t)
	ctx := context.Background()
	other := newNamespace(t, "own-namespace-policy")
	saKube := kubeClientFor(t, serviceAccountKubeconfig(t, deployNamespace, deployServiceAccount))
	waitPolicyChecked(t, samplecontroller.OwnNamespacePolicyName)
	waitOwnNamespacePolicyInForce(t, saKube)

	dryRun := []string{metav1.DryRunAll}
	refused := []struct {
		what string
		call func() error
	}{
		{"create a Deployment in " + deployNamespace, func() error {
			_, err := saKube.AppsV1().Deployments(deployNamespace).Create(ctx, fooDeployment(t, deployNamespace, "planted"),
				metav1.CreateOptions{DryRun: dryRun})
			return err
		}},
		{"patch the image of Deployment " + deployNamespace + "/" + deployName, func() error {
			_, err := saKube.AppsV1().Deployments(deployNamespace).Patch(ctx, deployName, types.StrategicMergePatchType,
				[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"controller","image":"attacker.invalid/controller"}]}}}}`),
				metav1.PatchOptions{DryRun: dryRun})
			return err
		}},
		{"delete Deployment " + deployNamespace + "/" + deployName, func() error {
			return saKube.AppsV1().Deployments(deployNamespace).Delete(ctx, deployName, metav1.DeleteOptions{DryRun: dryRun})
		}},
	}
	for i, r := range refused {
		err := r.call()
		problem := refusalBy(samplecontroller.OwnNamespacePolicyName, err, ownNamespaceRefusal)
		if i > 0 {
			// The controller's own Deployment is no Foo's: the owned-object
			// policy refuses its writes too.
			problem = refusalByEither(err, samplecontroller.OwnNamespacePolicyName, ownNamespaceRefusal,
				deploymentsPolicy, "a Deployment a Foo controls")
		}
		if problem != nil {
			t.Errorf("%s as %s: %v", r.what, deployServiceAccount, problem)
		}
	}
	if _, err := saKube.AppsV1().Deployments(other).Create(ctx, fooDeployment(t, other, "elsewhere"),
		metav1.CreateOptions{DryRun: dryRun}); err != nil {
		t.Errorf("create a Deployment in %s as %s: %v, want it admitted", other, deployServiceAccount, err)
	}
}

// waitOwnNamespacePolicyInForce waits until the API server enforces the
// own-namespace policy on saKube, a client of the controller's
// ServiceAccount, probing with a dry run of a Deployment create in its
// namespace, which the policy refuses and which stores nothing until then.
func waitOwnNamespacePolicyInForce(t *testing.T, saKube kubernetes.Interface) {
	t.Helper()
	eventually(t, convergeTimeout, "policy "+samplecontroller.OwnNamespacePolicyName+" in force", func(ctx context.Context) (bool, error) {
		_, err := saKube.AppsV1().Deployments(deployNamespace).Create(ctx, fooDeployment(t, deployNamespace, "policy-probe"),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if problem := refusalBy(samplecontroller.OwnNamespacePolicyName, err, ownNamespaceRefusal); problem != nil {
			return false, problem
		}
		return true, nil
	})
}
