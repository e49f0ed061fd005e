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
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/test/framework"
)

// leaderElectionRole names the Role and RoleBinding of artifacts/deploy for
// the Lease.
const leaderElectionRole = samplecontroller.ControllerName + "-leader-election"

// artifacts/deploy, applied as kubectl apply -k does, installs a working, locked-down
// controller Deployment. Its pods are kwok's fakes: they become Ready but do
// not run the controller, so they compete with no test.
func TestDeployArtifactsInstallLockedDownController(t *testing.T) {
	ensureStandardCRD(t)
	ctx := context.Background()
	kube := cluster.Kube

	out := applyDeployArtifacts(t)
	for _, object := range []string{
		"customresourcedefinition.apiextensions.k8s.io/" + samplecontroller.FooCRDName,
		"namespace/" + deployNamespace,
		"serviceaccount/" + deployServiceAccount,
		"clusterrole.rbac.authorization.k8s.io/" + deployName,
		"clusterrolebinding.rbac.authorization.k8s.io/" + deployName,
		"validatingadmissionpolicy.admissionregistration.k8s.io/" + samplecontroller.CRDWritePolicyName,
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/" + samplecontroller.CRDWritePolicyName,
		"validatingadmissionpolicy.admissionregistration.k8s.io/" + samplecontroller.OwnNamespacePolicyName,
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/" + samplecontroller.OwnNamespacePolicyName,
		"validatingadmissionpolicy.admissionregistration.k8s.io/" + samplecontroller.OwnNamesPolicyName,
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/" + samplecontroller.OwnNamesPolicyName,
		"validatingadmissionpolicy.admissionregistration.k8s.io/" + samplecontroller.OwnEventsPolicyName,
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/" + samplecontroller.OwnEventsPolicyName,
		"validatingadmissionpolicy.admissionregistration.k8s.io/" + samplecontroller.OwnLeasesPolicyName,
		"validatingadmissionpolicybinding.admissionregistration.k8s.io/" + samplecontroller.OwnLeasesPolicyName,
		"resourcequota/" + samplecontroller.LeaseQuotaName,
		"clusterrole.rbac.authorization.k8s.io/" + framework.MetricsReaderClusterRole,
		"role.rbac.authorization.k8s.io/" + leaderElectionRole,
		"rolebinding.rbac.authorization.k8s.io/" + leaderElectionRole,
		"flowschema.flowcontrol.apiserver.k8s.io/" + deployLeaseFlowSchema,
		"deployment.apps/" + deployName,
		"poddisruptionbudget.policy/" + deployName,
		"service/" + samplecontroller.ControllerName + "-metrics",
		"role.rbac.authorization.k8s.io/" + samplecontroller.ControllerName + "-webhook",
		"rolebinding.rbac.authorization.k8s.io/" + samplecontroller.ControllerName + "-webhook",
		"service/" + samplecontroller.WebhookServiceName,
		"networkpolicy.networking.k8s.io/" + deployName,
	} {
		if !strings.Contains(out, object+" ") {
			t.Errorf("kubectl apply of %s does not report %s; output:\n%s", deployKustomization, object, out)
		}
	}
	// The Namespace enforces the restricted Pod Security Standard; kubectl
	// prints the API server's warning if the pod template would violate it.
	if strings.Contains(out, "PodSecurity") {
		t.Errorf("kubectl apply of %s warned about Pod Security:\n%s", deployKustomization, out)
	}

	ns, err := kube.CoreV1().Namespaces().Get(ctx, deployNamespace, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("Namespace %s enforces Pod Security %q, want restricted", deployNamespace, got)
	}
	if _, err := kube.CoreV1().ServiceAccounts(deployNamespace).Get(ctx, deployServiceAccount, metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Get(ctx, deployName, metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	if _, err := kube.RbacV1().Roles(deployNamespace).Get(ctx, leaderElectionRole, metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	crb, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, deployName, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
	} else if err := checkBinding(crb.RoleRef, crb.Subjects, "ClusterRole", deployName); err != nil {
		t.Errorf("ClusterRoleBinding %s: %v", deployName, err)
	}
	rb, err := kube.RbacV1().RoleBindings(deployNamespace).Get(ctx, leaderElectionRole, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
	} else if err := checkBinding(rb.RoleRef, rb.Subjects, "Role", leaderElectionRole); err != nil {
		t.Errorf("RoleBinding %s/%s: %v", deployNamespace, leaderElectionRole, err)
	}

	deployment, err := kube.AppsV1().Deployments(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range deploymentProblems(deployment) {
		t.Errorf("Deployment %s/%s: %s", deployNamespace, deployName, problem)
	}
	if t.Failed() {
		t.FailNow()
	}

	// As an operator checks it (docs/deploying.md), then in detail: both
	// replicas Ready on the fake node.
	kubectl(t, "-n", deployNamespace, "rollout", "status", "deployment/"+deployName, "--timeout=120s")
	selector := labels.SelectorFromSet(deployment.Spec.Selector.MatchLabels).String()
	eventually(t, convergeTimeout, "2 Ready pods of Deployment "+deployName, func(ctx context.Context) (bool, error) {
		d, err := kube.AppsV1().Deployments(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if d.Status.ReadyReplicas != 2 || d.Status.AvailableReplicas != 2 || d.Status.UpdatedReplicas != 2 {
			return false, fmt.Errorf("status: %d ready, %d available, %d updated replicas", d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas)
		}
		pods, err := kube.CoreV1().Pods(deployNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		var ready []string
		for i := range pods.Items {
			if pod := &pods.Items[i]; podReady(pod) && pod.Spec.NodeName == nodeName {
				ready = append(ready, pod.Name)
			}
		}
		if len(pods.Items) != 2 || len(ready) != 2 {
			return false, fmt.Errorf("%d pods match %s, Ready on %s: %v", len(pods.Items), selector, nodeName, ready)
		}
		return true, nil
	})

	// The API server accepted the NetworkPolicy (its validation: named
	// ports, selectors) and, as stored, it selects exactly the controller's
	// pods. Whether traffic is then dropped is the network plugin's to do:
	// this cluster runs none, so nothing here shows that.
	np, err := kube.NetworkingV1().NetworkPolicies(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	npSelector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	selected, err := kube.CoreV1().Pods(deployNamespace).List(ctx, metav1.ListOptions{LabelSelector: npSelector.String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(selected.Items) != 2 || len(np.Spec.Ingress) != 2 {
		t.Errorf("NetworkPolicy %s/%s selects %d pods with %s and has %d ingress rules, want the 2 controller pods and 2 rules",
			deployNamespace, deployName, len(selected.Items), npSelector, len(np.Spec.Ingress))
	}

	// Applying again changes nothing (docs/deploying.md). The API server
	// writes each admission policy's status once, after it is created.
	waitPolicyChecked(t, samplecontroller.CRDWritePolicyName)
	waitPolicyChecked(t, samplecontroller.OwnNamespacePolicyName)
	before := deployResourceVersions(t)
	applyDeployArtifacts(t)
	if after := deployResourceVersions(t); !maps.Equal(before, after) {
		t.Errorf("applying %s again changed objects: resourceVersions before %v, after %v", deployKustomization, before, after)
	}
}

// checkBinding says why a binding does not grant the role kind/name to the
// ServiceAccount of artifacts/deploy (nil if it does).
func checkBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, name string) error {
	if ref.APIGroup != rbacv1.GroupName || ref.Kind != kind || ref.Name != name {
		return fmt.Errorf("roleRef %+v, want %s %s", ref, kind, name)
	}
	want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: deployServiceAccount, Namespace: deployNamespace}
	if len(subjects) != 1 || subjects[0] != want {
		return fmt.Errorf("subjects %+v, want exactly %+v", subjects, want)
	}
	return nil
}

// deploymentProblems lists how the controller Deployment of artifacts/deploy
// falls short of what a production installation needs.
func deploymentProblems(d *appsv1.Deployment) []string {
	var problems []string
	add := func(format string, args ...interface{}) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		add("spec.replicas %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != deployServiceAccount {
		add("serviceAccountName %q, want %q", pod.ServiceAccountName, deployServiceAccount)
	}
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		add("pod seccompProfile %+v, want RuntimeDefault", psc.SeccompProfile)
	}
	if len(pod.Containers) != 1 {
		add("%d containers, want 1", len(pod.Containers))
		return problems
	}
	c := pod.Containers[0]
	csc := c.SecurityContext
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	if !ptr.Deref(csc.RunAsNonRoot, false) && !ptr.Deref(psc.RunAsNonRoot, false) {
		add("runAsNonRoot not set on the pod (%v) nor the container (%v)", ptrBool(psc.RunAsNonRoot), ptrBool(csc.RunAsNonRoot))
	}
	if !ptr.Deref(csc.ReadOnlyRootFilesystem, false) {
		add("readOnlyRootFilesystem %s, want true", ptrBool(csc.ReadOnlyRootFilesystem))
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		add("allowPrivilegeEscalation %s, want false", ptrBool(csc.AllowPrivilegeEscalation))
	}
	if csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(csc.Capabilities.Add) > 0 {
		add("capabilities %+v, want drop [ALL] and nothing added", csc.Capabilities)
	}

	// The probes must hit the port the probe server listens on, which the
	// args set.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	healthPort, ok := ports["health"]
	if !ok {
		add("no container port named health: %+v", c.Ports)
	}
	if flag := fmt.Sprintf("-health-probe-bind-address=:%d", healthPort); !slices.Contains(c.Args, flag) {
		add("args %v lack %s, the health port", c.Args, flag)
	}
	if flag := fmt.Sprintf("-metrics-bind-address=:%d", ports["metrics"]); !slices.Contains(c.Args, flag) {
		add("args %v lack %s, the metrics port", c.Args, flag)
	}
	checkProbe := func(kind string, p *corev1.Probe, path string) {
		if p == nil || p.HTTPGet == nil {
			add("%s probe %+v, want an HTTP GET of %s", kind, p, path)
			return
		}
		port := p.HTTPGet.Port
		if p.HTTPGet.Path != path || !(port == intstr.FromString("health") || port == intstr.FromInt32(healthPort)) {
			add("%s probe GET %s on port %s, want %s on the health port (%d)", kind, p.HTTPGet.Path, port.String(), path, healthPort)
		}
	}
	checkProbe("liveness", c.LivenessProbe, "/healthz")
	checkProbe("readiness", c.ReadinessProbe, "/readyz")

	// The Go collector's soft limit follows the container's memory limit,
	// in bytes (a divisor of 1, or none, which means 1).
	if len(c.Env) != 1 || c.Env[0].Name != "GOMEMLIMIT" || c.Env[0].Value != "" || c.Env[0].ValueFrom == nil ||
		c.Env[0].ValueFrom.ResourceFieldRef == nil {
		add("env %+v, want GOMEMLIMIT from the downward API and nothing else", c.Env)
	} else if ref := c.Env[0].ValueFrom.ResourceFieldRef; ref.Resource != "limits.memory" ||
		(ref.ContainerName != "" && ref.ContainerName != c.Name) || !(ref.Divisor.IsZero() || ref.Divisor.Cmp(resource.MustParse("1")) == 0) {
		add("GOMEMLIMIT from %+v, want limits.memory of this container in bytes", ref)
	}

	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := c.Resources.Requests[r]
		limit, hasLimit := c.Resources.Limits[r]
		switch {
		case !hasReq || req.IsZero():
			add("no %s request", r)
		case !hasLimit || limit.IsZero():
			add("no %s limit", r)
		case req.Cmp(limit) > 0:
			add("%s request %s above the limit %s", r, req.String(), limit.String())
		}
	}
	return problems
}

// deployResourceVersions maps the namespaced objects of artifacts/deploy
// and its ClusterRole and binding to their resourceVersions.
func deployResourceVersions(t *testing.T) map[string]string {
	t.Helper()
	out := kubectl(t, "get", "-k", deployKustomization, "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
	versions := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			versions[k] = v
		}
	}
	if len(versions) < 10 {
		t.Fatalf("kubectl get -k %s: %d objects, want 10:\n%s", deployKustomization, len(versions), out)
	}
	return versions
}
