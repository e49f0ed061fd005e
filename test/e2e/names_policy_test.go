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
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/certauthority"
	"github.com/kube-samples/sample-controller/pkg/replicas"
)

// ownNamesRefusal is enough of the own-names policy's message
// (artifacts/deploy/names-policy.yaml) to tell it.
var ownNamesRefusal = "creates the Secret " + samplecontroller.WebhookCASecretName + ", the ConfigMap " +
	samplecontroller.MetricsCAConfigMapName + ", the Lease " + samplecontroller.ControllerName + " and, sharded, the Leases " +
	strings.Join(replicas.LeasePrefixes(samplecontroller.ControllerName), "* and ") + "* alone"

// ownSecretTypeRefusal is enough of the own-names policy's message for a
// Secret of another type than the controller writes.
var ownSecretTypeRefusal = "writes its Secret " + samplecontroller.WebhookCASecretName + " of type " +
	string(certauthority.SecretType) + " alone"

// The deployed ServiceAccount, whose Roles let it create Secrets,
// ConfigMaps and Leases of any name in its namespace (RBAC cannot name an
// object being created), creates its own three alone, and sharding's Leases
// by prefix: any other name, generateName's included, is refused by the
// own-names policy. Its own
// names are admitted; TestServiceAccountTokenSufficesAndCannotReadSecrets
// runs the controller under the policy, creating them for real. The CA
// Secret's name is not enough: of type kubernetes.io/service-account-token
// the token controller would fill it in with a token that never expires,
// which the Role lets the account read, so it is refused, and only the type
// the controller writes admitted, on create and, in the subtest, update.
// Dry runs: admission runs, nothing is stored. Without the policy every
// refused create below is admitted, as RBAC allows it.
func TestOwnNamesPolicyLetsTheServiceAccountCreateItsOwnObjectsAlone(t *testing.T) {
	ensureStandardCRD(t)
	applyDeployArtifacts(t)
	ctx := context.Background()
	kubeconfig := serviceAccountKubeconfig(t, deployNamespace, deployServiceAccount)
	saKube := kubeClientFor(t, kubeconfig)
	waitPolicyChecked(t, samplecontroller.OwnNamesPolicyName)
	waitOwnNamesPolicyInForce(t, saKube)

	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: deployNamespace, Name: name} }
	typedSecret := func(m metav1.ObjectMeta, typ corev1.SecretType) error {
		_, err := saKube.CoreV1().Secrets(deployNamespace).Create(ctx, &corev1.Secret{ObjectMeta: m, Type: typ}, dryRun)
		return err
	}
	secret := func(m metav1.ObjectMeta) error { return typedSecret(m, "") }
	// What the attacker asks the token controller for: a token of the
	// account, in the Secret the Role lets it read.
	tokenSecret := meta(samplecontroller.WebhookCASecretName)
	tokenSecret.Annotations = map[string]string{corev1.ServiceAccountNameKey: deployServiceAccount}
	configMap := func(m metav1.ObjectMeta) error {
		_, err := saKube.CoreV1().ConfigMaps(deployNamespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: m}, dryRun)
		return err
	}
	inSet := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		m.Labels = map[string]string{replicas.LabelLeaseSet: deployName}
		return m
	}
	lease := func(m metav1.ObjectMeta) error {
		_, err := saKube.CoordinationV1().Leases(deployNamespace).Create(ctx, &coordinationv1.Lease{ObjectMeta: m}, dryRun)
		return err
	}
	refused := []struct {
		what    string
		err     error
		message string
	}{
		{"Secret planted", secret(meta("planted")), ownNamesRefusal},
		{"Secret of generateName " + samplecontroller.WebhookCASecretName,
			secret(metav1.ObjectMeta{Namespace: deployNamespace, GenerateName: samplecontroller.WebhookCASecretName}), ownNamesRefusal},
		{"Secret " + samplecontroller.MetricsCAConfigMapName + " (the ConfigMap's name)",
			secret(meta(samplecontroller.MetricsCAConfigMapName)), ownNamesRefusal},
		{"Secret " + samplecontroller.WebhookCASecretName + " of type " + string(corev1.SecretTypeServiceAccountToken),
			typedSecret(tokenSecret, corev1.SecretTypeServiceAccountToken), ownSecretTypeRefusal},
		{"ConfigMap planted", configMap(meta("planted")), ownNamesRefusal},
		{"ConfigMap " + samplecontroller.WebhookCASecretName + " (the Secret's name)",
			configMap(meta(samplecontroller.WebhookCASecretName)), ownNamesRefusal},
		{"Lease kube-controller-manager", lease(meta("kube-controller-manager")), ownNamesRefusal},
		{"Lease " + deployName + "-planted", lease(meta(deployName + "-planted")), ownNamesRefusal},
	}
	for _, r := range refused {
		// A Lease of no name of its own the own-leases policy refuses too,
		// and may be asked first.
		if problem := refusalByEither(r.err, samplecontroller.OwnNamesPolicyName, r.message,
			samplecontroller.OwnLeasesPolicyName, ownLeasesNameRefusal); problem != nil {
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
		// As pkg/certauthority creates it.
		{"Secret " + samplecontroller.WebhookCASecretName + " of type " + string(certauthority.SecretType),
			typedSecret(meta(samplecontroller.WebhookCASecretName), certauthority.SecretType)},
		{"ConfigMap " + samplecontroller.MetricsCAConfigMapName, configMap(meta(samplecontroller.MetricsCAConfigMapName))},
		{"Lease " + deployName, lease(meta(deployName))},
		// Sharding's (pkg/replicas), admitted by prefix, labelled as it
		// labels them (the own-leases policy's).
		{"Lease " + deployName + "-shard-0-of-4", lease(inSet(meta(deployName + "-shard-0-of-4")))},
		{"Lease " + deployName + "-member-0123abcd", lease(inSet(meta(deployName + "-member-0123abcd")))},
	} {
		if a.err != nil && !apierrors.IsAlreadyExists(a.err) {
			t.Errorf("create %s in %s as %s: %v, want it admitted", a.what, deployNamespace, deployServiceAccount, a.err)
		}
	}
	t.Run("the CA Secret updated of its own type alone", expectOwnSecretTypeOnUpdate)
	// Of the Events the ClusterRole lets it write everywhere, RBAC cannot
	// name the object, nor the reporter: the own-events policy does.
	t.Run("Events about its Foos and CA Secret alone, patched its own alone",
		func(t *testing.T) { expectOwnEventsAlone(t, saKube) })
	// Of the Leases its Roles let it write in its namespace, RBAC cannot
	// name the member and shard Leases, nor say what they hold: the
	// own-leases policy does.
	t.Run("Leases of its own names and shape alone",
		func(t *testing.T) { expectOwnLeasesAlone(t, saKube, kubeconfig) })
}

// expectOwnSecretTypeOnUpdate checks that the own-names policy, in force,
// pins the CA Secret's type on update too. The API server keeps a Secret's
// type as created, so what this refuses is a write by the account to a
// Secret of the CA Secret's name that someone else made with another type;
// the controller's own update of its Opaque Secret (a renewal, a
// revocation) is admitted. In a namespace of its own, with a ServiceAccount
// of the controller's name (the policy matches it in every namespace) and
// the deployed Role sample-controller-webhook copied there: the update
// must pass RBAC to reach the policy. Without the update rule, the refused
// update is admitted, as the Role allows it.
func expectOwnSecretTypeOnUpdate(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "own-secret-type")
	const roleName = samplecontroller.ControllerName + "-webhook"
	role, err := cluster.Kube.RbacV1().Roles(deployNamespace).Get(ctx, roleName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	meta := metav1.ObjectMeta{Namespace: ns, Name: roleName}
	if _, err := cluster.Kube.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: deployServiceAccount}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: role.Rules},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: meta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: deployServiceAccount, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	saSecrets := kubeClientFor(t, serviceAccountKubeconfig(t, ns, deployServiceAccount)).CoreV1().Secrets(ns)

	// plant replaces the CA Secret of ns, as an administrator, by one of
	// type typ; update is the account's dry-run update of it, a label added.
	plant := func(typ corev1.SecretType, data map[string][]byte) {
		t.Helper()
		secrets := cluster.Kube.CoreV1().Secrets(ns)
		if err := secrets.Delete(ctx, samplecontroller.WebhookCASecretName, metav1.DeleteOptions{}); err != nil &&
			!apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if _, err := secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: samplecontroller.WebhookCASecretName},
			Type:       typ, Data: data,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update := func(ctx context.Context) error {
		s, err := saSecrets.Get(ctx, samplecontroller.WebhookCASecretName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Labels = map[string]string{"probe": "update"}
		_, err = saSecrets.Update(ctx, s, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}

	// Admitted: the controller's own type. Waited for, as the RoleBinding
	// reaches the API server's RBAC cache a moment after it is written.
	plant(certauthority.SecretType, nil)
	eventually(t, convergeTimeout, "the account's update of its "+string(certauthority.SecretType)+" Secret admitted",
		func(ctx context.Context) (bool, error) {
			err := update(ctx)
			return err == nil, err
		})
	// Refused: another type (basic-auth, which the API server, unlike a
	// service-account token, leaves as written).
	plant(corev1.SecretTypeBasicAuth, map[string][]byte{corev1.BasicAuthUsernameKey: []byte("planted")})
	if problem := refusalBy(samplecontroller.OwnNamesPolicyName, update(ctx), ownSecretTypeRefusal); problem != nil {
		t.Errorf("update of Secret %s/%s of type %s as %s: %v", ns, samplecontroller.WebhookCASecretName,
			corev1.SecretTypeBasicAuth, deployServiceAccount, problem)
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
