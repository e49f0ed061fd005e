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

// Production readiness (issue 5, item 7): the artifacts/deploy installation,
// the ServiceAccount's permissions, leader election fail-over, metrics and
// probes, and a graceful stop with a large backlog. Every subtest stands on
// its own (it can run alone with -run TestProduction/<name>) and removes what
// it creates, cluster-scoped objects included.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/test/framework"
)

const (
	// deployKustomization is what an operator applies (kubectl apply -k),
	// relative to the repository root.
	deployKustomization = "artifacts/deploy"
	// deployNamespace, deployServiceAccount and deployName are the names
	// artifacts/deploy uses: the Namespace, the ServiceAccount, the
	// Deployment, the ClusterRole and its binding, and the Lease the
	// leader election Role allows (resourceNames).
	deployNamespace      = "sample-controller"
	deployServiceAccount = "sample-controller"
	deployName           = "sample-controller"
	// leaderElectionRole names the Role and RoleBinding for the Lease.
	leaderElectionRole = "sample-controller-leader-election"
)

func TestProduction(t *testing.T) {
	t.Run("a_kubectl_apply_k_artifacts_deploy", testDeployArtifacts)
	t.Run("b_serviceaccount_token_suffices_and_cannot_read_secrets", testServiceAccountToken)
	t.Run("c_leader_election_failover", testLeaderElectionFailover)
	t.Run("d_metrics_and_readyz", testMetricsAndReadyz)
	t.Run("e_sigterm_with_large_backlog", testSIGTERMWithBacklog)
}

// a. kubectl apply -k artifacts/deploy installs a working, locked-down
// controller Deployment. Its pods are kwok's fakes: they become Ready but do
// not run the controller, so they compete with no test.
func testDeployArtifacts(t *testing.T) {
	ensureStandardCRD(t)
	ctx := context.Background()
	kube := cluster.Kube

	out := applyDeployArtifacts(t)
	for _, object := range []string{
		"customresourcedefinition.apiextensions.k8s.io/" + samplev1alpha1.FooCRDName,
		"namespace/" + deployNamespace,
		"serviceaccount/" + deployServiceAccount,
		"clusterrole.rbac.authorization.k8s.io/" + deployName,
		"clusterrolebinding.rbac.authorization.k8s.io/" + deployName,
		"clusterrole.rbac.authorization.k8s.io/" + framework.MetricsReaderClusterRole,
		"role.rbac.authorization.k8s.io/" + leaderElectionRole,
		"rolebinding.rbac.authorization.k8s.io/" + leaderElectionRole,
		"deployment.apps/" + deployName,
		"poddisruptionbudget.policy/" + deployName,
		"service/sample-controller-metrics",
	} {
		if !strings.Contains(out, object+" ") {
			t.Errorf("kubectl apply -k %s does not report %s; output:\n%s", deployKustomization, object, out)
		}
	}
	// The Namespace enforces the restricted Pod Security Standard; kubectl
	// prints the API server's warning if the pod template would violate it.
	if strings.Contains(out, "PodSecurity") {
		t.Errorf("kubectl apply -k %s warned about Pod Security:\n%s", deployKustomization, out)
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

	// As an operator checks it (docs/operations.md), then in detail: both
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

	// Applying again changes nothing (docs/operations.md): what (b) does
	// after (a) is a no-op.
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

// b. The ServiceAccount of artifacts/deploy, with nothing but its token, runs
// the controller through start-up, leader election (acquire, renew, release)
// and a Foo's whole convergence without one forbidden request; and it cannot
// read Secrets.
func testServiceAccountToken(t *testing.T) {
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

	// The leader election Role allows get and update of the Lease named
	// sample-controller only, so this controller uses the default
	// -leader-elect-id. Nobody else uses that Lease: the replicas of
	// artifacts/deploy are kwok's fake pods, and no other test uses the
	// namespace. -namespace keeps the controller off other tests' Foos.
	c := startController(t, "controller", "-kubeconfig="+kubeconfig, "-namespace="+ns,
		"-leader-elect=true", "-leader-elect-namespace="+deployNamespace)
	identity := leaderElectionIdentity(t, c)
	waitControllerReady(t, c)
	waitLeaseHolder(t, deployNamespace, deployName, identity)

	foo := createFoo(t, newFoo(ns, "sa-foo", "sa-foo", int32p(2)))
	foo = waitFooReady(t, ns, foo.Name)
	waitManagedDeployment(t, ns, foo.Spec.DeploymentName, foo)
	waitEvent(t, foo, samplev1alpha1.ReasonSynced) // events are written with the token too

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
	code, err := c.Wait(10 * time.Second)
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

// Fail-over bounds of scenario c, from the signal to a Foo created right
// after it being Ready. The replicas run with the default lease duration
// (15 s) and renew deadline, and a retry period of 1 s instead of 2 s.
const (
	// A killed leader does not release the Lease. A standby takes it at its
	// first attempt after having seen it unchanged for the lease duration,
	// counted from the attempt at which it saw the last renewal. Attempts
	// are one to 1.2 retry periods of jitter apart, so the take-over comes
	// 15 s plus up to two such gaps after the last renewal: with the
	// default 2 s retry period up to about 23.8 s (about 17 s typically),
	// with 1 s at most about 19.4 s. Hence the 1 s retry period here.
	sigkillFailoverBound = 20 * time.Second
	// A terminated leader releases the Lease; the standby takes it at its
	// next attempt, at most 2.2 s later.
	sigtermFailoverBound = 5 * time.Second
)

// c. Two replicas: one leads and reconciles, the other waits with warm
// caches. A killed leader is replaced within the lease duration and a bit;
// a terminated one hands over at once.
func testLeaderElectionFailover(t *testing.T) {
	ensureStandardCRD(t)
	ns := newNamespace(t, "prod-failover")
	id := "e2e-failover-" + ns[strings.LastIndex(ns, "-")+1:]
	leases := cluster.Kube.CoordinationV1().Leases(ns)

	start := func(name string) *replica {
		// -v=4 logs each acquire attempt, to explain a slow take-over.
		c := startController(t, name, "-namespace="+ns, "-leader-elect=true",
			"-leader-elect-namespace="+ns, "-leader-elect-id="+id, "-leader-elect-retry-period=1s", "-v=4")
		return &replica{Controller: c, identity: leaderElectionIdentity(t, c)}
	}
	a, b := start("replica-a"), start("replica-b")
	waitControllerReady(t, a.Controller)
	waitControllerReady(t, b.Controller)

	// Exactly one leads: it holds the Lease, and its gauge says so.
	var leader, standby *replica
	eventually(t, convergeTimeout, "a leader", func(ctx context.Context) (bool, error) {
		lease, err := leases.Get(ctx, id, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		switch leaseHolderOf(lease) {
		case a.identity:
			leader, standby = a, b
		case b.identity:
			leader, standby = b, a
		default:
			return false, fmt.Errorf("lease %s; replicas are %s and %s", describeLease(lease), a.identity, b.identity)
		}
		return true, nil
	})
	t.Logf("%s leads, %s stands by", leader.Name, standby.Name)
	waitLeaderGauges(t, id, leader, standby)
	expectLease(t, ns, id, leader.identity, 0)

	// Only the leader reconciles.
	foo1 := createFoo(t, newFoo(ns, "before-failover", "before-failover", nil))
	waitFooReady(t, ns, foo1.Name)
	leaderSamples, standbySamples := scrape(t, leader.Controller), scrape(t, standby.Controller)
	if got := reconciles(leaderSamples, "success"); got < 1 {
		t.Errorf("leader: %v successful syncs, want at least 1", got)
	}
	if got := reconciles(standbySamples, ""); got != 0 {
		t.Errorf("standby: %v syncs, want 0", got)
	}
	t.Logf("leader synced %v times; standby synced 0 times and holds %v queued keys",
		reconciles(leaderSamples, ""), queueDepth(standbySamples))
	if t.Failed() {
		t.FailNow()
	}

	// SIGKILL: the Lease is not released; the standby takes it once it has
	// seen it unrenewed for the lease duration.
	killed := time.Now()
	leader.Kill() // SIGKILL, and reaped: it cannot sync foo2
	foo2 := createFoo(t, newFoo(ns, "after-sigkill", "after-sigkill", nil))
	waitFooReady(t, ns, foo2.Name)
	ready := time.Since(killed)
	lease := expectLease(t, ns, id, standby.identity, 1)
	t.Logf("SIGKILL of the leader: %s took the Lease %v after the kill; a Foo created right after the kill was Ready after %v",
		standby.Name, lease.Spec.AcquireTime.Sub(killed).Round(10*time.Millisecond), ready.Round(10*time.Millisecond))
	if ready > sigkillFailoverBound {
		t.Errorf("after SIGKILL of the leader a new Foo was Ready after %v, want at most %v (take-over: the lease duration, 15 s, after the standby's attempt that saw the last renewal, plus up to one more attempt; attempts are 2 to 4.4 s apart)",
			ready.Round(10*time.Millisecond), sigkillFailoverBound)
	}
	leader, standby = standby, nil
	waitLeaderGauges(t, id, leader)
	if got := reconciles(scrape(t, leader.Controller), "success"); got < 1 {
		t.Errorf("new leader %s: %v successful syncs, want at least 1", leader.Name, got)
	}

	// A fresh standby, then SIGTERM of the leader: it releases the Lease and
	// the standby takes it at its next attempt.
	c := start("replica-c")
	waitControllerReady(t, c.Controller)
	standby = c
	waitLeaderGauges(t, id, leader, standby)
	expectLease(t, ns, id, leader.identity, 1)

	if err := leader.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	terminated := time.Now()
	exit := waitExit(leader.Controller, 10*time.Second)
	foo3 := createFoo(t, newFoo(ns, "after-sigterm", "after-sigterm", nil))
	waitFooReady(t, ns, foo3.Name)
	ready = time.Since(terminated)
	exited := <-exit
	if exited.err != nil {
		t.Fatal(exited.err)
	}
	code := exited.code
	lease = expectLease(t, ns, id, standby.identity, 2)
	t.Logf("SIGTERM of the leader: it exited with %d %v after the signal; %s took the Lease %v after the signal; a Foo created right after the signal was Ready after %v",
		code, exited.at.Sub(terminated).Round(10*time.Millisecond), standby.Name,
		lease.Spec.AcquireTime.Sub(terminated).Round(10*time.Millisecond), ready.Round(10*time.Millisecond))
	if code != 0 {
		t.Errorf("%s exited with %d after SIGTERM, want 0", leader.Name, code)
	}
	if !strings.Contains(leader.Log(), "Released leadership") {
		t.Errorf("%s did not log the release of the Lease", leader.Name)
	}
	if ready > sigtermFailoverBound {
		t.Errorf("after SIGTERM of the leader a new Foo was Ready after %v, want at most %v", ready.Round(10*time.Millisecond), sigtermFailoverBound)
	}
	waitLeaderGauges(t, id, standby)
	if got := reconciles(scrape(t, standby.Controller), "success"); got < 1 {
		t.Errorf("new leader %s: %v successful syncs, want at least 1", standby.Name, got)
	}
}

// replica is a controller taking part in leader election.
type replica struct {
	*framework.Controller
	identity string // its holderIdentity in the Lease
}

// exitResult is how and when a process ended.
type exitResult struct {
	code int
	err  error // still running after the timeout
	at   time.Time
}

// waitExit waits in the background, up to timeout, for the process to exit,
// so that the test can do something else meanwhile and still learn when it
// exited.
func waitExit(c *framework.Controller, timeout time.Duration) <-chan exitResult {
	done := make(chan exitResult, 1)
	go func() {
		code, err := c.Wait(timeout)
		done <- exitResult{code: code, err: err, at: time.Now()}
	}()
	return done
}

// waitLeaderGauges waits until leader's leader_election_master_status for
// the Lease id is 1 and every standby's is 0 (present, not just absent).
func waitLeaderGauges(t *testing.T, id string, leader *replica, standbys ...*replica) {
	t.Helper()
	check := func(ctx context.Context, r *replica, want float64) error {
		samples, err := framework.ScrapeURL(ctx, r.MetricsURL())
		if err != nil {
			return err
		}
		if got, ok := leaderGauge(samples, id); !ok || got != want {
			return fmt.Errorf("%s: leader_election_master_status{name=%q} = %v (present %v), want %v", r.Name, id, got, ok, want)
		}
		return nil
	}
	eventually(t, 10*time.Second, "the leader election gauges", func(ctx context.Context) (bool, error) {
		if err := check(ctx, leader, 1); err != nil {
			return false, err
		}
		for _, s := range standbys {
			if err := check(ctx, s, 0); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// expectLease checks that the Lease ns/id is held by holder after the given
// number of leader transitions, and returns it.
func expectLease(t *testing.T, ns, id, holder string, transitions int32) *coordinationv1.Lease {
	t.Helper()
	lease, err := cluster.Kube.CoordinationV1().Leases(ns).Get(context.Background(), id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if leaseHolderOf(lease) != holder || lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions != transitions ||
		lease.Spec.AcquireTime == nil {
		t.Fatalf("lease %s; want holder %s after %d transitions", describeLease(lease), holder, transitions)
	}
	return lease
}

// d. Metrics after a sync, liveness, and readiness that waits for the
// caches.
func testMetricsAndReadyz(t *testing.T) {
	ensureStandardCRD(t)
	ctx := context.Background()
	ns := newNamespace(t, "prod-metrics")

	t.Run("metrics", func(t *testing.T) {
		id := "e2e-metrics-" + ns[strings.LastIndex(ns, "-")+1:]
		c := startController(t, "controller", "-namespace="+ns, "-leader-elect=true",
			"-leader-elect-namespace="+ns, "-leader-elect-id="+id)
		waitControllerReady(t, c)
		foo := createFoo(t, newFoo(ns, "metrics", "metrics", nil))
		waitFooReady(t, ns, foo.Name)

		fooQueue := func(l map[string]string) bool { return l["name"] == "foo" }
		var samples []framework.Sample
		// Settled: nothing queued, nothing in progress, every sync accounted
		// for alike by the queue and by the controller.
		eventually(t, convergeTimeout, "settled metrics", func(ctx context.Context) (bool, error) {
			var err error
			if samples, err = framework.ScrapeURL(ctx, c.MetricsURL()); err != nil {
				return false, err
			}
			syncs := reconciles(samples, "")
			depth := framework.Sum(samples, "workqueue_depth", fooQueue)
			worked := framework.Sum(samples, "workqueue_work_duration_seconds_count", fooQueue)
			observed := framework.Sum(samples, "samplecontroller_reconcile_duration_seconds_count", nil)
			if depth != 0 || worked != syncs || observed != syncs {
				return false, fmt.Errorf("depth %v, %v items worked on, %v syncs counted, %v timed", depth, worked, syncs, observed)
			}
			return true, nil
		})

		type series struct {
			name  string
			match func(map[string]string) bool
			min   float64 // the summed value must be at least this; -1: present is enough
		}
		for _, s := range []series{
			{"workqueue_depth", fooQueue, -1},
			{"workqueue_adds_total", fooQueue, 1},
			{"workqueue_queue_duration_seconds_bucket", fooQueue, 1},
			{"workqueue_queue_duration_seconds_count", fooQueue, 1},
			{"workqueue_work_duration_seconds_bucket", fooQueue, 1},
			{"workqueue_work_duration_seconds_count", fooQueue, 1},
			{"workqueue_retries_total", fooQueue, -1},
			{"workqueue_unfinished_work_seconds", fooQueue, -1},
			{"workqueue_longest_running_processor_seconds", fooQueue, -1},
			{"rest_client_requests_total", func(l map[string]string) bool { return l["code"] == "201" && l["method"] == "POST" }, 1},
			{"rest_client_request_duration_seconds_bucket", nil, 1},
			{"samplecontroller_reconcile_total", func(l map[string]string) bool { return l["result"] == "success" }, 1},
			{"samplecontroller_reconcile_duration_seconds_count", nil, 1},
			{"leader_election_master_status", func(l map[string]string) bool { return l["name"] == id }, 1},
		} {
			n := 0
			for _, sample := range samples {
				if sample.Name == s.name && (s.match == nil || s.match(sample.Labels)) {
					n++
				}
			}
			if n == 0 {
				t.Errorf("no series %s matching the expected labels", s.name)
				continue
			}
			if got := framework.Sum(samples, s.name, s.match); s.min >= 0 && got < s.min {
				t.Errorf("%s = %v, want at least %v", s.name, got, s.min)
			}
		}
		// Every retry is a sync re-queued with backoff: a failed one, or one
		// whose write found the cache stale.
		retries := framework.Sum(samples, "workqueue_retries_total", fooQueue)
		if failed := reconciles(samples, "error") + reconciles(samples, "conflict"); retries != failed {
			t.Errorf("workqueue_retries_total %v, but %v failed or conflicting syncs", retries, failed)
		}
		if code, body, err := c.Probe(ctx, "/healthz"); err != nil || code != http.StatusOK {
			t.Errorf("/healthz: %d %q %v, want 200", code, body, err)
		}
	})

	t.Run("readyz_waits_for_informer_sync", func(t *testing.T) {
		// A ServiceAccount allowed everything the controller does except
		// listing and watching Deployments: the Deployment cache never
		// syncs, so the controller stays unready and starts no worker.
		const sa = "no-deployment-watch"
		if _, err := cluster.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + ns + "-" + sa},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{samplev1alpha1.SchemeGroupVersion.Group}, Resources: []string{"foos"}, Verbs: []string{"list", "watch", "patch"}},
				{APIGroups: []string{samplev1alpha1.SchemeGroupVersion.Group}, Resources: []string{"foos/status"}, Verbs: []string{"patch"}},
				{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "get", "patch", "delete"}},
				{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			},
		}
		clusterRoles := cluster.Kube.RbacV1().ClusterRoles()
		if _, err := clusterRoles.Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = clusterRoles.Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })
		// The controller is confined to ns, so a RoleBinding there is
		// enough (and goes with the namespace).
		if _, err := cluster.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		foo := createFoo(t, newFoo(ns, "waits-for-sync", "waits-for-sync", nil))
		kubeconfig := serviceAccountKubeconfig(t, ns, sa)
		// Plain metrics: the reviews that guard secure ones are
		// cluster-scoped, beyond what this RoleBinding can grant.
		c := startController(t, "controller", "-kubeconfig="+kubeconfig, "-namespace="+ns, "-leader-elect=false", "-metrics-secure=false")

		unready := func(ctx context.Context) error {
			if c.Exited() {
				return fmt.Errorf("controller exited")
			}
			code, body, err := c.Probe(ctx, "/readyz")
			if err != nil {
				return err
			}
			if code != http.StatusInternalServerError || !strings.Contains(body, "informer-sync") || !strings.Contains(body, "informer caches not synced") {
				return fmt.Errorf("/readyz: %d %q, want 500 naming the informer-sync check", code, body)
			}
			if code, body, err := c.Probe(ctx, "/healthz"); err != nil || code != http.StatusOK {
				return fmt.Errorf("/healthz: %d %q %v, want 200", code, body, err)
			}
			return nil
		}
		eventually(t, convergeTimeout, "/readyz 500 and /healthz 200", func(ctx context.Context) (bool, error) {
			err := unready(ctx)
			return err == nil, err
		})
		eventually(t, convergeTimeout, "the forbidden Deployment list in the log", func(context.Context) (bool, error) {
			return strings.Contains(c.Log(), `deployments.apps is forbidden`), nil
		})
		const window = 5 * time.Second
		consistently(t, window, "not ready while the Deployment cache cannot sync", func(ctx context.Context) error {
			if err := unready(ctx); err != nil {
				return err
			}
			samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
			if err != nil {
				return err
			}
			if syncs := reconciles(samples, ""); syncs != 0 {
				return fmt.Errorf("%v syncs before the caches synced", syncs)
			}
			return nil
		})
		if f := getFoo(t, ns, foo.Name); len(f.Status.Conditions) != 0 {
			t.Fatalf("Foo written before the caches synced: %s", describeFoo(f))
		}

		// Grant the missing verbs; the reflector's next retry succeeds.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current, err := clusterRoles.Get(ctx, role.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			current.Rules = append(current.Rules, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list", "watch"}})
			_, err = clusterRoles.Update(ctx, current, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		granted := time.Now()
		// The reflector retries with a backoff of up to 30 s.
		eventually(t, 60*time.Second, "/readyz 200 after the grant", func(ctx context.Context) (bool, error) {
			if c.Exited() {
				return false, fmt.Errorf("controller exited")
			}
			code, body, err := c.Probe(ctx, "/readyz")
			if err != nil {
				return false, err
			}
			if code != http.StatusOK {
				return false, fmt.Errorf("/readyz: %d %q", code, body)
			}
			return true, nil
		})
		t.Logf("/readyz 200 %v after list/watch on Deployments was granted", time.Since(granted).Round(10*time.Millisecond))
		waitFooReady(t, ns, foo.Name)
	})
}

// e. SIGTERM with hundreds of Foos still queued: the controller stops taking
// work, lets the Foos in hand finish and exits 0 promptly.
func testSIGTERMWithBacklog(t *testing.T) {
	ensureStandardCRD(t)
	ctx := context.Background()
	ns := newNamespace(t, "prod-backlog")
	const count = 300

	// Created before any controller runs, in parallel for speed.
	foos := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns)
	names := make(chan string, count)
	for i := range count {
		names <- fmt.Sprintf("backlog-%03d", i)
	}
	close(names)
	var (
		wg       sync.WaitGroup
		errsMu   sync.Mutex
		firstErr error
	)
	for range 8 {
		wg.Go(func() {
			for name := range names {
				if _, err := foos.Create(ctx, newFoo(ns, name, name, nil), metav1.CreateOptions{}); err != nil {
					errsMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errsMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}

	// 5 requests per second: a sync takes two or three, so the queue drains
	// at a couple of Foos per second.
	c := startController(t, "controller", controllerArgs(ns, "-kube-api-qps=5", "-kube-api-burst=5")...)
	started := time.Now()
	var (
		samples     []framework.Sample
		deployments int
	)
	// Returns as soon as syncs are under way, backlog or not; the backlog is
	// checked below.
	eventually(t, convergeTimeout, "syncs under way", func(ctx context.Context) (bool, error) {
		if c.Exited() {
			return false, fmt.Errorf("controller exited")
		}
		var err error
		if samples, err = framework.ScrapeURL(ctx, c.MetricsURL()); err != nil {
			return false, err
		}
		list, err := cluster.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: samplev1alpha1.LabelManagedBy + "=" + samplev1alpha1.ControllerName})
		if err != nil {
			return false, err
		}
		deployments = len(list.Items)
		if syncs := reconciles(samples, "success"); syncs < 2 || deployments < 2 {
			return false, fmt.Errorf("%v successful syncs, %d Deployments, queue depth %v", syncs, deployments, queueDepth(samples))
		}
		return true, nil
	})
	depth := queueDepth(samples)
	if depth <= 100 {
		t.Fatalf("queue depth %v once syncs were under way, want over 100", depth)
	}

	// Signal right after a sync's last write, the status: its worker has
	// moved on to the next Foo and waits for the rate limiter to create its
	// Deployment, so the signal finds a sync in hand.
	waitStatusWrite(t, ns)
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	code, err := c.Wait(10 * time.Second)
	exit := time.Since(signalled)
	if err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	t.Logf("SIGTERM %v after start, with %v successful syncs, %d Deployments and %v Foos queued: exit code %d after %v",
		signalled.Sub(started).Round(10*time.Millisecond), reconciles(samples, "success"), deployments, depth, code, exit.Round(10*time.Millisecond))
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	log := c.Log()
	for _, line := range []string{`"Shutting down workers"`, `"Workers stopped"`} {
		if !strings.Contains(log, line) {
			t.Errorf("the log lacks %s:\n%s", line, framework.Trim(log, 3000))
		}
	}
	// The Foos in hand are finished during the grace period, and so must be
	// their events: a Deployment created then gets no "Created Deployment"
	// event from anyone else (the next controller finds it in place).
	if lost := grepLines(log, regexp.MustCompile(`Unable to record event`)); len(lost) > 0 {
		t.Errorf("events of the syncs finished after SIGTERM were dropped: the event broadcaster stopped before the workers did:\n%s",
			strings.Join(lost, "\n"))
	}
}

// waitStatusWrite waits, with a watch, for the next write of a Foo's status
// in ns (a Foo that gets its first Ready condition).
func waitStatusWrite(t *testing.T, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	foos := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns)
	list, err := foos.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := foos.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for event := range w.ResultChan() {
		if foo, ok := event.Object.(*samplev1alpha1.Foo); ok && event.Type == "MODIFIED" && readyCondition(foo) != nil {
			return
		}
	}
	t.Fatalf("no Foo status written in %s within 30s: %v", ns, ctx.Err())
}

// ---------------------------------------------------------------- helpers

// applyDeployArtifacts runs kubectl apply -k artifacts/deploy from the
// repository root, as an operator does, and returns kubectl's output. When
// the test ends it removes what was installed, except the CRD that other
// tests use: the Namespace (with everything in it), the ClusterRole and the
// ClusterRoleBinding. A Namespace still terminating from an earlier test is
// waited for first. Applying twice in one test is fine.
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
	out := kubectl(t, "apply", "-k", deployKustomization)
	t.Cleanup(func() {
		ctx := context.Background()
		rbac := cluster.Kube.RbacV1()
		for _, err := range []error{
			rbac.ClusterRoleBindings().Delete(ctx, deployName, metav1.DeleteOptions{}),
			rbac.ClusterRoles().Delete(ctx, deployName, metav1.DeleteOptions{}),
			namespaces.Delete(ctx, deployNamespace, metav1.DeleteOptions{}),
		} {
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

// serviceAccountKubeconfig writes a kubeconfig that authenticates with a
// fresh token of the ServiceAccount ns/name (kubectl create token) to the
// suite's API server, and returns its path.
func serviceAccountKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	token := strings.TrimSpace(kubectl(t, "create", "token", name, "-n", ns, "--duration=1h"))
	if token == "" {
		t.Fatalf("kubectl create token %s -n %s printed no token", name, ns)
	}
	ca := cluster.Config.CAData
	if len(ca) == 0 && cluster.Config.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cluster.Config.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	user := "system:serviceaccount:" + ns + ":" + name
	config := clientcmdapi.NewConfig()
	config.Clusters["local"] = &clientcmdapi.Cluster{Server: cluster.Config.Host, CertificateAuthorityData: ca}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user, Namespace: ns}
	config.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	return path
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

var identityRE = regexp.MustCompile(`"Waiting to become leader".* identity="([^"]+)"`)

// leaderElectionIdentity returns the holderIdentity the controller uses in
// the Lease, from its start-up log line.
func leaderElectionIdentity(t *testing.T, c *framework.Controller) string {
	t.Helper()
	var identity string
	eventually(t, convergeTimeout, c.Name+" to log its leader election identity", func(context.Context) (bool, error) {
		if m := identityRE.FindStringSubmatch(c.Log()); m != nil {
			identity = m[1]
			return true, nil
		}
		if c.Exited() {
			return false, fmt.Errorf("controller exited: %s", framework.Trim(c.Log(), 2000))
		}
		return false, nil
	})
	return identity
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

func leaseHolderOf(lease *coordinationv1.Lease) string {
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func describeLease(lease *coordinationv1.Lease) string {
	s := lease.Spec
	transitions := "<nil>"
	if s.LeaseTransitions != nil {
		transitions = fmt.Sprint(*s.LeaseTransitions)
	}
	format := func(t *metav1.MicroTime) string {
		if t == nil {
			return "<nil>"
		}
		return t.Format("15:04:05.000")
	}
	return fmt.Sprintf("%s/%s{holder=%q transitions=%s acquired=%s renewed=%s}",
		lease.Namespace, lease.Name, leaseHolderOf(lease), transitions, format(s.AcquireTime), format(s.RenewTime))
}

// leaderGauge returns leader_election_master_status{name=id} and whether
// the series is there at all.
func leaderGauge(samples []framework.Sample, id string) (float64, bool) {
	for _, s := range samples {
		if s.Name == "leader_election_master_status" && s.Labels["name"] == id {
			return s.Value, true
		}
	}
	return 0, false
}

// queueDepth is workqueue_depth of the controller's Foo queue.
func queueDepth(samples []framework.Sample) float64 {
	return framework.Sum(samples, "workqueue_depth", func(l map[string]string) bool { return l["name"] == "foo" })
}

// requestsWithCode sums the controller's API requests answered with code.
func requestsWithCode(samples []framework.Sample, code string) float64 {
	return framework.Sum(samples, "rest_client_requests_total", func(l map[string]string) bool { return l["code"] == code })
}

// grepLines returns the lines of text that re matches.
func grepLines(text string, re *regexp.Regexp) []string {
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		if re.MatchString(line) {
			lines = append(lines, line)
		}
	}
	return lines
}
