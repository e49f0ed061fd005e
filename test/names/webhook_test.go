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

package names

import (
	"flag"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kube-samples/sample-controller/internal/crdfile"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/conversionwebhook"
	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/test/framework"
)

// The CRD reaches the conversion webhook through the deployed Service, on
// the port the Deployment's replicas serve it on, at the path they serve:
// a name or port out of step and every read of v1alpha1 fails.
func TestCRDReachesTheDeployedWebhook(t *testing.T) {
	crd, err := crdfile.Read("../../artifacts/examples/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Conversion.Webhook == nil || crd.Spec.Conversion.Webhook.ClientConfig.Service == nil {
		t.Fatalf("the CRD's conversion has no webhook Service: %+v", crd.Spec.Conversion)
	}
	ref := crd.Spec.Conversion.Webhook.ClientConfig.Service
	var svc corev1.Service
	decode(t, "webhook-service.yaml", &svc)
	var d appsv1.Deployment
	decode(t, "deployment.yaml", &d)
	if ref.Name != samplecontroller.WebhookServiceName || svc.Name != ref.Name || ref.Namespace != svc.Namespace ||
		svc.Namespace != d.Namespace {
		t.Errorf("the CRD names Service %s/%s; %s/webhook-service.yaml is %s/%s, the Deployment in %s; want %s",
			ref.Namespace, ref.Name, deployDir, svc.Namespace, svc.Name, d.Namespace, samplecontroller.WebhookServiceName)
	}
	if ref.Path != conversionwebhook.Path {
		t.Errorf("the CRD calls %s, the webhook serves %s", ref.Path, conversionwebhook.Path)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != ref.Port {
		t.Fatalf("the CRD calls port %d, the Service has %+v", ref.Port, svc.Spec.Ports)
	}
	target := svc.Spec.Ports[0].TargetPort.String()

	o := options.AddFlags(flag.NewFlagSet("controller", flag.ContinueOnError))
	bind := o.Webhook.BindAddress
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(strings.TrimLeft(arg, "-"), "webhook-bind-address="); ok {
			bind = v
		}
		if v, ok := strings.CutPrefix(strings.TrimLeft(arg, "-"), "webhook-namespace="); ok {
			t.Errorf("%s/deployment.yaml: -webhook-namespace=%s: the Role and Service are in the Deployment's namespace", deployDir, v)
		}
	}
	_, port, _ := strings.Cut(bind, ":")
	var named *corev1.ContainerPort
	for i, p := range d.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == target {
			named = &d.Spec.Template.Spec.Containers[0].Ports[i]
		}
	}
	if named == nil || strconv.Itoa(int(named.ContainerPort)) != port {
		t.Errorf("the Service targets port %q, the container's is %+v, the webhook listens on %q", target, named, bind)
	}
}

// The webhook Role lets the replicas read and update one Secret, the CA's
// (-webhook-ca-secret's default, in the Deployment's namespace), and create
// it: RBAC cannot limit a create to a name.
func TestWebhookRoleNamesTheCASecret(t *testing.T) {
	o := options.AddFlags(flag.NewFlagSet("controller", flag.ContinueOnError))
	var role rbacv1.Role
	decode(t, "webhook-role.yaml", &role)
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{o.Webhook.CASecretName},
			Verbs: []string{"get", "list", "watch", "update"}},
		// The metrics CA bundle the replicas publish (main.go's startMetricsCA).
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{samplecontroller.MetricsCAConfigMapName},
			Verbs: []string{"get", "list", "watch", "update"}},
	}
	if !slices.EqualFunc(role.Rules, want, func(a, b rbacv1.PolicyRule) bool {
		return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
			slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.Verbs, b.Verbs)
	}) {
		t.Errorf("%s/webhook-role.yaml: rules %+v, want %+v", deployDir, role.Rules, want)
	}
}

// The ClusterRole grants the CRD's caBundle to the controller: the Foo CRD
// alone, by name.
func TestClusterRoleGrantsTheFooCRDOnly(t *testing.T) {
	var role rbacv1.ClusterRole
	decode(t, "clusterrole.yaml", &role)
	var rules []rbacv1.PolicyRule
	for _, rule := range role.Rules {
		if slices.Contains(rule.Resources, "customresourcedefinitions") {
			rules = append(rules, rule)
		}
	}
	if len(rules) != 1 || !slices.Equal(rules[0].ResourceNames, []string{samplecontroller.FooCRDName}) ||
		!slices.Equal(rules[0].Verbs, []string{"list", "watch", "patch"}) {
		t.Errorf("%s/clusterrole.yaml: CRD rules %+v, want list, watch and patch of %s alone", deployDir, rules,
			samplecontroller.FooCRDName)
	}
}

// The end-to-end stand-in for the webhook's Service drops a replica after as
// many failed readiness probes in a row as the kubelet does under the
// manifest, at /readyz.
func TestWebhookServiceStandInProbesAsTheManifestSays(t *testing.T) {
	var deployment appsv1.Deployment
	decode(t, "deployment.yaml", &deployment)
	probe := deployment.Spec.Template.Spec.Containers[0].ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		t.Fatalf("%s/deployment.yaml: no HTTP readiness probe", deployDir)
	}
	if probe.HTTPGet.Path != "/readyz" || probe.FailureThreshold != framework.ReadinessFailureThreshold {
		t.Errorf("%s/deployment.yaml: readiness probe %s, failureThreshold %d; the stand-in probes /readyz, "+
			"failureThreshold %d", deployDir, probe.HTTPGet.Path, probe.FailureThreshold,
			framework.ReadinessFailureThreshold)
	}
}

// The CRD write policy confines the controller's ServiceAccount (any
// namespace's, so that an overlay's namespace: keeps it confined) to the
// Foo CRD the ClusterRole lets it patch, and its binding applies it to
// every such write, refusing what it does not admit.
func TestCRDWritePolicyNamesTheControllersAccountAndCRD(t *testing.T) {
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	decode(t, "crd-policy.yaml", &policy)
	path := deployDir + "/crd-policy.yaml"
	var sa deployObject
	decode(t, "serviceaccount.yaml", &sa)
	wantUser := "request.userInfo.username.startsWith('system:serviceaccount:') && " +
		"request.userInfo.username.endsWith(':" + sa.Metadata.Name + "')"
	if sa.Metadata.Name != samplecontroller.ControllerName || len(policy.Spec.MatchConditions) != 1 ||
		policy.Spec.MatchConditions[0].Expression != wantUser {
		t.Errorf("%s: matchConditions %+v, want one: %s (the ServiceAccount is %q)", path,
			policy.Spec.MatchConditions, wantUser, sa.Metadata.Name)
	}
	crd := "request.name == '" + samplecontroller.FooCRDName + "'"
	if len(policy.Spec.Validations) == 0 || !strings.Contains(policy.Spec.Validations[0].Expression, crd) {
		t.Errorf("%s: the first validation does not say %s: %+v", path, crd, policy.Spec.Validations)
	}
	want := admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{
			admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"apiextensions.k8s.io"}, APIVersions: []string{"v1"},
			Resources: []string{"customresourcedefinitions", "customresourcedefinitions/status"}},
	}
	if c := policy.Spec.MatchConstraints; c == nil || len(c.ResourceRules) != 1 ||
		!slices.Equal(c.ResourceRules[0].Operations, want.Operations) ||
		!slices.Equal(c.ResourceRules[0].APIGroups, want.APIGroups) ||
		!slices.Equal(c.ResourceRules[0].APIVersions, want.APIVersions) ||
		!slices.Equal(c.ResourceRules[0].Resources, want.Resources) || len(c.ResourceRules[0].ResourceNames) > 0 {
		t.Errorf("%s: matchConstraints %+v, want every CRD write: %+v", path, c, want)
	}
	if f := policy.Spec.FailurePolicy; f == nil || *f != admissionregistrationv1.Fail {
		t.Errorf("%s: failurePolicy %v, want Fail", path, f)
	}

	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	decode(t, "crd-policybinding.yaml", &binding)
	if s := binding.Spec; s.PolicyName != policy.Name || s.ParamRef != nil || s.MatchResources != nil ||
		!slices.Equal(s.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("%s/crd-policybinding.yaml: %+v, want policy %s, validationActions [Deny], nothing narrower",
			deployDir, s, policy.Name)
	}
}

// The own-namespace policy confines the same user, in the namespace of
// namespace.yaml, selected by a label the Namespace carries (an overlay's
// namespace: renames the Namespace and keeps its labels).
func TestOwnNamespacePolicyNamesTheControllersAccountAndNamespace(t *testing.T) {
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	decode(t, "namespace-policy.yaml", &policy)
	path := deployDir + "/namespace-policy.yaml"
	name := samplecontroller.ControllerName
	want := []string{
		"request.userInfo.username.startsWith('system:serviceaccount:') && " +
			"request.userInfo.username.endsWith(':" + name + "')",
		"request.userInfo.username == 'system:serviceaccount:' + request.namespace + ':" + name + "'",
	}
	got := make([]string, 0, len(policy.Spec.MatchConditions))
	for _, c := range policy.Spec.MatchConditions {
		got = append(got, c.Expression)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: matchConditions %q, want %q", path, got, want)
	}
	if f := policy.Spec.FailurePolicy; f == nil || *f != admissionregistrationv1.Fail {
		t.Errorf("%s: failurePolicy %v, want Fail", path, f)
	}

	var ns corev1.Namespace
	decode(t, "namespace.yaml", &ns)
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	decode(t, "namespace-policybinding.yaml", &binding)
	s := binding.Spec
	if s.PolicyName != policy.Name || s.ParamRef != nil ||
		!slices.Equal(s.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("%s/namespace-policybinding.yaml: %+v, want policy %s, validationActions [Deny]", deployDir, s, policy.Name)
	}
	if s.MatchResources == nil || s.MatchResources.NamespaceSelector == nil ||
		len(s.MatchResources.NamespaceSelector.MatchLabels) == 0 || len(s.MatchResources.NamespaceSelector.MatchExpressions) > 0 {
		t.Fatalf("%s/namespace-policybinding.yaml: matchResources %+v, want a namespaceSelector of labels", deployDir, s.MatchResources)
	}
	for k, v := range s.MatchResources.NamespaceSelector.MatchLabels {
		if ns.Labels[k] != v {
			t.Errorf("%s/namespace-policybinding.yaml selects namespaces labelled %s=%s; Namespace %s has %s=%q",
				deployDir, k, v, ns.Name, k, ns.Labels[k])
		}
	}
}

// The own-namespace policy refuses every write of the ServiceAccount in its
// namespace but those its namespaced Roles grant (and Events, which the
// ClusterRole grants everywhere): a Role that comes to grant a write the
// policy does not name would be refused at admission, the first time the
// controller makes it.
func TestOwnNamespacePolicyAdmitsWhatTheRolesGrant(t *testing.T) {
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	decode(t, "namespace-policy.yaml", &policy)
	if len(policy.Spec.Validations) != 1 {
		t.Fatalf("namespace-policy.yaml: %d validations, want 1", len(policy.Spec.Validations))
	}
	expr := policy.Spec.Validations[0].Expression
	writes := map[string]bool{"create": true, "update": true, "patch": true, "delete": true}
	resources := []string{"events"}
	for _, file := range []string{"leader-election-role.yaml", "webhook-role.yaml"} {
		var role rbacv1.Role
		decode(t, file, &role)
		for _, rule := range role.Rules {
			if slices.ContainsFunc(rule.Verbs, func(v string) bool { return writes[v] }) {
				resources = append(resources, rule.Resources...)
			}
		}
	}
	for _, r := range resources {
		if !strings.Contains(expr, "'"+r+"'") {
			t.Errorf("namespace-policy.yaml: the validation %q does not admit %s, which a namespaced Role lets the controller write", expr, r)
		}
	}
}
