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
	"maps"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/certauthority"
	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/pkg/replicas"
)

// The names the deployed controller creates: the defaults of its flags,
// which the Deployment does not override, and the metrics CA ConfigMap,
// which no flag names.
func createdNames(t *testing.T) map[string]string {
	t.Helper()
	o := options.AddFlags(flag.NewFlagSet("controller", flag.ContinueOnError))
	var d appsv1.Deployment
	decode(t, "deployment.yaml", &d)
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, arg := range c.Args {
			for _, f := range []string{"leader-elect-id=", "webhook-ca-secret="} {
				if strings.HasPrefix(strings.TrimLeft(arg, "-"), f) {
					t.Errorf("%s/deployment.yaml: %s; names-policy.yaml and the Roles are for the default", deployDir, arg)
				}
			}
		}
	}
	return map[string]string{
		"secrets":    o.Webhook.CASecretName,
		"configmaps": samplecontroller.MetricsCAConfigMapName,
		"leases":     o.LeaderElection.Name,
	}
}

// The own-names policy admits, of the creates of Secrets, ConfigMaps and
// Leases by the controller's ServiceAccount, exactly one name of each: the
// Secret of -webhook-ca-secret, the metrics CA ConfigMap, and the Lease of
// -leader-elect-id, with, for sharding, the names that start with its
// pkg/replicas.LeasePrefixes. A name renamed on one side only, and the controller's
// own create would be refused the first time it makes it (a new cluster, a
// CA Secret deleted), or another name admitted. The Secret's updates are
// matched too, for its type alone: an update keeps its name.
func TestOwnNamesPolicyAdmitsTheNamesTheControllerCreates(t *testing.T) {
	names := createdNames(t)
	if got, want := names, map[string]string{
		"secrets":    "sample-controller-webhook-ca",
		"configmaps": "sample-controller-metrics-ca",
		"leases":     "sample-controller",
	}; !maps.Equal(got, want) {
		t.Errorf("the names the controller creates: %v, want %v", got, want)
	}
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	decode(t, "names-policy.yaml", &policy)
	path := deployDir + "/names-policy.yaml"

	expectTheControllersUserMatched(t, path, &policy)
	// Creates of the three kinds, and the Secret's updates too, for its type.
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	createUpdate := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	wantRules := []admissionregistrationv1.RuleWithOperations{
		{Operations: createUpdate, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"secrets"}}},
		{Operations: create, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"configmaps"}}},
		{Operations: create, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"coordination.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"leases"}}},
	}
	if c := policy.Spec.MatchConstraints; c == nil || len(c.ResourceRules) != len(wantRules) {
		t.Errorf("%s: matchConstraints %+v, want %+v", path, c, wantRules)
	} else {
		for i, r := range c.ResourceRules {
			w := wantRules[i]
			if !slices.Equal(r.Operations, w.Operations) || !slices.Equal(r.APIGroups, w.APIGroups) ||
				!slices.Equal(r.APIVersions, w.APIVersions) || !slices.Equal(r.Resources, w.Resources) ||
				len(r.ResourceNames) > 0 || (r.Scope != nil && *r.Scope != admissionregistrationv1.AllScopes) {
				t.Errorf("%s: resource rule %d: %+v, want %+v", path, i, r, w)
			}
		}
	}
	if f := policy.Spec.FailurePolicy; f == nil || *f != admissionregistrationv1.Fail {
		t.Errorf("%s: failurePolicy %v, want Fail", path, f)
	}

	// Two validations: the names of creates, one clause per kind, each
	// admitting one name; then the Secret's type (the next test).
	if len(policy.Spec.Validations) != 2 {
		t.Fatalf("%s: %d validations, want 2", path, len(policy.Spec.Validations))
	}
	v := policy.Spec.Validations[0]
	want := "request.operation != 'CREATE' || has(object.metadata.name) && (" +
		"(request.resource.resource == 'secrets' && object.metadata.name == 'sample-controller-webhook-ca') || " +
		"(request.resource.resource == 'configmaps' && object.metadata.name == 'sample-controller-metrics-ca') || " +
		"(request.resource.resource == 'leases' && (object.metadata.name == 'sample-controller' || " +
		"object.metadata.name.startsWith('sample-controller-shard-') || " +
		"object.metadata.name.startsWith('sample-controller-member-') || " +
		"object.metadata.name.startsWith('sample-controller-boundaries-of-'))))"
	if got := strings.Join(strings.Fields(v.Expression), " "); got != strings.Join(strings.Fields(want), " ") {
		t.Errorf("%s: validation %q, want %q", path, got, want)
	}
	for resource, name := range names {
		clause := "(request.resource.resource == '" + resource + "' && object.metadata.name == '" + name + "')"
		if resource == "leases" {
			clause = "(request.resource.resource == '" + resource + "' && (object.metadata.name == '" + name + "' ||"
			for _, prefix := range replicas.LeasePrefixes(name) {
				if p := "object.metadata.name.startsWith('" + prefix + "')"; !strings.Contains(v.Expression, p) {
					t.Errorf("%s: the validation does not admit the Leases of sharding, %s*: %s", path, prefix, v.Expression)
				}
				if !strings.Contains(v.Message, prefix+"*") {
					t.Errorf("%s: the message %q does not name the Leases of sharding, %s*", path, v.Message, prefix)
				}
			}
		}
		if !strings.Contains(strings.Join(strings.Fields(v.Expression), " "), clause) {
			t.Errorf("%s: the validation does not admit the %s %q the controller creates: %s", path, resource, name, v.Expression)
		}
		if !strings.Contains(v.Message, name) {
			t.Errorf("%s: the message %q does not name %q", path, v.Message, name)
		}
	}
	if v.Reason == nil || *v.Reason != "Forbidden" {
		t.Errorf("%s: reason %v, want Forbidden", path, v.Reason)
	}

	expectDeniedEverywhere(t, "names-policybinding.yaml", &policy)
}

// expectTheControllersUserMatched checks that policy, read from path,
// matches every ServiceAccount of the controller's name, in any namespace
// (an overlay's namespace: moves it), and nobody else.
func expectTheControllersUserMatched(t *testing.T, path string, policy *admissionregistrationv1.ValidatingAdmissionPolicy) {
	t.Helper()
	wantUser := "request.userInfo.username.startsWith('system:serviceaccount:') && " +
		"request.userInfo.username.endsWith(':" + samplecontroller.ControllerName + "')"
	if len(policy.Spec.MatchConditions) != 1 || policy.Spec.MatchConditions[0].Expression != wantUser {
		t.Errorf("%s: matchConditions %+v, want one: %s", path, policy.Spec.MatchConditions, wantUser)
	}
}

// expectDeniedEverywhere checks that the binding of bindingFile applies
// policy with Deny, in every namespace: a binding that only audits, or that
// selects namespaces, would leave the writes it refuses admitted.
func expectDeniedEverywhere(t *testing.T, bindingFile string, policy *admissionregistrationv1.ValidatingAdmissionPolicy) {
	t.Helper()
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	decode(t, bindingFile, &binding)
	if s := binding.Spec; s.PolicyName != policy.Name || s.ParamRef != nil || s.MatchResources != nil ||
		!slices.Equal(s.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("%s/%s: %+v, want policy %s, validationActions [Deny], nothing narrower",
			deployDir, bindingFile, s, policy.Name)
	}
}

// The own-names policy's second validation admits, of the Secrets the
// controller's ServiceAccount creates or updates, the type pkg/certauthority
// writes alone. Of another type, a Secret of the CA Secret's name could be a
// kubernetes.io/service-account-token Secret, which the API server fills in
// with a token that never expires and the Role lets the account read; and a
// type changed in the Go source alone would have the controller's own create
// refused the first time it makes its CA.
func TestOwnNamesPolicyAdmitsTheSecretTypeTheControllerWrites(t *testing.T) {
	if got, want := certauthority.SecretType, "Opaque"; string(got) != want {
		t.Errorf("pkg/certauthority writes its CA Secret of type %q; names-policy.yaml admits %q alone", got, want)
	}
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	decode(t, "names-policy.yaml", &policy)
	path := deployDir + "/names-policy.yaml"
	if len(policy.Spec.Validations) != 2 {
		t.Fatalf("%s: %d validations, want 2, the second the Secret's type", path, len(policy.Spec.Validations))
	}
	typed := policy.Spec.Validations[1]
	if got, want := strings.Join(strings.Fields(typed.Expression), " "),
		"request.resource.resource != 'secrets' || object.type == '"+string(certauthority.SecretType)+"'"; got != want {
		t.Errorf("%s: validation %q, want %q", path, got, want)
	}
	for _, s := range []string{createdNames(t)["secrets"], string(certauthority.SecretType)} {
		if !strings.Contains(typed.Message, s) {
			t.Errorf("%s: the message %q does not name %q", path, typed.Message, s)
		}
	}
	if typed.Reason == nil || *typed.Reason != "Forbidden" {
		t.Errorf("%s: reason %v, want Forbidden", path, typed.Reason)
	}
}

// Every kind a namespaced Role lets the controller create is one the
// own-names policy confines, and the one name the Role lets it read and
// update is the one name the policy lets it create: a Role that comes to
// grant the create of another kind leaves it unconfined until the policy
// names it, and fails here first.
func TestOwnNamesPolicyConfinesEveryCreateTheRolesGrant(t *testing.T) {
	names := createdNames(t)
	created, named := map[string]bool{}, map[string][]string{}
	for _, file := range []string{"leader-election-role.yaml", "webhook-role.yaml"} {
		var role rbacv1.Role
		decode(t, file, &role)
		for _, rule := range role.Rules {
			for _, r := range rule.Resources {
				if len(rule.ResourceNames) == 0 && slices.Contains(rule.Verbs, "create") {
					created[r] = true
				}
				named[r] = append(named[r], rule.ResourceNames...)
			}
		}
	}
	if got, want := slices.Sorted(maps.Keys(created)), []string{"configmaps", "leases", "secrets"}; !slices.Equal(got, want) {
		t.Errorf("the Roles grant create of %v, want %v, the kinds names-policy.yaml confines", got, want)
	}
	for r := range created {
		if !slices.Equal(named[r], []string{names[r]}) {
			t.Errorf("the Roles name %q of %s, want [%q], the one name names-policy.yaml lets the controller create",
				named[r], r, names[r])
		}
	}
}
