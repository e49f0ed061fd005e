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

package main

import (
	"slices"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var widgetOwner = owner{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}, Writer: "widget-controller"}

// probes are the objects two Widgets ask for: a ConfigMap whose data key
// follows the Widget, whose label and value of "mode" are always the same.
var probes = [2][]byte{
	[]byte(`{"kind":"Thing","metadata":{"name":"a","labels":{"team":"x"}},"data":{"mode":"fast","a":"1"}}`),
	[]byte(`{"kind":"Thing","metadata":{"name":"b","labels":{"team":"x"}},"data":{"mode":"fast","b":"2"}}`),
}

// A value both probes set alike is pinned: a create must write it, an
// update may leave it as another manager changed it or put it back; a level
// the API server's defaults are not known for fails the generator, naming
// it, so that no kind is confined by accident.
func TestPolicyPinsWhatTheControllerAlwaysWritesAndRefusesUnknownLevels(t *testing.T) {
	thing := schema.GroupResource{Group: "example.com", Resource: "things"}
	if _, err := policyFor("p", thing, "Thing", probes, probes[0], widgetOwner); err == nil ||
		err.Error() != "no server defaults known for kind Thing: add them to serverDefaults" {
		t.Errorf("a kind of unknown defaults: %v", err)
	}
	serverDefaults["Thing"] = map[string]*allowed{"": nothing, metadataPath: anyField,
		"data": {keys: map[string][]any{"defaulted": {"yes"}}}}
	defer delete(serverDefaults, "Thing")
	if _, err := policyFor("p", thing, "Thing", probes, probes[0], widgetOwner); err == nil ||
		err.Error() != "Thing: no server defaults known for metadata.labels: add them to serverDefaults" {
		t.Errorf("a level of unknown defaults: %v", err)
	}
	serverDefaults["Thing"]["metadata.labels"] = anyField
	policy, err := policyFor("p", thing, "Thing", probes, probes[0], widgetOwner)
	if err != nil {
		t.Fatal(err)
	}
	expectValidations(t, policy,
		"a new Thing: the object may hold data, kind, metadata alone <- request.operation != 'CREATE' || "+
			"(variables.object.all(k, k in ['data', 'kind', 'metadata']))",
		"a new Thing: data.mode must be 'fast' <- request.operation != 'CREATE' || "+
			"((variables.data[?'mode'].hasValue() && variables.data[?'mode'].value() == 'fast'))",
		"a new Thing: data may hold a, mode alone, and the API server's defaults: defaulted ['yes'] <- "+
			"request.operation != 'CREATE' || (variables.data.all(k, k in ['a', 'mode'] || "+
			"(k == 'defaulted' && variables.data[k] in ['yes'])))",
		"an update of a Thing: metadata.labels.team may change only to 'x' <- request.operation != 'UPDATE' || "+
			"((variables.metadataLabels[?'team'].hasValue() == variables.oldMetadataLabels[?'team'].hasValue() && "+
			"(!variables.metadataLabels[?'team'].hasValue() || variables.metadataLabels[?'team'].value() == "+
			"variables.oldMetadataLabels[?'team'].value())) || (variables.metadataLabels[?'team'].hasValue() && "+
			"variables.metadataLabels[?'team'].value() == 'x'))",
		"an update of a Thing: at data only a, mode may change <- request.operation != 'UPDATE' || "+
			"(variables.data.all(k, k in ['a', 'mode'] || (k in variables.oldData && variables.data[k] == "+
			"variables.oldData[k])) && variables.oldData.all(k, k in ['a', 'mode'] || k in variables.data))",
		"the widget-controller deletes only a Thing a Widget controls <- request.operation != 'DELETE' || "+
			"variables.wasControlledByOwner",
	)
}

// What the owner need not ask for (the minimal probe has none of it) may be
// missing: a named list may lack the elements, each checked where present
// as before; a pinned value may be unset, and set is the value; a map's
// rules apply where it is present alone.
func TestWhatAnOwnerNeedNotAskForMayBeMissing(t *testing.T) {
	thing := schema.GroupResource{Group: "example.com", Resource: "things"}
	serverDefaults["Thing"] = map[string]*allowed{"": nothing, metadataPath: anyField, "spec": nothing,
		"spec.ports[]": nothing, "spec.extra": nothing}
	defer delete(serverDefaults, "Thing")
	full := [2][]byte{
		[]byte(`{"kind":"Thing","metadata":{"name":"a"},"spec":{"ports":[{"name":"http","port":1}],"mode":"fast",` +
			`"extra":{"tier":"gold"}}}`),
		[]byte(`{"kind":"Thing","metadata":{"name":"b"},"spec":{"ports":[{"name":"http","port":2}],"mode":"fast",` +
			`"extra":{"tier":"gold"}}}`),
	}
	minimal := []byte(`{"kind":"Thing","metadata":{"name":"a"},"spec":{}}`)
	policy, err := policyFor("p", thing, "Thing", full, minimal, widgetOwner)
	if err != nil {
		t.Fatal(err)
	}
	expectValidations(t, policy,
		"a new Thing: spec.ports may hold http alone <- request.operation != 'CREATE' || "+
			"(size(dyn(variables.spec[?'ports'].orValue([]))) <= 1 && "+
			"dyn(variables.spec[?'ports'].orValue([])).all(e0, e0[?'name'].orValue('') in ['http']))",
		"a new Thing: spec.ports[name=http].name must be 'http' <- request.operation != 'CREATE' || "+
			"(dyn(variables.spec[?'ports'].orValue([])).all(e0, e0[?'name'].orValue('') != 'http' || "+
			"(e0[?'name'].hasValue() && e0[?'name'].value() == 'http')))",
		"a new Thing: spec.mode, if set, must be 'fast' <- request.operation != 'CREATE' || "+
			"((!variables.spec[?'mode'].hasValue() || variables.spec[?'mode'].value() == 'fast'))",
		"a new Thing: spec.extra.tier must be 'gold' <- request.operation != 'CREATE' || "+
			"(!(variables.spec[?'extra'].hasValue()) || ((variables.specExtra[?'tier'].hasValue() && "+
			"variables.specExtra[?'tier'].value() == 'gold')))",
		"an update of a Thing: spec.mode may change only to 'fast', or go <- request.operation != 'UPDATE' || "+
			"((variables.spec[?'mode'].hasValue() == variables.oldSpec[?'mode'].hasValue() && "+
			"(!variables.spec[?'mode'].hasValue() || variables.spec[?'mode'].value() == "+
			"variables.oldSpec[?'mode'].value())) || (!variables.spec[?'mode'].hasValue() || "+
			"variables.spec[?'mode'].value() == 'fast'))",
	)
}

// expectValidations fails t for each validation of want ("message <-
// expression") that policy lacks.
func expectValidations(t *testing.T, policy *admissionv1.ValidatingAdmissionPolicy, want ...string) {
	t.Helper()
	got := make([]string, 0, len(policy.Spec.Validations))
	for _, v := range policy.Spec.Validations {
		got = append(got, v.Message+" <- "+v.Expression)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no validation\n%s\namong\n%s", w, got)
		}
	}
}
