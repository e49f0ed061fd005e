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
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-samples/sample-controller/pkg/options"
	"github.com/kube-samples/sample-controller/pkg/replicas"
)

// The own-leases policy admits the Leases the controller writes and no
// other: the leader's of -leader-elect-id's default, and sharded, the
// member and shard Leases pkg/replicas names after it, labelled as it
// labels them, claiming no more than -leader-elect-lease-duration may, held
// by an identity of replicas.NewIdentity's shape. Its words are the Go
// source's: a name, label, bound or identity changed on one side only, and
// the controller's own writes would be refused (a replica that never leads,
// a shard never held), or another's admitted.
func TestOwnLeasesPolicyAdmitsTheLeasesTheControllerWrites(t *testing.T) {
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	decode(t, "leases-policy.yaml", &policy)
	path := deployDir + "/leases-policy.yaml"

	expectTheControllersUserMatched(t, path, &policy)
	c := policy.Spec.MatchConstraints
	if c == nil || len(c.ResourceRules) != 1 {
		t.Fatalf("%s: matchConstraints %+v, want one rule", path, c)
	}
	if r := c.ResourceRules[0]; !slices.Equal(r.Operations, []admissionregistrationv1.OperationType{
		admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}) ||
		!slices.Equal(r.APIGroups, []string{coordinationv1.GroupName}) || !slices.Equal(r.APIVersions, []string{"*"}) ||
		!slices.Equal(r.Resources, []string{"leases"}) || len(r.ResourceNames) > 0 ||
		(r.Scope != nil && *r.Scope != admissionregistrationv1.AllScopes) {
		t.Errorf("%s: resource rule %+v, want CREATE, UPDATE and DELETE of %s leases, every version, every name",
			path, r, coordinationv1.GroupName)
	}
	if f := policy.Spec.FailurePolicy; f == nil || *f != admissionregistrationv1.Fail {
		t.Errorf("%s: failurePolicy %v, want Fail", path, f)
	}

	leader := createdNames(t)["leases"]
	prefixes := replicas.LeasePrefixes(leader)
	shardPrefix, memberPrefix := prefixes[0], prefixes[1]
	maxSeconds := int(options.MaxLeaseDuration / time.Second)
	memberRE := "^" + memberPrefix + "[0-9a-f]{8}$"
	shardRE := "^" + shardPrefix + "(0|[1-9][0-9]{0,2})-of-[1-9][0-9]{0,2}$"
	holderRE := "^[A-Za-z0-9._-]{1,64}_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

	wantVariables := []admissionregistrationv1.Variable{
		{Name: "name", Expression: "request.operation == 'DELETE' ? oldObject.metadata.name : object.metadata.name"},
		{Name: "member", Expression: "variables.name.matches('" + memberRE + "')"},
		{Name: "shard", Expression: "variables.name.matches('" + shardRE + "') ? " +
			"variables.name.substring(variables.name.lastIndexOf('-shard-') + 7).split('-of-').map(n, int(n)) : []"},
	}
	if len(policy.Spec.Variables) != len(wantVariables) {
		t.Fatalf("%s: %d variables, want %d", path, len(policy.Spec.Variables), len(wantVariables))
	}
	for i, v := range policy.Spec.Variables {
		if got := (admissionregistrationv1.Variable{Name: v.Name, Expression: strings.Join(strings.Fields(v.Expression), " ")}); got != wantVariables[i] {
			t.Errorf("%s: variable %d: %+v, want %+v", path, i, got, wantVariables[i])
		}
	}

	want := []struct{ expression, mustName string }{
		{
			fmt.Sprintf("request.operation == 'DELETE' || variables.name == '%s' || variables.member || "+
				"(variables.shard.size() == 2 && variables.shard[0] < variables.shard[1] && "+
				"variables.shard[1] >= 2 && variables.shard[1] <= %d)", leader, options.MaxShards),
			fmt.Sprintf("the Lease %s and, sharded, the Leases %s<8 hex digits> and %s<index>-of-<count> (count from 2 to %d",
				leader, memberPrefix, shardPrefix, options.MaxShards),
		},
		{
			"request.operation != 'DELETE' || variables.member || " +
				"(variables.shard.size() == 2 && oldObject.spec.?holderIdentity.orValue('') == '')",
			"deletes its member Leases " + memberPrefix + "<8 hex digits>, and shard Leases " + shardPrefix +
				"<index>-of-<count> held by none, alone",
		},
		{
			fmt.Sprintf("request.operation != 'CREATE' || "+
				"((variables.member && '%[3]s' in object.metadata.?labels.orValue({}) ? "+
				"object.metadata.labels.size() == 2 && "+
				"object.metadata.labels.all(k, k == '%[2]s' || k == '%[3]s') && "+
				"object.metadata.labels['%[2]s'] == '%[1]s' && "+
				"object.metadata.labels['%[3]s'].matches('^[1-9][0-9]{0,2}$') && "+
				"int(object.metadata.labels['%[3]s']) >= 2 && int(object.metadata.labels['%[3]s']) <= %[4]d : "+
				"object.metadata.?labels.orValue({}) == (object.metadata.name == '%[1]s' ? {} : {'%[2]s': '%[1]s'})) && "+
				"object.metadata.?annotations.orValue({}).size() == 0 && "+
				"object.metadata.?finalizers.orValue([]).size() == 0 && "+
				"object.metadata.?ownerReferences.orValue([]).size() == 0)",
				leader, replicas.LabelLeaseSet, replicas.LabelShards, options.MaxShards),
			fmt.Sprintf("the label %s: %s on member and shard Leases alone, and %s: <count from 2 to %d> on member Leases",
				replicas.LabelLeaseSet, leader, replicas.LabelShards, options.MaxShards),
		},
		{
			"request.operation != 'UPDATE' || " +
				"(object.metadata.?labels.orValue({}) == oldObject.metadata.?labels.orValue({}) && " +
				"object.metadata.?annotations.orValue({}) == oldObject.metadata.?annotations.orValue({}) && " +
				"object.metadata.?finalizers.orValue([]) == oldObject.metadata.?finalizers.orValue([]) && " +
				"object.metadata.?ownerReferences.orValue([]) == oldObject.metadata.?ownerReferences.orValue([]))",
			"keeping their labels, annotations, finalizers and owners",
		},
		{
			fmt.Sprintf("request.operation == 'DELETE' || object.spec.?leaseDurationSeconds.orValue(0) <= %d", maxSeconds),
			fmt.Sprintf("at most %d seconds, the bound of -leader-elect-lease-duration", maxSeconds),
		},
		{
			"request.operation == 'DELETE' || object.spec.?holderIdentity.orValue('') == '' || " +
				"object.spec.holderIdentity.matches('" + holderRE + "')",
			"held by a replica, <host name of at most 64 characters>_<UUID>, or by none",
		},
		{
			"request.operation == 'DELETE' || (object.spec.?strategy.orValue('') == " +
				"(request.operation == 'UPDATE' ? oldObject.spec.?strategy.orValue('') : '') && " +
				"object.spec.?preferredHolder.orValue('') == " +
				"(request.operation == 'UPDATE' ? oldObject.spec.?preferredHolder.orValue('') : ''))",
			"no strategy or preferredHolder",
		},
	}
	if len(policy.Spec.Validations) != len(want) {
		t.Fatalf("%s: %d validations, want %d", path, len(policy.Spec.Validations), len(want))
	}
	for i, v := range policy.Spec.Validations {
		if got := strings.Join(strings.Fields(v.Expression), " "); got != want[i].expression {
			t.Errorf("%s: validation %d:\n got %q\nwant %q", path, i, got, want[i].expression)
		}
		if !strings.Contains(strings.Join(strings.Fields(v.Message), " "), want[i].mustName) {
			t.Errorf("%s: validation %d: the message %q does not say %q", path, i, v.Message, want[i].mustName)
		}
		if v.Reason == nil || *v.Reason != "Forbidden" {
			t.Errorf("%s: validation %d: reason %v, want Forbidden", path, i, v.Reason)
		}
	}

	// The patterns above, against the names and identities the Go source
	// makes (CEL's matches is RE2, Go's regexp): every shard Lease of every
	// count -shards allows, and none of a count it refuses or of another
	// shape; this replica's identity, and one of the longest host name a
	// pod (or Linux) has.
	shard := regexp.MustCompile(shardRE)
	for count := 2; count <= options.MaxShards; count++ {
		for index := range count {
			if name := replicas.ShardLeaseName(leader, replicas.Shard{Index: index, Count: count}); !shard.MatchString(name) {
				t.Fatalf("%s: the shard Lease %s does not match %s", path, name, shardRE)
			}
		}
	}
	for _, name := range []string{shardPrefix + "01-of-4", shardPrefix + "0-of-04", shardPrefix + "0-of-1000",
		shardPrefix + "-1-of-4", shardPrefix + "0-of-4x", "x" + shardPrefix + "0-of-4"} {
		if shard.MatchString(name) {
			t.Errorf("%s: %s matches %s", path, name, shardRE)
		}
	}
	identity, err := replicas.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	_, uuid, _ := strings.Cut(identity, "_")
	holder := regexp.MustCompile(holderRE)
	for _, id := range []string{identity, strings.Repeat("h", 64) + "_" + uuid} {
		if !holder.MatchString(id) {
			t.Errorf("%s: the identity %q does not match %s", path, id, holderRE)
		}
	}
	if id := strings.Repeat("h", 65) + "_" + uuid; holder.MatchString(id) {
		t.Errorf("%s: %q, of a host name longer than Linux allows, matches %s", path, id, holderRE)
	}

	expectDeniedEverywhere(t, "leases-policybinding.yaml", &policy)
}

// The Lease quota counts the Leases of the controller's namespace, and
// leaves room for every Lease the controller may hold at once: the shard
// Leases of the largest -shards and of one count before it, which stay
// after a change (2 x options.MaxShards), and 128 for the leader's and the
// member Leases.
func TestLeaseQuotaHoldsTheLeasesOfTheLargestSharding(t *testing.T) {
	var quota corev1.ResourceQuota
	decode(t, "leases-quota.yaml", &quota)
	path := deployDir + "/leases-quota.yaml"
	key, size := corev1.ResourceName("count/leases."+coordinationv1.GroupName), int64(2*options.MaxShards+128)
	if got, ok := quota.Spec.Hard[key]; len(quota.Spec.Hard) != 1 || !ok || got.Value() != size {
		t.Errorf("%s: hard %v, want %s: %d", path, quota.Spec.Hard, key, size)
	}
	if quota.Spec.Scopes != nil || quota.Spec.ScopeSelector != nil {
		t.Errorf("%s: scopes %v %v, want none: every Lease of the namespace counts", path, quota.Spec.Scopes, quota.Spec.ScopeSelector)
	}
	if !strings.Contains(read(t, path), fmt.Sprintf("%d = 2 x %d + 128", size, options.MaxShards)) {
		t.Errorf("%s: its comment does not say how %d is made", path, size)
	}
}
