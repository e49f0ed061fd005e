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
// member, shard and boundaries Leases pkg/replicas names after it, labelled
// and annotated as it labels and annotates them, claiming no more than
// -leader-elect-lease-duration may, held by an identity of
// replicas.NewIdentity's shape. Its words are the Go source's: a name,
// label, annotation, bound or identity changed on one side only, and the
// controller's own writes would be refused (a replica that never leads, a
// shard never held, boundaries never published), or another's admitted.
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
	if len(prefixes) != 3 {
		t.Fatalf("replicas.LeasePrefixes: %q, want the shard, member and boundaries prefixes", prefixes)
	}
	shardPrefix, memberPrefix, boundariesPrefix := prefixes[0], prefixes[1], prefixes[2]
	maxSeconds := int(options.MaxLeaseDuration / time.Second)
	memberRE := "^" + memberPrefix + "[0-9a-f]{8}$"
	shardRE := "^" + shardPrefix + "(0|[1-9][0-9]{0,2})-of-[1-9][0-9]{0,2}(-[0-9a-f]{8})?$"
	boundariesRE := "^" + boundariesPrefix + "[1-9][0-9]{0,2}$"
	startsRE := "^0x[0-9a-f]{16}(,0x[0-9a-f]{16})*$"
	holderRE := "^[A-Za-z0-9._-]{1,64}_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

	wantVariables := []admissionregistrationv1.Variable{
		{Name: "name", Expression: "request.operation == 'DELETE' ? oldObject.metadata.name : object.metadata.name"},
		{Name: "member", Expression: "variables.name.matches('" + memberRE + "')"},
		{Name: "shard", Expression: "variables.name.matches('" + shardRE + "') ? " +
			"variables.name.substring(variables.name.lastIndexOf('-shard-') + 7).split('-of-')" +
			".map(n, int(n.split('-')[0])) : []"},
		{Name: "boundaries", Expression: "variables.name.matches('" + boundariesRE + "') ? " +
			"int(variables.name.substring(variables.name.lastIndexOf('-of-') + 4)) : 0"},
		{Name: "annotations", Expression: "object.metadata.?annotations.orValue({})"},
		{Name: "oldAnnotations", Expression: "oldObject.metadata.?annotations.orValue({})"},
		{Name: "starts", Expression: "variables.annotations[?'" + replicas.AnnotationBoundaries + "'].orValue('')"},
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
				"variables.shard[1] >= 2 && variables.shard[1] <= %[2]d) || "+
				"(variables.boundaries >= 2 && variables.boundaries <= %[2]d)", leader, options.MaxShards),
			fmt.Sprintf("the Lease %s and, sharded, the Leases %s<8 hex digits>, %s<index>-of-<count>[-<8 hex digits "+
				"of a generation>] and %s<count> (count from 2 to %d", leader, memberPrefix, shardPrefix,
				boundariesPrefix, options.MaxShards),
		},
		{
			"request.operation != 'DELETE' || variables.member || " +
				"(variables.shard.size() == 2 && oldObject.spec.?holderIdentity.orValue('') == '')",
			"deletes its member Leases " + memberPrefix + "<8 hex digits>, and shard Leases " + shardPrefix +
				"<index>-of-<count>[-<generation>] held by none, alone: not its leader's Lease, a boundaries Lease",
		},
		{
			fmt.Sprintf("request.operation != 'CREATE' || "+
				"((variables.member && '%[3]s' in object.metadata.?labels.orValue({}) ? "+
				"object.metadata.labels.all(k, k == '%[2]s' || k == '%[3]s' || "+
				"(k == '%[5]s' && object.metadata.labels[k] == '%[6]s')) && "+
				"object.metadata.labels[?'%[2]s'].orValue('') == '%[1]s' && "+
				"object.metadata.labels['%[3]s'].matches('^[1-9][0-9]{0,2}$') && "+
				"int(object.metadata.labels['%[3]s']) >= 2 && int(object.metadata.labels['%[3]s']) <= %[4]d : "+
				"object.metadata.?labels.orValue({}) == (object.metadata.name == '%[1]s' ? {} : {'%[2]s': '%[1]s'})) && "+
				"variables.annotations.all(k, variables.boundaries != 0 && k == '%[7]s') && "+
				"object.metadata.?finalizers.orValue([]).size() == 0 && "+
				"object.metadata.?ownerReferences.orValue([]).size() == 0)",
				leader, replicas.LabelLeaseSet, replicas.LabelShards, options.MaxShards,
				replicas.LabelBoundaries, replicas.BoundariesWeighted, replicas.AnnotationBoundaries),
			fmt.Sprintf("the label %s: %s on member, shard and boundaries Leases alone, %s: <count from 2 to %d> on "+
				"member Leases, and %s: %s on member Leases or not: no other label, no annotation but %s on "+
				"boundaries Leases", replicas.LabelLeaseSet, leader, replicas.LabelShards, options.MaxShards,
				replicas.LabelBoundaries, replicas.BoundariesWeighted, replicas.AnnotationBoundaries),
		},
		{
			fmt.Sprintf("request.operation != 'UPDATE' || "+
				"(object.metadata.?labels.orValue({}) == oldObject.metadata.?labels.orValue({}) && "+
				"(variables.boundaries == 0 ? variables.annotations == variables.oldAnnotations : "+
				"variables.annotations.all(k, k == '%[1]s' || k in variables.oldAnnotations) && "+
				"variables.oldAnnotations.all(k, k == '%[1]s' || "+
				"(k in variables.annotations && variables.annotations[k] == variables.oldAnnotations[k]))) && "+
				"object.metadata.?finalizers.orValue([]) == oldObject.metadata.?finalizers.orValue([]) && "+
				"object.metadata.?ownerReferences.orValue([]) == oldObject.metadata.?ownerReferences.orValue([]))",
				replicas.AnnotationBoundaries),
			"keeping their labels, annotations, finalizers and owners, the annotation " +
				replicas.AnnotationBoundaries + " of its boundaries Leases excepted",
		},
		{
			"request.operation == 'DELETE' || variables.boundaries == 0 || " +
				"(variables.starts.matches('" + startsRE + "') && " +
				"variables.starts.split(',').size() == variables.boundaries - 1)",
			"writes its boundaries Leases " + boundariesPrefix + "<count> with the annotation " +
				replicas.AnnotationBoundaries + ": <count - 1> starts, each 0x and 16 lower-case hex digits",
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
	// count -shards allows, of equal ranges and of published boundaries,
	// and every boundaries Lease, and none of a count it refuses or of
	// another shape; this replica's identity, and one of the longest host
	// name a pod (or Linux) has.
	shard := regexp.MustCompile(shardRE)
	for count := 2; count <= options.MaxShards; count++ {
		for index := range count {
			if name := replicas.ShardLeaseName(leader, replicas.Shard{Index: index, Count: count}); !shard.MatchString(name) {
				t.Fatalf("%s: the shard Lease %s does not match %s", path, name, shardRE)
			}
		}
	}
	weighted := replicas.SplitByWeight(2, map[string]int{"a": 1, "b": 1})
	if len(weighted.Generation) != 8 {
		t.Fatalf("replicas.SplitByWeight: generation %q, want 8 hex digits", weighted.Generation)
	}
	for index := range 2 {
		name := replicas.ShardLeaseName(leader, weighted.Shard(index))
		if want := fmt.Sprintf("%s%d-of-2-%s", shardPrefix, index, weighted.Generation); name != want {
			t.Errorf("the shard Lease of published boundaries: %s, want %s", name, want)
		}
		if !shard.MatchString(name) {
			t.Errorf("%s: the shard Lease %s, of published boundaries, does not match %s", path, name, shardRE)
		}
	}
	for _, name := range []string{shardPrefix + "01-of-4", shardPrefix + "0-of-04", shardPrefix + "0-of-1000",
		shardPrefix + "-1-of-4", shardPrefix + "0-of-4x", "x" + shardPrefix + "0-of-4",
		shardPrefix + "0-of-4-0123abcd9", shardPrefix + "0-of-4-0123abc", shardPrefix + "0-of-4-0123abcg",
		shardPrefix + "0-of-4-0123ABCD", shardPrefix + "0-of-4-", shardPrefix + "0-of-4-0123abcd-0123abcd"} {
		if shard.MatchString(name) {
			t.Errorf("%s: %s matches %s", path, name, shardRE)
		}
	}
	boundaries := regexp.MustCompile(boundariesRE)
	if got, want := replicas.BoundariesLeaseName(leader, 2), "sample-controller-boundaries-of-2"; got != want {
		t.Errorf("replicas.BoundariesLeaseName(%q, 2): %s, want %s", leader, got, want)
	}
	for count := 2; count <= options.MaxShards; count++ {
		if name := replicas.BoundariesLeaseName(leader, count); !boundaries.MatchString(name) {
			t.Fatalf("%s: the boundaries Lease %s does not match %s", path, name, boundariesRE)
		}
	}
	for _, name := range []string{boundariesPrefix + "02", boundariesPrefix + "1000", boundariesPrefix + "2x",
		boundariesPrefix + "2-0123abcd", boundariesPrefix, "x" + boundariesPrefix + "2"} {
		if boundaries.MatchString(name) {
			t.Errorf("%s: %s matches %s", path, name, boundariesRE)
		}
	}
	// The starts as the replicas write them, one per shard after the
	// first, each the start of its shard's range: of 2 shards, and of the
	// most, 255 of them.
	starts := regexp.MustCompile(startsRE)
	for _, count := range []int{2, options.MaxShards} {
		b := replicas.SplitByWeight(count, map[string]int{"a": 1, "b": 2, "c": 3})
		parts := make([]string, 0, count-1)
		for index := 1; index < count; index++ {
			parts = append(parts, b.Shard(index).Requirement().Start)
		}
		if annotation := strings.Join(parts, ","); !starts.MatchString(annotation) {
			t.Errorf("%s: the starts of %d shards, %s, do not match %s", path, count, annotation, startsRE)
		}
	}
	for _, annotation := range []string{"0x8000000000000000", "0x4000000000000000,0x8000000000000000"} {
		if !starts.MatchString(annotation) {
			t.Errorf("%s: the starts %s do not match %s", path, annotation, startsRE)
		}
	}
	for _, annotation := range []string{"", "0x8000000000000000,", ",0x8000000000000000", "0x800000000000000",
		"0x80000000000000000", "0x800000000000000A", "8000000000000000", "0X8000000000000000",
		"0x4000000000000000, 0x8000000000000000", "0x4000000000000000;0x8000000000000000"} {
		if starts.MatchString(annotation) {
			t.Errorf("%s: the starts %q match %s", path, annotation, startsRE)
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
// Leases of the largest -shards, of one count before it, which stay after
// a change, and of the split before, which stay after a change of
// boundaries (3 x options.MaxShards), and 128 for the leader's, the member
// and the boundaries Leases.
func TestLeaseQuotaHoldsTheLeasesOfTheLargestSharding(t *testing.T) {
	var quota corev1.ResourceQuota
	decode(t, "leases-quota.yaml", &quota)
	path := deployDir + "/leases-quota.yaml"
	key, size := corev1.ResourceName("count/leases."+coordinationv1.GroupName), int64(3*options.MaxShards+128)
	if got, ok := quota.Spec.Hard[key]; len(quota.Spec.Hard) != 1 || !ok || got.Value() != size {
		t.Errorf("%s: hard %v, want %s: %d", path, quota.Spec.Hard, key, size)
	}
	if quota.Spec.Scopes != nil || quota.Spec.ScopeSelector != nil {
		t.Errorf("%s: scopes %v %v, want none: every Lease of the namespace counts", path, quota.Spec.Scopes, quota.Spec.ScopeSelector)
	}
	if size != 896 {
		t.Errorf("the quota sized from options.MaxShards %d: %d, want 896", options.MaxShards, size)
	}
	if !strings.Contains(read(t, path), fmt.Sprintf("%d = 3 x %d + 128", size, options.MaxShards)) {
		t.Errorf("%s: its comment does not say how %d is made", path, size)
	}
}
