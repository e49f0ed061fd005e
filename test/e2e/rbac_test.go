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
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// The ServiceAccount of artifacts/deploy, with nothing but its token, runs
// the controller through start-up, leader election (acquire, renew, release)
// and a Foo's whole convergence without one forbidden request, serving the
// conversion webhook, whose caBundle it writes with the CRD write policy in
// force; and it cannot read Secrets but its CA's.
func TestServiceAccountTokenSufficesAndCannotReadSecrets(t *testing.T) {
	ensureStandardCRD(t)
	applyDeployArtifacts(t)
	ctx := context.Background()
	ns := newNamespace(t, "prod-sa")

	kubeconfig := serviceAccountKubeconfig(t, deployNamespace, deployServiceAccount)
	saKube := kubeClientFor(t, kubeconfig)
	review, err := saKube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantUser := "system:serviceaccount:" + deployNamespace + ":" + deployServiceAccount
	if got := review.Status.UserInfo.Username; got != wantUser {
		t.Fatalf("the token kubeconfig authenticates as %q, want %q", got, wantUser)
	}
	// The controller's caBundle write, and its Lease, Secret, ConfigMap
	// and Events in its own namespace, below, must pass the admission
	// policies: they are in force before the controller starts.
	waitCRDWritePolicyInForce(t, crdsAs(t, kubeconfig))
	waitOwnNamespacePolicyInForce(t, saKube)
	waitOwnNamesPolicyInForce(t, saKube)  // its Lease, Secret and ConfigMap, created below, by name
	waitOwnEventsPolicyInForce(t, saKube) // its Events about the Foo, below, and their repeats
	waitOwnLeasesPolicyInForce(t, saKube) // its Lease, taken, renewed and released below

	// The leader election Role allows get and update of the Lease named
	// sample-controller only, so this controller uses the default
	// -leader-elect-id. Nobody else uses that Lease: the replicas of
	// artifacts/deploy are kwok's fake pods, and no other test uses the
	// namespace. -namespace keeps the controller off other tests' Foos.
	// The webhook's CA Secret is the deployed one too, in the namespace its
	// Role is in.
	c := startController(t, "controller", "-kubeconfig="+kubeconfig, "-namespace="+ns,
		"-leader-elect=true", "-leader-elect-namespace="+deployNamespace, "-webhook-namespace="+deployNamespace)
	identity := leaderElectionIdentity(t, c)
	waitControllerReady(t, c)
	waitLeaseHolder(t, deployNamespace, deployName, identity)

	foo := createFoo(t, newFoo(ns, "sa-foo", "sa-foo", int32p(2)))
	foo = waitFooReady(t, ns, foo.Name)
	waitManagedDeployment(t, ns, foo.Spec.Deployment.Name, foo)
	waitEvent(t, foo, samplecontroller.ReasonSynced) // events are written with the token too
	// Its CA is new (the Namespace, and the Secret in it, are), so it wrote
	// the caBundle to be Ready; the policy let it.
	if !strings.Contains(c.Log(), "Wrote the CRD's caBundle") {
		t.Errorf("the controller did not log its write of the CRD's caBundle")
	}

	// A periodic renewal (every -leader-elect-retry-period, 2 s) after the
	// acquisition: update is allowed.
	eventually(t, convergeTimeout, "a periodic renewal of the Lease", func(ctx context.Context) (bool, error) {
		lease, err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if lease.Spec.AcquireTime == nil || lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Sub(lease.Spec.AcquireTime.Time) < 2*time.Second {
			return false, fmt.Errorf("lease %s", describeLease(lease))
		}
		return true, nil
	})
	// The metrics CA bundle is published with the token too (the webhook
	// Role's ConfigMap rules), and verifies the metrics certificate.
	verifiedMetricsCA(t, c.MetricsURL(), deployNamespace)
	samples := scrape(t, c)
	if got, ok := leaderGauge(samples, deployName); !ok || got != 1 {
		t.Errorf("leader_election_master_status{name=%q} = %v (present %v), want 1", deployName, got, ok)
	}
	if denied := requestsWithCode(samples, "403"); denied != 0 {
		t.Errorf("%v requests answered 403 Forbidden", denied)
	}

	// Release on SIGTERM is an update of the Lease too.
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := c.Wait(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	log := c.Log()
	if !strings.Contains(log, "Released leadership") {
		t.Errorf("the controller did not log the release of the Lease")
	}
	lease, err := cluster.Kube.CoordinationV1().Leases(deployNamespace).Get(ctx, deployName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if holder := leaseHolderOf(lease); holder != "" {
		t.Errorf("Lease still held by %q after the release: %s", holder, describeLease(lease))
	}
	if lines := grepLines(log, regexp.MustCompile(`(?i)forbidden`)); len(lines) > 0 {
		t.Errorf("the controller's log mentions forbidden:\n%s", strings.Join(lines, "\n"))
	}

	// No Secrets: listing (in a namespace, in all) and getting, even a
	// Secret that exists, are refused.
	secret, err := cluster.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "not-for-the-controller"},
		StringData: map[string]string{"password": "hunter2"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeSystemSecret := "any-name" // RBAC refuses before looking the name up
	if list, err := cluster.Kube.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{}); err == nil && len(list.Items) > 0 {
		kubeSystemSecret = list.Items[0].Name
	}
	secrets := []struct {
		what string
		call func() error
	}{
		{"list Secrets in " + ns, func() error {
			_, err := saKube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"list Secrets in " + deployNamespace, func() error {
			_, err := saKube.CoreV1().Secrets(deployNamespace).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"list Secrets in all namespaces", func() error {
			_, err := saKube.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"get Secret " + ns + "/" + secret.Name, func() error {
			_, err := saKube.CoreV1().Secrets(ns).Get(ctx, secret.Name, metav1.GetOptions{})
			return err
		}},
		{"get Secret kube-system/" + kubeSystemSecret, func() error {
			_, err := saKube.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, kubeSystemSecret, metav1.GetOptions{})
			return err
		}},
	}
	for _, s := range secrets {
		if err := s.call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as %s: got %v, want Forbidden", s.what, wantUser, err)
		}
	}
}

// kubeClientFor builds a clientset from a kubeconfig file.
func kubeClientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// waitLeaseHolder waits until the Lease ns/name is held by holder.
func waitLeaseHolder(t *testing.T, ns, name, holder string) {
	t.Helper()
	eventually(t, convergeTimeout, fmt.Sprintf("Lease %s/%s held by %s", ns, name, holder), func(ctx context.Context) (bool, error) {
		lease, err := cluster.Kube.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if leaseHolderOf(lease) != holder {
			return false, fmt.Errorf("lease %s", describeLease(lease))
		}
		return true, nil
	})
}

// requestsWithCode sums the controller's API requests answered with code.
func requestsWithCode(samples []framework.Sample, code string) float64 {
	return framework.Sum(samples, "rest_client_requests_total", func(l map[string]string) bool { return l["code"] == code })
}

// A tenant runs the controller for its own namespace (-namespace) with a
// namespaced Role only: Foos, their status, Deployments, Events and the
// leader election Lease, all in that namespace, and nothing cluster-wide. The
// start check reads discovery and the published OpenAPI, which every
// authenticated user may read, never the CRD object a tenant cannot be
// granted; and a Foo converges without one forbidden request.
func TestNamespacedRoleSufficesForNamespaceScopedMode(t *testing.T) {
	ensureStandardCRD(t)
	ctx := context.Background()
	ns := newNamespace(t, "tenant")
	const account = "tenant-controller"
	if _, err := cluster.Kube.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: account},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{samplev1beta1.SchemeGroupVersion.Group}, Resources: []string{samplecontroller.FooResource}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{samplev1beta1.SchemeGroupVersion.Group}, Resources: []string{"foos/status"}, Verbs: []string{"patch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list", "watch", "create", "get", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		},
	}
	if _, err := cluster.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: account},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: account},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: ns}},
	}
	if _, err := cluster.Kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	kubeconfig := serviceAccountKubeconfig(t, ns, account)
	// Metrics off: delegated authentication of scrapes needs TokenReviews
	// and SubjectAccessReviews, which are cluster-scoped. The webhook off:
	// its caBundle is in the CRD, cluster-scoped too.
	c := startController(t, "controller", "-kubeconfig="+kubeconfig, "-namespace="+ns,
		"-leader-elect=true", "-leader-elect-namespace="+ns, "-metrics-bind-address=0", "-webhook-bind-address=0")
	waitControllerReady(t, c)
	waitLeaseHolder(t, ns, samplecontroller.ControllerName, leaderElectionIdentity(t, c))

	foo := createFoo(t, newFoo(ns, "tenant-foo", "tenant-foo", int32p(2)))
	foo = waitFooReady(t, ns, foo.Name)
	waitManagedDeployment(t, ns, foo.Spec.Deployment.Name, foo)
	waitEvent(t, foo, samplecontroller.ReasonSynced)
	if lines := grepLines(c.Log(), regexp.MustCompile(`(?i)forbidden`)); len(lines) > 0 {
		t.Errorf("the controller's log mentions forbidden:\n%s", strings.Join(lines, "\n"))
	}
}
