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
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// The own-events policy admits the Events the controller writes and no
// other: about a Foo (its API group and kind), about the CA Secret of
// -webhook-ca-secret's default, reported as the controller's name, and
// patches of its own. Its words are the Go source's: a group, kind, Secret
// or controller renamed on one side only (a copy hack/new-controller made
// and edited by hand, a flag's default changed) and every Event the
// controller writes would be refused, silently (client-go's recorder logs a
// refused event and drops it), or another admitted.
func TestOwnEventsPolicyAdmitsTheEventsTheControllerWrites(t *testing.T) {
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	decode(t, "events-policy.yaml", &policy)
	path := deployDir + "/events-policy.yaml"

	expectTheControllersUserMatched(t, path, &policy)
	// Creates and patches (UPDATE to admission) of core Events, every
	// version; Equivalent, so that events.k8s.io's, the same objects, are
	// matched too.
	c := policy.Spec.MatchConstraints
	if c == nil || c.MatchPolicy == nil || *c.MatchPolicy != admissionregistrationv1.Equivalent ||
		len(c.ResourceRules) != 1 {
		t.Fatalf("%s: matchConstraints %+v, want one rule, matchPolicy Equivalent", path, c)
	}
	if r := c.ResourceRules[0]; !slices.Equal(r.Operations, []admissionregistrationv1.OperationType{
		admissionregistrationv1.Create, admissionregistrationv1.Update}) ||
		!slices.Equal(r.APIGroups, []string{""}) || !slices.Equal(r.APIVersions, []string{"*"}) ||
		!slices.Equal(r.Resources, []string{"events"}) || len(r.ResourceNames) > 0 ||
		(r.Scope != nil && *r.Scope != admissionregistrationv1.AllScopes) {
		t.Errorf("%s: resource rule %+v, want CREATE and UPDATE of \"\" events, every version, every name", path, r)
	}
	if f := policy.Spec.FailurePolicy; f == nil || *f != admissionregistrationv1.Fail {
		t.Errorf("%s: failurePolicy %v, want Fail", path, f)
	}

	want := []struct{ expression, mustName string }{
		{
			"request.operation != 'CREATE' || " +
				"(object.involvedObject.?apiVersion.orValue('').startsWith('samplecontroller.k8s.io/') && " +
				"object.involvedObject.?kind.orValue('') == 'Foo' && " +
				"object.involvedObject.?namespace.orValue('') == request.namespace) || " +
				"(object.involvedObject.?apiVersion.orValue('') == 'v1' && " +
				"object.involvedObject.?kind.orValue('') == 'Secret' && " +
				"object.involvedObject.?name.orValue('') == 'sample-controller-webhook-ca' && " +
				"object.involvedObject.?namespace.orValue('') == request.namespace && " +
				"request.userInfo.username == 'system:serviceaccount:' + request.namespace + ':sample-controller')",
			"sample-controller-webhook-ca",
		},
		{
			"request.operation != 'CREATE' || " +
				"(object.?source.?component.orValue('') == 'sample-controller' && " +
				"object.?reportingComponent.orValue('') == 'sample-controller')",
			"as sample-controller alone",
		},
		{
			"request.operation != 'UPDATE' || oldObject.?source.?component.orValue('') == 'sample-controller'",
			"its own Events alone",
		},
		{
			"request.operation != 'UPDATE' || (object.involvedObject == oldObject.involvedObject && " +
				"object.?source.?component.orValue('') == oldObject.?source.?component.orValue('') && " +
				"object.?source.?host.orValue('') == oldObject.?source.?host.orValue('') && " +
				"object.?reportingComponent.orValue('') == oldObject.?reportingComponent.orValue(''))",
			"not the object an Event is about nor who reports it",
		},
	}
	if len(policy.Spec.Validations) != len(want) {
		t.Fatalf("%s: %d validations, want %d", path, len(policy.Spec.Validations), len(want))
	}
	for i, v := range policy.Spec.Validations {
		if got := strings.Join(strings.Fields(v.Expression), " "); got != want[i].expression {
			t.Errorf("%s: validation %d: %q, want %q", path, i, got, want[i].expression)
		}
		if !strings.Contains(strings.Join(strings.Fields(v.Message), " "), want[i].mustName) {
			t.Errorf("%s: validation %d: the message %q does not say %q", path, i, v.Message, want[i].mustName)
		}
		if v.Reason == nil || *v.Reason != "Forbidden" {
			t.Errorf("%s: validation %d: reason %v, want Forbidden", path, i, v.Reason)
		}
	}

	// The words above, held to the Go source's: the Foo's group and kind
	// (pkg/apis), the CA Secret the controller creates (the flag's
	// default, as the own-names policy), and the component both of its
	// recorders report as (controller.go, pkg/conversionwebhook).
	create, signed := policy.Spec.Validations[0], policy.Spec.Validations[1]
	for _, word := range []string{
		"'" + samplecontroller.GroupName + "/'",
		"'" + samplecontroller.FooKind + "'",
		"'" + createdNames(t)["secrets"] + "'",
		"':" + samplecontroller.ControllerName + "'",
	} {
		if !strings.Contains(create.Expression, word) {
			t.Errorf("%s: the first validation does not hold %s: %s", path, word, create.Expression)
		}
	}
	if n := strings.Count(signed.Expression, "== '"+samplecontroller.ControllerName+"'"); n != 2 {
		t.Errorf("%s: the second validation compares %d fields with '%s', want 2 (source.component, reportingComponent): %s",
			path, n, samplecontroller.ControllerName, signed.Expression)
	}
	expectDeniedEverywhere(t, "events-policybinding.yaml", &policy)
}
