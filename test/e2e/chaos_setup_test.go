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

// The chaos scenarios' world (chaos_test.go, soak_test.go): a control
// plane of their own whose kube-apiserver audits every write to Foos,
// Deployments and the controller's Lease; the controller installed as
// artifacts/deploy installs it, each replica with a token of its own of
// the deployed ServiceAccount, as each pod of artifacts/deploy has: under
// the admission policies that confine that account, and under priority and
// fairness (the admin's system:masters group is exempt). The audit log
// tells the replicas apart by the identity each names in its user agent.
// A namespace of Foos, and a Deployment of somebody else's among them that
// nobody may touch.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/test/framework"
)

const (
	// chaosClusterDir is the chaos scenarios' control plane, under the
	// suite's outDir.
	chaosClusterDir = "chaos-cluster"
	// The replicas' leader election, shortened from 15s/10s/2s so that a
	// take-over fits the few minutes of make test. The relation between
	// the three is the defaults'.
	chaosLeaseDuration = 8 * time.Second
	chaosRenewDeadline = 5 * time.Second
	chaosRetryPeriod   = time.Second
	// foreignDeployment is the Deployment in the Foos' namespace that no
	// Foo owns: the controller must never write it.
	foreignDeployment = "foreign"
	// fooPrefix names the Foos: chaos-000, chaos-001, ...
	fooPrefix = "chaos"
	// chaosReplicas is how many replicas a scenario runs, each with a
	// token of its own.
	chaosReplicas = 2
)

// chaosWorld is what the scenarios run in.
type chaosWorld struct {
	ns          string
	kubeconfigs []string // a token of the deployed ServiceAccount per replica
	foreign     *appsv1.Deployment
	auditLog    string
}

// setUpChaosWorld starts the control plane and installs the controller, a
// token per replica, the namespace, the foreign Deployment and foos Foos with
// replica counts from rng; the tokens are valid for valid.
func setUpChaosWorld(t *testing.T, foos int, rng *rand.Rand, valid time.Duration) *chaosWorld {
	t.Helper()
	policy := filepath.Join(t.TempDir(), "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(framework.AuditPolicy(deployNamespace)), 0o644); err != nil {
		t.Fatal(err)
	}
	own := useOwnCluster(t, chaosClusterDir, framework.WithAuditPolicy(policy),
		// Room for every pod of the Foos, at up to 5 replicas each, and of
		// the Deployments being replaced.
		framework.WithNodePods(12*foos+200),
		// A kube-apiserver started again on a busy machine may take tens
		// of seconds to pass /readyz (see useFaultCluster).
		framework.WithTimeout(180*time.Second))
	ensureStandardCRD(t)
	applyDeployArtifacts(t)
	w := &chaosWorld{ns: newNamespace(t, "chaos"), auditLog: own.AuditLogPath()}
	for range chaosReplicas {
		w.kubeconfigs = append(w.kubeconfigs, serviceAccountKubeconfigFor(t, deployNamespace, deployServiceAccount, valid))
	}
	// The replicas start under the policies of artifacts/deploy, not in the
	// moment before the API server enforces them.
	waitDeploymentPolicyInForce(t, kubeClientFor(t, w.kubeconfigs[0]), w.ns)
	var err error
	w.foreign, err = cluster.Kube.AppsV1().Deployments(w.ns).Create(context.Background(),
		unmanagedDeployment(w.ns, foreignDeployment, 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas := make([]int32, foos)
	for i := range replicas {
		replicas[i] = 1 + rng.Int32N(3)
	}
	err = framework.Parallel(foos, creators, func(i int) error {
		name := chaosFooName(i)
		_, err := cluster.Sample.SamplecontrollerV1beta1().Foos(w.ns).Create(context.Background(),
			newFoo(w.ns, name, name, &replicas[i]), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func chaosFooName(i int) string { return fmt.Sprintf("%s-%03d", fooPrefix, i) }

// replicaArgs are the flags of the replica running with the token of
// kubeconfigs[replica]: the Lease and the webhook's CA Secret of
// artifacts/deploy, which its Roles allow, the shortened
// timings, metrics over plain HTTP on loopback (scraped every few seconds
// through faults, without TokenReviews that a throttled or restarting API
// server would make fail).
func (w *chaosWorld) replicaArgs(replica int) []string {
	return []string{"-kubeconfig=" + w.kubeconfigs[replica], "-namespace=" + w.ns,
		"-leader-elect=true", "-leader-elect-namespace=" + deployNamespace, "-leader-elect-id=" + deployName,
		"-webhook-namespace=" + deployNamespace,
		"-leader-elect-lease-duration=" + chaosLeaseDuration.String(),
		"-leader-elect-renew-deadline=" + chaosRenewDeadline.String(),
		"-leader-elect-retry-period=" + chaosRetryPeriod.String(),
		"-metrics-secure=false"}
}

// faultRun is the fault scenarios' view of the namespace, whose checks
// (observe, waitConverged) the chaos scenarios share; leader is the
// replica whose exit ends a wait early.
func (w *chaosWorld) faultRun(want int, leader *replica) *faultRun {
	return &faultRun{ns: w.ns, want: want, leaseNS: deployNamespace, leaseID: deployName, leader: leader}
}
