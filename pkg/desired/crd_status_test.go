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

package desired_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/foocache"
)

// A Foo's status is bounded by the CRD (samplecontroller.MaxConditions,
// MaxConditionMessageLength, MaxSelectorLength): whoever may write
// foos/status, a stolen controller token among them, could otherwise give
// every Foo 1.3 MB of status, which every replica's cache holds. These tests
// read the bounds from the generated CRD, evaluate its CEL rules with cel-go
// (as the API server does, size() counting characters), and hold them to the
// Go constants, to what an attacker writes, and to what the controller
// writes. The end-to-end proof on a real API server is
// TestBloatedStatusIsRefusedAtAdmission (test/e2e).

// statusSchema is what the CRD says of a Foo's status, as far as its
// bounds go (apicheck.Schema, which the controller reads, has no need of
// them).
type statusSchema struct {
	Properties struct {
		Conditions struct {
			MaxItems *int `json:"maxItems"`
			Items    struct {
				Properties struct {
					Message struct {
						MaxLength *int `json:"maxLength"`
					} `json:"message"`
				} `json:"properties"`
				Rules []struct {
					Rule      string `json:"rule"`
					Message   string `json:"message"`
					FieldPath string `json:"fieldPath"`
				} `json:"x-kubernetes-validations"`
			} `json:"items"`
		} `json:"conditions"`
		Selector struct {
			MaxLength *int `json:"maxLength"`
		} `json:"selector"`
	} `json:"properties"`
}

// statusSchemas reads the status schema of every version the CRD serves, by
// version name.
func statusSchemas(t *testing.T) map[string]statusSchema {
	t.Helper()
	data, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema struct {
						Properties struct {
							Status statusSchema `json:"status"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]statusSchema{}
	for _, v := range crd.Spec.Versions {
		schemas[v.Name] = v.Schema.OpenAPIV3Schema.Properties.Status
	}
	return schemas
}

// refusal says why the API server would refuse status under the schema's
// bounds (the first reason of those it finds), or "" when it admits it: maxItems of the conditions, maxLength of
// a message (metav1.Condition's own) and of the selector, and each rule on a
// condition, evaluated by CEL on the condition as JSON.
func (s statusSchema) refusal(t *testing.T, status samplev1beta1.FooStatus) string {
	t.Helper()
	conditions := s.Properties.Conditions
	var refusals []string
	if conditions.MaxItems != nil && len(status.Conditions) > *conditions.MaxItems {
		refusals = append(refusals, fmt.Sprintf("status.conditions: Too many: %d", len(status.Conditions)))
	}
	if bound := s.Properties.Selector.MaxLength; bound != nil && utf8.RuneCountInString(status.Selector) > *bound {
		refusals = append(refusals, "status.selector: Too long")
	}
	env, err := cel.NewEnv(cel.Variable("self", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range status.Conditions {
		if bound := conditions.Items.Properties.Message.MaxLength; bound != nil && utf8.RuneCountInString(c.Message) > *bound {
			refusals = append(refusals, fmt.Sprintf("status.conditions[%d].message: Too long", i))
		}
		self, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range conditions.Items.Rules {
			ast, issues := env.Compile(r.Rule)
			if issues.Err() != nil {
				t.Fatalf("rule %q: %v", r.Rule, issues.Err())
			}
			program, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := program.Eval(map[string]interface{}{"self": self})
			if err != nil {
				t.Fatalf("rule %q: %v", r.Rule, err)
			}
			if out.Value() != true {
				refusals = append(refusals, fmt.Sprintf("status.conditions[%d]%s: %s", i, r.FieldPath, r.Message))
			}
		}
	}
	if len(refusals) == 0 {
		return ""
	}
	return refusals[0]
}

// conditions returns n conditions of other controllers, each with a message
// of the given number of characters.
func conditions(n, messageLength int) []metav1.Condition {
	out := make([]metav1.Condition, n)
	for i := range out {
		out[i] = metav1.Condition{Type: fmt.Sprintf("example.com/Other%d", i), Status: metav1.ConditionTrue,
			Reason: "Other", Message: strings.Repeat("x", messageLength)}
	}
	return out
}

// The bounds in the markers of FooStatus are literals, in every version the
// CRD serves: they must be the constants the controller and its cache cut
// to.
func TestCRDStatusBoundsAreTheGoConstants(t *testing.T) {
	schemas := statusSchemas(t)
	if len(schemas) == 0 {
		t.Fatalf("%s: no versions", crdPath)
	}
	for version, s := range schemas {
		conditions := s.Properties.Conditions
		if got := conditions.MaxItems; got == nil || *got != samplecontroller.MaxConditions {
			t.Errorf("%s: status.conditions maxItems %v, want MaxConditions %d", version, got, samplecontroller.MaxConditions)
		}
		if got := s.Properties.Selector.MaxLength; got == nil || *got != samplecontroller.MaxSelectorLength {
			t.Errorf("%s: status.selector maxLength %v, want MaxSelectorLength %d", version, got, samplecontroller.MaxSelectorLength)
		}
		status := func(message string) samplev1beta1.FooStatus {
			return samplev1beta1.FooStatus{Conditions: []metav1.Condition{{Type: samplecontroller.ConditionReady, Message: message}}}
		}
		// Characters, not bytes: "é" is two bytes, one character.
		if got := s.refusal(t, status(strings.Repeat("é", samplecontroller.MaxConditionMessageLength))); got != "" {
			t.Errorf("%s: a message of MaxConditionMessageLength characters refused: %s", version, got)
		}
		want := "status.conditions[0].message: must be at most 1024 characters: a Foo's status is kept small"
		if got := s.refusal(t, status(strings.Repeat("x", samplecontroller.MaxConditionMessageLength+1))); got != want {
			t.Errorf("%s: a message of MaxConditionMessageLength+1 characters: refusal %q, want %q", version, got, want)
		}
	}
}

// What a stolen token would write is refused; what the controller writes,
// at its longest, is admitted: its Ready condition quoting the longest error
// the API server may give, beside every other condition the cache keeps of a
// Foo whose status was bloated before the CRD had its bounds, for a Foo of
// the longest name.
func TestCRDRefusesBloatedStatusAndAdmitsTheControllers(t *testing.T) {
	longest := strings.Repeat("a", 253) // a Foo's and a Deployment's name, at most
	foo := &samplev1beta1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: longest, Namespace: metav1.NamespaceDefault, Generation: 1},
		Spec:       samplev1beta1.FooSpec{Deployment: samplev1beta1.FooDeployment{Name: longest}},
		Status:     samplev1beta1.FooStatus{Conditions: conditions(40, 32768), Selector: strings.Repeat("s", 1<<20)},
	}
	trimmed, err := foocache.Transform(foo.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	refusedWrite := desired.RefusedProblem("create", "Deployment", longest, errors.New(strings.Repeat("denied ", 200000)))
	controllers := desired.StatusFor(trimmed.(*samplev1beta1.Foo), nil, desired.NotReady(refusedWrite.Reason, refusedWrite.Message))

	for version, s := range statusSchemas(t) {
		for _, tc := range []struct {
			name   string
			status samplev1beta1.FooStatus
			want   string
		}{
			{"40 conditions of 32 KiB (1.3 MB)", samplev1beta1.FooStatus{Conditions: conditions(40, 32768)},
				"status.conditions: Too many: 40"},
			{"one condition of 32 KiB, metav1.Condition's own bound", samplev1beta1.FooStatus{Conditions: conditions(1, 32768)},
				"status.conditions[0].message: must be at most 1024 characters: a Foo's status is kept small"},
			{"a selector of 1 MiB", samplev1beta1.FooStatus{Selector: strings.Repeat("s", 1<<20)},
				"status.selector: Too long"},
			{"MaxConditions conditions of MaxConditionMessageLength characters", samplev1beta1.FooStatus{Conditions: conditions(8, 1024)},
				""},
			{"the controller's, from the cache of a bloated Foo, Ready quoting a 1.4 MB error", controllers, ""},
		} {
			if got := s.refusal(t, tc.status); got != tc.want {
				t.Errorf("%s: %s: refusal %q, want %q", version, tc.name, got, tc.want)
			}
		}
	}
	// The controller's status is at the bounds, not under them by chance.
	if got := len(controllers.Conditions); got != samplecontroller.MaxConditions {
		t.Errorf("the controller's status has %d conditions, want MaxConditions %d", got, samplecontroller.MaxConditions)
	}
	for _, c := range controllers.Conditions {
		if got := utf8.RuneCountInString(c.Message); got != samplecontroller.MaxConditionMessageLength {
			t.Errorf("condition %s: message of %d characters, want MaxConditionMessageLength %d", c.Type, got, samplecontroller.MaxConditionMessageLength)
		}
	}
}
