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
	"encoding/json"
	"flag"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/kube-samples/sample-controller/pkg/options"
)

// The leader election Role may get and update one Lease by name: the one the
// deployed replicas elect their leader with, -leader-elect-id (its default
// unless the Deployment's args set it), in the Deployment's namespace, where
// -leader-elect-namespace defaults to in a pod. Name another and no replica
// ever leads, while every replica reports Ready.
func TestLeaderElectionRoleNamesTheDeployedLease(t *testing.T) {
	o := options.AddFlags(flag.NewFlagSet("controller", flag.ContinueOnError))
	lease, leaseFrom := o.LeaderElection.Name, "the default of -leader-elect-id"
	var d appsv1.Deployment
	decode(t, "deployment.yaml", &d)
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, arg := range c.Args {
			if v, ok := strings.CutPrefix(strings.TrimLeft(arg, "-"), "leader-elect-id="); ok {
				lease, leaseFrom = v, "the Deployment's -leader-elect-id"
			}
			if v, ok := strings.CutPrefix(strings.TrimLeft(arg, "-"), "leader-elect-namespace="); ok {
				t.Errorf("%s/deployment.yaml: -leader-elect-namespace=%s: the Role below is for the Deployment's own namespace", deployDir, v)
			}
		}
	}

	var role rbacv1.Role
	decode(t, "leader-election-role.yaml", &role)
	path := deployDir + "/leader-election-role.yaml"
	if role.Namespace != d.Namespace {
		t.Errorf("%s: namespace %q, want the Deployment's %q, where the Lease lives", path, role.Namespace, d.Namespace)
	}
	var named []string
	for _, rule := range role.Rules {
		if !slices.Contains(rule.APIGroups, coordinationv1.GroupName) || !slices.Contains(rule.Resources, "leases") {
			continue
		}
		if len(rule.ResourceNames) == 0 {
			if !slices.Equal(rule.Verbs, []string{"create"}) {
				t.Errorf("%s: verbs %v on every Lease, want only create (RBAC cannot name an object being created)", path, rule.Verbs)
			}
			continue
		}
		named = append(named, rule.ResourceNames...)
		if !slices.Equal(rule.Verbs, []string{"get", "update"}) {
			t.Errorf("%s: verbs %v on Leases %v, want get and update", path, rule.Verbs, rule.ResourceNames)
		}
	}
	if !slices.Equal(named, []string{lease}) {
		t.Errorf("%s: resourceNames %q, want [%q], %s", path, named, lease, leaseFrom)
	}
}

// The sharding Role grants, on the Leases of the Deployment's namespace, the
// verbs a sharded replica sends besides create (the leader election Role's,
// confined by name by names-policy.yaml): get, list, update and delete,
// which pkg/replicas' TestAReplicaSendsGetListCreateUpdateAndDeleteOnItsLeasesAlone
// holds it to.
func TestShardingRoleGrantsWhatAShardedReplicaSends(t *testing.T) {
	var d appsv1.Deployment
	decode(t, "deployment.yaml", &d)
	var role rbacv1.Role
	decode(t, "sharding-role.yaml", &role)
	path := deployDir + "/sharding-role.yaml"
	if role.Namespace != d.Namespace {
		t.Errorf("%s: namespace %q, want the Deployment's %q, where the Leases live", path, role.Namespace, d.Namespace)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"},
		Verbs: []string{"delete", "get", "list", "update"}}}
	if !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("%s: rules %+v, want %+v", path, role.Rules, want)
	}
}

// leaseVerbs are the verbs the role of file grants on Leases, sorted, once each.
func leaseVerbs(t *testing.T, file string) []string {
	t.Helper()
	var role rbacv1.ClusterRole // a Role's rules read the same
	decode(t, file, &role)
	var verbs []string
	for _, rule := range role.Rules {
		if slices.Contains(rule.APIGroups, coordinationv1.GroupName) && slices.Contains(rule.Resources, "leases") {
			verbs = append(verbs, rule.Verbs...)
		}
	}
	slices.Sort(verbs)
	return slices.Compact(verbs)
}

// The FlowSchema sends the deployed replicas' Lease requests to the
// leader-election priority level: the Deployment's ServiceAccount, in its
// namespace, where the Lease lives, with every verb a Role or ClusterRole of
// the manifests grants on Leases (what pkg/replicas sends: the leader's lock,
// and a sharded replica's lists and deletes too). A subject, a namespace or
// a verb that drifted would match nothing, and those requests would queue
// behind the reviews that guard /metrics again, with nothing to show it.
func TestFlowSchemaSendsTheDeployedLeaseToLeaderElection(t *testing.T) {
	var d appsv1.Deployment
	decode(t, "deployment.yaml", &d)
	var verbs []string
	for file, object := range deployFiles() {
		if object.Kind == "Role" || object.Kind == "ClusterRole" {
			verbs = append(verbs, leaseVerbs(t, file)...)
		}
	}
	slices.Sort(verbs)
	verbs = slices.Compact(verbs)
	if len(verbs) == 0 {
		t.Fatalf("%s: no Role grants a verb on Leases", deployDir)
	}

	var fs flowcontrolv1.FlowSchema
	decode(t, "flowschema.yaml", &fs)
	path := deployDir + "/flowschema.yaml"
	// Kubernetes' own FlowSchema for its controllers' Leases.
	system := bootstrap.SuggestedFlowSchemaSystemLeaderElection
	if got, want := fs.Spec.PriorityLevelConfiguration.Name, system.Spec.PriorityLevelConfiguration.Name; got != want {
		t.Errorf("%s: priority level %q, want %q, that of %s", path, got, want, system.Name)
	}
	if fs.Spec.MatchingPrecedence >= bootstrap.SuggestedFlowSchemaServiceAccounts.Spec.MatchingPrecedence {
		t.Errorf("%s: matchingPrecedence %d, not before %s's %d, which takes every ServiceAccount's requests", path,
			fs.Spec.MatchingPrecedence, bootstrap.SuggestedFlowSchemaServiceAccounts.Name,
			bootstrap.SuggestedFlowSchemaServiceAccounts.Spec.MatchingPrecedence)
	}
	systemVerbs := slices.Sorted(slices.Values(system.Spec.Rules[0].ResourceRules[0].Verbs))
	if got := leaseVerbs(t, "leader-election-role.yaml"); !slices.Equal(got, systemVerbs) {
		t.Errorf("%s: verbs %v on Leases, %s's are %v", deployDir+"/leader-election-role.yaml", got, system.Name, systemVerbs)
	}
	want := flowcontrolv1.PolicyRulesWithSubjects{
		Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
			ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: d.Namespace, Name: d.Spec.Template.Spec.ServiceAccountName}}},
		ResourceRules: []flowcontrolv1.ResourcePolicyRule{{APIGroups: []string{coordinationv1.GroupName},
			Resources: []string{"leases"}, Namespaces: []string{d.Namespace}, Verbs: verbs}},
	}
	if len(fs.Spec.Rules) != 1 {
		t.Fatalf("%s: %d rules, want 1", path, len(fs.Spec.Rules))
	}
	got := fs.Spec.Rules[0]
	for i := range got.ResourceRules {
		slices.Sort(got.ResourceRules[i].Verbs)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: rule %s, want %s", path, dump(got), dump(want))
	}
}

// dump is v as JSON, for a message.
func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
