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
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/replicas"
)

// ownNamesRefusal is enough of the own-names policy's message
// (artifacts/deploy/names-policy.yaml) to tell it.
var ownNamesRefusal = "creates the Secret " + samplecontroller.WebhookCASecretName + ", the ConfigMap " +
	samplecontroller.MetricsCAConfigMapName + ", the Lease " + samplecontroller.ControllerName + " and, sharded, the Leases " +
	strings.Join(replicas.LeasePrefixes(samplecontroller.ControllerName), "* and ") + "* alone"

// The deployed ServiceAccount, whose Roles let it create Secrets,
// ConfigMaps and Leases of any name in its namespace (RBAC cannot name an
// object being created), creates its own three alone, and sharding's Leases
// by prefix: any other name, generateName's included, is refused by the
// own-names policy. Its own
// names are admitted; TestServiceAccountTokenSufficesAndCannotReadSecrets
// runs the controller under the policy, creating them for real. Dry runs:
// admission runs, nothing is stored. Without the policy every refused
// create below is admitted, as RBAC allows it.
func TestOwnNamesPolicyLetsTheServiceAccountCreateItsOwnObjectsAlone(t *testing.T) {
	ensureStandardCRD(t)
	applyDeployArtifacts(t)
	ctx := context.Background()
	saKube := kubeClientFor(t, serviceAccountKubeconfig(t, deployNamespace, deployServiceAccount))
	waitPolicyChecked(t, samplecontroller.OwnNamesPolicyName)
	waitOwnNamesPolicyInForce(t, saKube)

	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: deployNamespace, Name: name} }
	secret := func(m metav1.ObjectMeta) error {
		_, err := saKube.CoreV1().Secrets(deployNamespace).Create(ctx, &corev1.Secret{ObjectMeta: m}, dryRun)
		return err
	}
	configMap := func(m metav1.ObjectMeta) error {
		_, err := saKube.CoreV1().ConfigMaps(deployNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: m}, dryRun)
		return err
	}
	lease := func(m metav1.ObjectMeta) error {
		_, err := saKube.CoordinationV1().Leases(deployNamespace).Create(ctx, &coordinationv1.Lease{ObjectMeta: m}, dryRun)
		return err
	}
	refused := []struct {
		what string
		err  error
	}{
		{"Secret planted", secret(meta("planted"))},
		{"Secret of generateName " + samplecontroller.WebhookCASecretName,
			secret(metav1.ObjectMeta{Namespace: deployNamespace, GenerateName: samplecontroller.WebhookCASecretName})},
		{"Secret " + samplecontroller.MetricsCAConfigMapName + " (the ConfigMap's name)", secret(meta(samplecontroller.MetricsCAConfigMapName))},
		{"ConfigMap planted", configMap(meta("planted"))},
		{"ConfigMap " + samplecontroller.WebhookCASecretName + " (the Secret's name)", configMap(meta(samplecontroller.WebhookCASecretName))},
		{"Lease kube-controller-manager", lease(meta("kube-controller-manager"))},
		{"Lease " + deployName + "-planted", lease(meta(deployName + "-planted"))},
	}
	for _, r := range refused {
		if problem := refusalBy(samplecontroller.OwnNamesPolicyName, r.err, ownNamesRefusal); problem != nil {
			t.Errorf("create %s in %s as %s: %v", r.what, deployNamespace, deployServiceAccount, problem)
		}
	}
	// Admitted: stored already (AlreadyExists, which storage answers
	// after admission) or not.
	for _, a := range []struct {
		what string
		err  error
	}{
		{"Secret " + samplecontroller.WebhookCASecretName, secret(meta(samplecontroller.WebhookCASecretName))},
		{"ConfigMap " + samplecontroller.MetricsCAConfigMapName, configMap(meta(samplecontroller.MetricsCAConfigMapName))},
		{"Lease " + deployName, lease(meta(deployName))},
		// Sharding's (pkg/replicas), admitted by prefix.
		{"Lease " + deployName + "-shard-0-of-4", lease(meta(deployName + "-shard-0-of-4"))},
		{"Lease " + deployName + "-member-0123abcd", lease(meta(deployName + "-member-0123abcd"))},
	} {
		if a.err != nil && !apierrors.IsAlreadyExists(a.err) {
			t.Errorf("create %s in %s as %s: %v, want it admitted", a.what, deployNamespace, deployServiceAccount, a.err)
		}
	}
}

// waitOwnNamesPolicyInForce waits until the API server enforces the
// own-names policy on saKube, a client of the controller's ServiceAccount,
// probing with a dry run of a Secret create the policy refuses, which
// stores nothing until then.
func waitOwnNamesPolicyInForce(t *testing.T, saKube kubernetes.Interface) {
	t.Helper()
	eventually(t, convergeTimeout, "policy "+samplecontroller.OwnNamesPolicyName+" in force", func(ctx context.Context) (bool, error) {
		_, err := saKube.CoreV1().Secrets(deployNamespace).Create(ctx,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: deployNamespace, Name: "policy-probe"}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if problem := refusalBy(samplecontroller.OwnNamesPolicyName, err, ownNamesRefusal); problem != nil {
			return false, problem
		}
		return true, nil
	})
}
