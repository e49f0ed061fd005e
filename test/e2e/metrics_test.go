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
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/freshfirst"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/test/framework"
)

// Metrics after a sync: the work queue's, the API client's, the
// controller's own and leader election's series, the counts agreeing with
// one another; and liveness.
func TestMetricsAccountForEverySyncAndHealthzIsOK(t *testing.T) {
	ensureStandardCRD(t)
	ctx := context.Background()
	ns := newNamespace(t, "metrics")

	id := "e2e-metrics-" + ns[strings.LastIndex(ns, "-")+1:]
	c := startController(t, "controller", "-namespace="+ns, "-leader-elect=true",
		"-leader-elect-namespace="+ns, "-leader-elect-id="+id)
	waitControllerReady(t, c)
	foo := createFoo(t, newFoo(ns, "metrics", "metrics", nil))
	waitFooReady(t, ns, foo.Name)

	fooQueue := func(l map[string]string) bool { return l["name"] == freshfirst.QueueName }
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
		observed := framework.Sum(samples, metrics.Subsystem+"_reconcile_duration_seconds_count", nil)
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
		{metrics.Subsystem + "_reconcile_total", func(l map[string]string) bool { return l["result"] == "success" }, 1},
		{metrics.Subsystem + "_reconcile_duration_seconds_count", nil, 1},
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
}

// Readiness waits for the caches: a controller whose Deployment cache cannot
// sync answers /readyz with 500 (and /healthz with 200) and syncs nothing,
// until it is allowed to list and watch Deployments.
func TestReadyzWaitsForInformerSync(t *testing.T) {
	ensureStandardCRD(t)
	ctx := context.Background()
	ns := newNamespace(t, "readyz")

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
			{APIGroups: []string{samplev1beta1.SchemeGroupVersion.Group}, Resources: []string{samplecontroller.FooResource}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{samplev1beta1.SchemeGroupVersion.Group}, Resources: []string{"foos/status"}, Verbs: []string{"patch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "get", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			// At start the controller reads the Foo CRD to check it.
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, ResourceNames: []string{samplecontroller.FooCRDName}, Verbs: []string{"get"}},
		},
	}
	clusterRoles := cluster.Kube.RbacV1().ClusterRoles()
	if _, err := clusterRoles.Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = clusterRoles.Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })
	// The CRD is cluster-scoped, so only a ClusterRoleBinding grants its
	// read; -namespace keeps the controller to ns all the same.
	clusterRoleBindings := cluster.Kube.RbacV1().ClusterRoleBindings()
	if _, err := clusterRoleBindings.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = clusterRoleBindings.Delete(context.Background(), role.Name, metav1.DeleteOptions{}) })

	foo := createFoo(t, newFoo(ns, "waits-for-sync", "waits-for-sync", nil))
	kubeconfig := serviceAccountKubeconfig(t, ns, sa)
	// Plain metrics: the reviews that guard secure ones are cluster-scoped,
	// beyond what this RoleBinding can grant.
	// Without the webhook, whose readiness (a trusted certificate) needs
	// grants this test is not about.
	c := startController(t, "controller", "-kubeconfig="+kubeconfig, "-namespace="+ns, "-leader-elect=false",
		"-metrics-secure=false", "-webhook-bind-address=0")

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
}
