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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/conversion"
	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/test/framework"
)

// The CRD reaches the conversion webhook through the deployed Service, on
// the port the Deployment's replicas serve it on, at the path they serve:
// a name or port out of step and every read of v1alpha1 fails.
func TestCRDReachesTheDeployedWebhook(t *testing.T) {
	crd, err := apicheck.ReadCRD("../../artifacts/examples/crd.yaml")
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
	if ref.Path != conversion.Path {
		t.Errorf("the CRD calls %s, the webhook serves %s", ref.Path, conversion.Path)
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
