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
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
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
	if _, err := policyFor("p", thing, "Thing", asked{probes: probes, minimal: probes[0]}, widgetOwner); err == nil ||
		err.Error() != "no server defaults known for kind Thing: add them to serverDefaults" {
		t.Errorf("a kind of unknown defaults: %v", err)
	}
	serverDefaults["Thing"] = map[string]*allowed{"": nothing, metadataPath: createdMetadata,
		"data": {keys: map[string][]any{"defaulted": {"yes"}}}}
	defer delete(serverDefaults, "Thing")
	if _, err := policyFor("p", thing, "Thing", asked{probes: probes, minimal: probes[0]}, widgetOwner); err == nil ||
		err.Error() != "Thing: no server defaults known for metadata.labels: add them to serverDefaults" {
		t.Errorf("a level of unknown defaults: %v", err)
	}
	serverDefaults["Thing"]["metadata.labels"] = nothing
	policy, err := policyFor("p", thing, "Thing", asked{probes: probes, minimal: probes[0]}, widgetOwner)
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
	serverDefaults["Thing"] = map[string]*allowed{"": nothing, metadataPath: createdMetadata, "spec": nothing,
		"spec.ports[]": nothing, "spec.extra": nothing}
	defer delete(serverDefaults, "Thing")
	full := [2][]byte{
		[]byte(`{"kind":"Thing","metadata":{"name":"a"},"spec":{"ports":[{"name":"http","port":1}],"mode":"fast",` +
			`"extra":{"tier":"gold"}}}`),
		[]byte(`{"kind":"Thing","metadata":{"name":"b"},"spec":{"ports":[{"name":"http","port":2}],"mode":"fast",` +
			`"extra":{"tier":"gold"}}}`),
	}
	minimal := []byte(`{"kind":"Thing","metadata":{"name":"a"},"spec":{}}`)
	policy, err := policyFor("p", thing, "Thing", asked{probes: full, minimal: minimal}, widgetOwner)
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
		// The port the owner need not ask for may go; another manager's may not.
		"an update of a Thing: spec.ports must keep each element named other than http as it was <- "+
			"request.operation != 'UPDATE' || (dyn(variables.oldSpec[?'ports'].orValue([])).all(o0, "+
			"o0[?'name'].orValue('') in [] ? dyn(variables.spec[?'ports'].orValue([])).exists(e0, "+
			"e0[?'name'].orValue('') == o0[?'name'].orValue('')) : o0[?'name'].orValue('') in ['http'] || "+
			"dyn(variables.spec[?'ports'].orValue([])).exists(e0, e0 == o0)))",
	)
}

// ownedThings are the objects two Widgets ask for: a Thing whose name,
// size and port follow the Widget, controlled by it.
var ownedThings = [2][]byte{
	[]byte(`{"kind":"Thing","metadata":{"name":"a","labels":{"team":"x"},"ownerReferences":[{"apiVersion":"example.com/v1",` +
		`"kind":"Widget","name":"w0","uid":"u0","controller":true}]},"spec":{"size":1,"ports":[{"name":"http","port":80}]}}`),
	[]byte(`{"kind":"Thing","metadata":{"name":"b","labels":{"team":"x"},"ownerReferences":[{"apiVersion":"example.com/v1",` +
		`"kind":"Widget","name":"w1","uid":"u1","controller":true}]},"spec":{"size":2,"ports":[{"name":"http","port":81}]}}`),
}

// A value copied from the owner is bounded as the owner's field it copies,
// on a create and an update (which may also leave it as it was), in a list
// element too; a new object's metadata holds what the controller writes
// and the API server adds, its labels the controller's, its owner
// references the controller reference alone, of a version the owner is
// served in; a delete orphans nothing, and an update keeps the elements
// of a list that another manager added.
func TestPolicyBoundsCopiesOfTheOwnerAndConfinesMetadataOwnersAndDeletes(t *testing.T) {
	thing := schema.GroupResource{Group: "example.com", Resource: "things"}
	serverDefaults["Thing"] = map[string]*allowed{"": nothing, metadataPath: createdMetadata, "metadata.labels": nothing,
		"spec": nothing, "spec.ports[]": nothing}
	defer delete(serverDefaults, "Thing")
	o := widgetOwner
	o.Versions = []string{"example.com/v1", "example.com/v2"}
	policy, err := policyFor("p", thing, "Thing", asked{probes: ownedThings, minimal: ownedThings[0], bounds: map[string]bound{
		"metadata.name": {field: "spec.name",
			schema: fieldSchema{MinLength: ptr.To[int64](1), MaxLength: ptr.To[int64](63), Pattern: `^[a-z]+$`}},
		"spec.size": {field: "spec.replicas", schema: fieldSchema{Minimum: ptr.To(1.0), Maximum: ptr.To(5.0)}},
		"spec.ports[name=http].port": {field: "spec.port",
			schema: fieldSchema{Minimum: ptr.To(1.0), Maximum: ptr.To(65536.0), ExclusiveMaximum: true}},
	}}, o)
	if err != nil {
		t.Fatal(err)
	}
	expectValidations(t, policy,
		"the widget-controller deletes a Thing with what it owns: no orphaning delete (propagationPolicy Orphan) <- "+
			"request.operation != 'DELETE' || (request.?options.?propagationPolicy.orValue('') != 'Orphan' && "+
			"request.?options.?orphanDependents.orValue(false) != true)",
		"a new Thing: metadata may hold labels, name, ownerReferences alone, and the API server's defaults: "+
			"creationTimestamp, generation, managedFields, uid <- request.operation != 'CREATE' || "+
			"(variables.metadata.all(k, k in ['labels', 'name', 'ownerReferences'] || k == 'creationTimestamp' || "+
			"k == 'generation' || k == 'managedFields' || k == 'uid'))",
		"a new Thing: metadata.labels may hold team alone <- request.operation != 'CREATE' || "+
			"(variables.metadataLabels.all(k, k in ['team']))",
		"a new Thing: metadata.name must be 1 to 63 characters long, matching '^[a-z]+$', as a Widget's spec.name is "+
			"<- request.operation != 'CREATE' || ((!variables.metadata[?'name'].hasValue() || "+
			"(size(variables.metadata[?'name'].value()) >= 1 && size(variables.metadata[?'name'].value()) <= 63 && "+
			"variables.metadata[?'name'].value().matches('^[a-z]+$'))))",
		"a new Thing: metadata.ownerReferences must be its controller reference alone: apiVersion one of "+
			"['example.com/v1', 'example.com/v2'], controller true, kind 'Widget', name, uid <- "+
			"request.operation != 'CREATE' || (size(dyn(variables.metadata[?'ownerReferences'].orValue([]))) == 1 && "+
			"dyn(variables.metadata[?'ownerReferences'].orValue([])).all(r, r.all(k, k in ['apiVersion', 'controller', "+
			"'kind', 'name', 'uid']) && r[?'apiVersion'].orValue('') in ['example.com/v1', 'example.com/v2'] && "+
			"(r[?'controller'].hasValue() && r[?'controller'].value() == true) && "+
			"(r[?'kind'].hasValue() && r[?'kind'].value() == 'Widget')))",
		"a new Thing: spec.size must be at least 1 and at most 5, as a Widget's spec.replicas is <- "+
			"request.operation != 'CREATE' || ((!variables.spec[?'size'].hasValue() || "+
			"(variables.spec[?'size'].value() >= 1 && variables.spec[?'size'].value() <= 5)))",
		"an update of a Thing: spec.size may change only to a value at least 1 and at most 5, as a Widget's "+
			"spec.replicas is <- request.operation != 'UPDATE' || ((variables.spec[?'size'].hasValue() == "+
			"variables.oldSpec[?'size'].hasValue() && (!variables.spec[?'size'].hasValue() || "+
			"variables.spec[?'size'].value() == variables.oldSpec[?'size'].value())) || "+
			"(!variables.spec[?'size'].hasValue() || (variables.spec[?'size'].value() >= 1 && "+
			"variables.spec[?'size'].value() <= 5)))",
		"a new Thing: spec.ports[name=http].port must be at least 1 and less than 65536, as a Widget's spec.port is "+
			"<- request.operation != 'CREATE' || (dyn(variables.spec[?'ports'].orValue([])).all(e0, "+
			"e0[?'name'].orValue('') != 'http' || (!e0[?'port'].hasValue() || (e0[?'port'].value() >= 1 && "+
			"e0[?'port'].value() < 65536))))",
		"an update of a Thing: spec.ports must keep http, and each element named other than http as it was <- "+
			"request.operation != 'UPDATE' || (dyn(variables.oldSpec[?'ports'].orValue([])).all(o0, "+
			"o0[?'name'].orValue('') in ['http'] ? dyn(variables.spec[?'ports'].orValue([])).exists(e0, "+
			"e0[?'name'].orValue('') == o0[?'name'].orValue('')) : o0[?'name'].orValue('') in ['http'] || "+
			"dyn(variables.spec[?'ports'].orValue([])).exists(e0, e0 == o0)))",
	)

	// A second owner reference the controller would set: no rule knows it.
	twoOwners := [2][]byte{
		bytes.Replace(ownedThings[0], []byte(`"controller":true}`), []byte(`"controller":true},{"name":"x"}`), 1),
		bytes.Replace(ownedThings[1], []byte(`"controller":true}`), []byte(`"controller":true},{"name":"x"}`), 1),
	}
	if _, err := policyFor("p", thing, "Thing", asked{probes: twoOwners, minimal: twoOwners[0]}, o); err == nil ||
		err.Error() != "Thing: the controller sets 2 owner references; the policy knows its controller reference alone" {
		t.Errorf("two owner references: %v", err)
	}
}

// The values of a Foo's Deployment that copy a field of the Foo's spec
// are found by probing, and bounded as the generated CRD bounds that
// field: the name as spec.deployment.name, the replicas as spec.replicas. A
// value computed from a field, not copied, is not bounded by it.
func TestBoundsAreTheFooFieldEachValueCopies(t *testing.T) {
	crd, err := readCRD("../../artifacts/examples/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := crd.servedVersions(), []string{"samplecontroller.k8s.io/v1alpha1",
		"samplecontroller.k8s.io/v1beta1"}; !slices.Equal(got, want) {
		t.Errorf("served versions %v, want %v", got, want)
	}
	spec, err := crd.schema()
	if err != nil {
		t.Fatal(err)
	}
	describe := func(bounds map[string]bound) string {
		lines := make([]string, 0, len(bounds))
		for _, path := range slices.Sorted(maps.Keys(bounds)) {
			lines = append(lines, path+": "+bounds[path].field+", "+bounds[path].describe())
		}
		return strings.Join(lines, "\n")
	}
	bounds, err := followedFields(func(foo *samplev1beta1.Foo) any { return desired.DeploymentFor(foo) }, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := "metadata.name: spec.deployment.name, 1 to 253 characters long, " +
		`matching "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"` + "\n" +
		"spec.replicas: spec.replicas, at least 1 and at most 10"
	if got := describe(bounds); got != want {
		t.Errorf("bounds\n%s\nwant\n%s", got, want)
	}

	doubled := func(foo *samplev1beta1.Foo) any {
		d := desired.DeploymentFor(foo)
		d.Spec.WithReplicas(2 * *d.Spec.Replicas)
		return d
	}
	if bounds, err = followedFields(doubled, spec); err != nil {
		t.Fatal(err)
	}
	want = "metadata.name: spec.deployment.name, 1 to 253 characters long, " +
		`matching "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"`
	if got := describe(bounds); got != want {
		t.Errorf("bounds with replicas doubled\n%s\nwant\n%s", got, want)
	}
}

// A field the controller comes to set, always alike, is pinned with no
// edit of the generator: the pods' enableServiceLinks, say.
func TestANewConstantFieldIsPinned(t *testing.T) {
	crd, err := readCRD("../../artifacts/examples/crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	noServiceLinks := func(foo *samplev1beta1.Foo) any {
		d := desired.DeploymentFor(foo)
		d.Spec.Template.Spec.WithEnableServiceLinks(false)
		return d
	}
	var buf bytes.Buffer
	if err := writePolicy(&buf, "Deployment", schema.GroupResource{Group: "apps", Resource: "deployments"}, noServiceLinks,
		crd); err != nil {
		t.Fatal(err)
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{}
	if err := yaml.Unmarshal([]byte(strings.Split(strings.TrimPrefix(buf.String(), "---\n"), "\n---\n")[0]), policy); err != nil {
		t.Fatal(err)
	}
	messages := make([]string, 0, len(policy.Spec.Validations))
	for _, v := range policy.Spec.Validations {
		messages = append(messages, v.Message)
	}
	for _, want := range []string{
		"a new Deployment: spec.template.spec.enableServiceLinks must be false",
		"an update of a Deployment: spec.template.spec.enableServiceLinks may change only to false",
	} {
		if !slices.Contains(messages, want) {
			t.Errorf("no validation %q among\n%s", want, strings.Join(messages, "\n"))
		}
	}
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
