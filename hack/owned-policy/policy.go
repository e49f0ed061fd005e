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
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// A kind's policy is read off two objects the controller asks for, for two
// owners whose every field differs (the probes): the fields they set are the
// controller's; a value they share is one the controller always writes
// (pinned: an image, a container's name, a label's value); what they set
// differently follows the owner (a replica count, a name). Around the
// fields the controller sets, a new object may hold only what the API
// server writes into it (serverDefaults), and an update may change nothing
// else. A third object, for an owner that sets only what it must (the
// minimal probe), says what the controller may leave out: what the probes
// hold and it does not (a port a Foo need not ask for) may be missing, and
// is checked only where present. A value that differs between the probes
// is free but for the bounds of the owner's field it copies, if any
// (bounds.go).

// owner is the kind of the objects' controller, as their controller
// reference names it.
type owner struct {
	schema.GroupKind
	// Writer is the user the policy confines, as the API server names it.
	Writer string
	// Versions are the apiVersions the owner is served in (group/version):
	// those a controller reference may name. The garbage collector deletes
	// an object whose owner it cannot find, but only if it can resolve the
	// owner's apiVersion: an object owned by a version never served would
	// outlive every owner.
	Versions []string
}

// asked is what the controller asks for of one kind, as JSON: the objects
// of the two probes and of the minimal probe, and the bounds of the values
// it copies from its owner, by path (followedFields).
type asked struct {
	probes  [2][]byte
	minimal []byte
	bounds  map[string]bound
}

// policyFor returns the policy confining writer's writes of one kind,
// named name, whose objects the controller asks for are a.
func policyFor(name string, resource schema.GroupResource, kind string, a asked,
	o owner) (*admissionv1.ValidatingAdmissionPolicy, error) {
	var p [2]any
	for i := range a.probes {
		if err := json.Unmarshal(a.probes[i], &p[i]); err != nil {
			return nil, err
		}
	}
	var pm any
	if err := json.Unmarshal(a.minimal, &pm); err != nil {
		return nil, err
	}
	defaults, ok := serverDefaults[kind]
	if !ok {
		return nil, fmt.Errorf("no server defaults known for kind %s: add them to serverDefaults", kind)
	}
	w := &walker{kind: kind, defaults: defaults, owner: o, bounds: a.bounds}
	if err := w.level("", "variables.object", "variables.oldObject", p[0], p[1], pm); err != nil {
		return nil, err
	}
	ops := []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"app.kubernetes.io/name": o.Writer}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: ops, Rule: admissionv1.Rule{
					APIGroups: []string{resource.Group}, APIVersions: []string{"*"},
					Resources: []string{resource.Resource, resource.Resource + "/*"},
				}},
			}}},
			MatchConditions: []admissionv1.MatchCondition{{
				Name: "the-controllers-service-account",
				Expression: fmt.Sprintf("request.userInfo.username.startsWith('system:serviceaccount:') && "+
					"request.userInfo.username.endsWith(':%s')", o.Writer),
			}},
			// The objects as maps: dyn() lets a comprehension range over
			// their keys, which the type checker, knowing the kind's
			// fields, would not.
			Variables: []admissionv1.Variable{
				{Name: "object", Expression: "request.operation == 'DELETE' ? dyn({}) : dyn(object)"},
				{Name: "oldObject", Expression: "request.operation == 'CREATE' ? dyn({}) : dyn(oldObject)"},
				{Name: "controlledByOwner", Expression: w.controlledBy("variables.object")},
				{Name: "wasControlledByOwner", Expression: w.controlledBy("variables.oldObject")},
			},
		},
	}
	policy.Spec.Variables = append(policy.Spec.Variables, w.variables...)
	v := &policy.Spec.Validations
	add := func(expr, message string) {
		*v = append(*v, admissionv1.Validation{
			Expression: expr, Reason: ptr.To(metav1.StatusReasonForbidden), Message: message,
		})
	}
	add("request.namespace != 'kube-system'", fmt.Sprintf("the %s writes no %s in kube-system", o.Writer, kind))
	add("request.?subResource.orValue('') == ''",
		fmt.Sprintf("the %s writes a %s itself, none of its subresources", o.Writer, kind))
	add("request.operation != 'DELETE' || variables.wasControlledByOwner",
		fmt.Sprintf("the %s deletes only a %s a %s controls", o.Writer, kind, o.Kind))
	// An orphaning delete would leave what the object made (a Deployment's
	// ReplicaSet, and its pods) to no one: the account may write none of
	// it, and the garbage collector would no longer delete it with the
	// owner.
	add("request.operation != 'DELETE' || (request.?options.?propagationPolicy.orValue('') != 'Orphan' && "+
		"request.?options.?orphanDependents.orValue(false) != true)",
		fmt.Sprintf("the %s deletes a %s with what it owns: no orphaning delete (propagationPolicy Orphan)",
			o.Writer, kind))
	add("request.operation != 'CREATE' || variables.controlledByOwner",
		fmt.Sprintf("the %s creates only a %s a %s controls (its controller reference)", o.Writer, kind, o.Kind))
	add("request.operation != 'UPDATE' || (variables.wasControlledByOwner && variables.controlledByOwner && "+
		refs("variables.object", true)+" == "+refs("variables.oldObject", true)+" && "+
		refs("variables.object", false)+" == "+refs("variables.oldObject", false)+")",
		fmt.Sprintf("the %s updates only a %s a %s controls, and changes none of its owners", o.Writer, kind, o.Kind))
	for _, r := range w.create {
		add("request.operation != 'CREATE' || ("+r.expr+")", fmt.Sprintf("a new %s: %s", kind, r.message))
	}
	for _, r := range w.update {
		add("request.operation != 'UPDATE' || ("+r.expr+")", fmt.Sprintf("an update of a %s: %s", kind, r.message))
	}
	return policy, nil
}

// bindingFor binds policy in every namespace, refusing what it does not
// admit.
func bindingFor(policy *admissionv1.ValidatingAdmissionPolicy) *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta: metav1.TypeMeta{
			APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding",
		},
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name, Labels: policy.Labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
}

// rule is a CEL expression that must hold, and what it says if it does not.
type rule struct{ expr, message string }

// walker collects the rules of one kind, level by level of the probes.
type walker struct {
	kind     string
	defaults map[string]*allowed
	owner    owner
	bounds   map[string]bound // of the values copied from the owner, by key path (walker.key)
	// elem is the path of the list element the walker checks, if any
	// (spec.ports[]), and elemKey its key path (spec.ports[name=http]).
	elem, elemKey  string
	depth          int // of lists: each names its elements apart (e0, e1; o0, o1 before)
	create, update []rule
	variables      []admissionv1.Variable // a level's object and old object, named for a reader
	// guard, if set, is when the rules being added apply: inside a map the
	// controller may leave out, only where the object has it.
	guard string
}

// addCreate adds a rule of a create, under the walker's guard.
func (w *walker) addCreate(r rule) { w.create = append(w.create, w.guarded(r)) }

// addUpdate adds a rule of an update, under the walker's guard.
func (w *walker) addUpdate(r rule) { w.update = append(w.update, w.guarded(r)) }

func (w *walker) guarded(r rule) rule {
	if w.guard == "" {
		return r
	}
	return rule{"!(" + w.guard + ") || (" + r.expr + ")", r.message}
}

// refs is obj's owner references, the controller's UID alone (controller)
// or the others whole: the controller reference's apiVersion may move to
// a newer version of its owner's API.
func refs(obj string, controller bool) string {
	refs := "dyn(" + obj + "[?'metadata'][?'ownerReferences'].orValue([]))"
	if controller {
		return refs + ".filter(r, r[?'controller'].orValue(false) == true).map(r, r.uid)"
	}
	return refs + ".filter(r, r[?'controller'].orValue(false) != true)"
}

// serverWritten are the metadata an update changes whatever the writer
// sends: the API server writes them.
var serverWritten = []string{"resourceVersion", "generation", "managedFields"}

// controlledBy is whether obj has a controller reference to an owner.
func (w *walker) controlledBy(obj string) string {
	return fmt.Sprintf("dyn(%s[?'metadata'][?'ownerReferences'].orValue([])).exists(r, "+
		"r[?'controller'].orValue(false) == true && "+
		"r[?'kind'].orValue('') == '%s' && r[?'apiVersion'].orValue('').startsWith('%s/'))", obj, w.owner.Kind, w.owner.Group)
}

// level adds the rules of the level at path, obj and old in CEL (maps, or
// {} where absent), of which the probes hold p1 and p2, and the minimal
// probe pm (nil where it has nothing).
func (w *walker) level(path, obj, old string, p1, p2, pm any) error {
	switch v1 := p1.(type) {
	case map[string]any:
		v2, _ := p2.(map[string]any)
		vm, _ := pm.(map[string]any)
		return w.mapLevel(path, obj, old, v1, v2, vm)
	case []any:
		v2, _ := p2.([]any)
		return w.listLevel(path, obj, old, v1, v2, pm)
	default:
		// obj and old are optional here: the field may be missing.
		if equalJSON(p1, p2) {
			lit := literal(p1)
			pinned := fmt.Sprintf("(%s.hasValue() && %s.value() == %s)", obj, obj, lit)
			create, update := fmt.Sprintf("%s must be %s", display(path), lit),
				fmt.Sprintf("%s may change only to %s", display(path), lit)
			if pm == nil {
				// The controller may leave it out: set, it is the value.
				pinned = fmt.Sprintf("(!%s.hasValue() || %s.value() == %s)", obj, obj, lit)
				create, update = fmt.Sprintf("%s, if set, must be %s", display(path), lit), update+", or go"
			}
			w.addCreate(rule{pinned, create})
			// An update may leave it as it was: another manager may have
			// changed it, and a write of the controller's that is not its
			// repair (the hand-over of its fields' ownership) leaves it so.
			unchanged := fmt.Sprintf("(%s.hasValue() == %s.hasValue() && (!%s.hasValue() || %s.value() == %s.value()))",
				obj, old, obj, obj, old)
			w.addUpdate(rule{unchanged + " || " + pinned, update})
			return nil
		}
		if b, ok := w.bounds[w.key(path)]; ok {
			// A copy of the owner's field: within its bounds, or, on an
			// update, as it was (as a pinned value may stay).
			within := fmt.Sprintf("(!%s.hasValue() || (%s))", obj, b.cel(obj+".value()"))
			w.addCreate(rule{within, fmt.Sprintf("%s must be %s, as a %s's %s is", display(path), b.describe(),
				w.owner.Kind, b.field)})
			unchanged := fmt.Sprintf("(%s.hasValue() == %s.hasValue() && (!%s.hasValue() || %s.value() == %s.value()))",
				obj, old, obj, obj, old)
			w.addUpdate(rule{unchanged + " || " + within, fmt.Sprintf("%s may change only to a value %s, as a %s's %s is",
				display(path), b.describe(), w.owner.Kind, b.field)})
		}
		return nil
	}
}

// key is the key path of the level at path, as followedFields names it:
// the list element the walker checks named.
func (w *walker) key(path string) string {
	if w.elem == "" {
		return path
	}
	return w.elemKey + strings.TrimPrefix(path, w.elem)
}

// metadataPath is the path of an object's metadata.
const metadataPath = "metadata"

// ownerReferencesPath is the path of an object's owner references, which
// ownerReferences checks.
const ownerReferencesPath = "metadata.ownerReferences"

// mapLevel adds the rules of a map. vm is the minimal probe's, nil if it
// has none.
func (w *walker) mapLevel(path, obj, old string, v1, v2, vm map[string]any) error {
	if w.depth == 0 && path != "" {
		// Outside lists, each level is a variable, which its children read.
		name := variableName(path)
		w.variables = append(w.variables,
			admissionv1.Variable{Name: name, Expression: obj},
			admissionv1.Variable{Name: "old" + strings.ToUpper(name[:1]) + name[1:], Expression: old})
		obj, old = "variables."+name, "variables.old"+strings.ToUpper(name[:1])+name[1:]
	}
	owned := slices.Sorted(maps.Keys(v1))
	allowed, ok := w.defaults[path]
	if !ok {
		return fmt.Errorf("%s: no server defaults known for %s: add them to serverDefaults", w.kind, display(path))
	}
	w.addCreate(rule{
		fmt.Sprintf("%s.all(k, k in %s%s)", obj, literal(owned), allowed.cel("k", obj)),
		fmt.Sprintf("%s may hold %s alone%s", display(path), strings.Join(owned, ", "), allowed.describe()),
	})
	kept := owned
	if path == metadataPath {
		kept = slices.Concat(owned, serverWritten)
	}
	w.addUpdate(rule{
		fmt.Sprintf("%s.all(k, k in %s || (k in %s && %s[k] == %s[k])) && %s.all(k, k in %s || k in %s)",
			obj, literal(kept), old, obj, old, old, literal(kept), obj),
		fmt.Sprintf("at %s only %s may change", display(path), strings.Join(owned, ", ")),
	})
	for _, k := range owned {
		child := join(path, k)
		if child == ownerReferencesPath {
			if err := w.ownerReferences(fmt.Sprintf("dyn(%s[?%s].orValue([]))", obj, literal(k)), v1[k], v2[k]); err != nil {
				return err
			}
			continue
		}
		// A map or list as a dyn, {} or [] where missing; a scalar as an
		// optional.
		childObj, childOld := fmt.Sprintf("%s[?%s]", obj, literal(k)), fmt.Sprintf("%s[?%s]", old, literal(k))
		switch v1[k].(type) {
		case map[string]any:
			childObj, childOld = "dyn("+childObj+".orValue({}))", "dyn("+childOld+".orValue({}))"
		case []any:
			childObj, childOld = "dyn("+childObj+".orValue([]))", "dyn("+childOld+".orValue([]))"
		}
		childMinimal, inMinimal := vm[k]
		guard := w.guard
		if _, isMap := v1[k].(map[string]any); isMap && !inMinimal {
			// A map the controller may leave out: where present, it holds
			// what the probes' does, and its rules apply there alone.
			childMinimal = v1[k]
			w.guard = fmt.Sprintf("%s[?%s].hasValue()", obj, literal(k))
			if guard != "" {
				w.guard = guard + " && " + w.guard
			}
		}
		err := w.level(child, childObj, childOld, v1[k], v2[k], childMinimal)
		w.guard = guard
		if err != nil {
			return err
		}
	}
	return nil
}

// ownerReferences adds the rule of a new object's owner references, refs
// in CEL, of which the probes hold r1 and r2: the controller reference
// alone, with the keys the controller sets, the values the probes share,
// and an apiVersion the owner is served in. Another reference, to an
// object of someone else's with blockOwnerDeletion, would hold that
// object's deletion up; any other would keep the object alive once its
// owner is gone, and the garbage collector would no longer delete it. An
// update may change none of them (policyFor).
func (w *walker) ownerReferences(refs string, r1, r2 any) error {
	l1, _ := r1.([]any)
	l2, _ := r2.([]any)
	if len(l1) != 1 || len(l2) != 1 {
		return fmt.Errorf("%s: the controller sets %d owner references; the policy knows its controller reference alone",
			w.kind, len(l1))
	}
	e1, _ := l1[0].(map[string]any)
	e2, _ := l2[0].(map[string]any)
	keys := slices.Sorted(maps.Keys(e1))
	conds := []string{fmt.Sprintf("r.all(k, k in %s)", literal(keys))}
	var said []string
	for _, k := range keys {
		switch {
		case k == "apiVersion" && len(w.owner.Versions) > 0:
			conds = append(conds, fmt.Sprintf("r[?'apiVersion'].orValue('') in %s", literal(w.owner.Versions)))
			said = append(said, "apiVersion one of "+literal(w.owner.Versions))
		case equalJSON(e1[k], e2[k]):
			conds = append(conds, fmt.Sprintf("(r[?%s].hasValue() && r[?%s].value() == %s)", literal(k), literal(k),
				literal(e1[k])))
			said = append(said, k+" "+literal(e1[k]))
		default:
			said = append(said, k)
		}
	}
	w.addCreate(rule{
		fmt.Sprintf("size(%s) == 1 && %s.all(r, %s)", refs, refs, strings.Join(conds, " && ")),
		fmt.Sprintf("%s must be its controller reference alone: %s", ownerReferencesPath, strings.Join(said, ", ")),
	})
	return nil
}

// listLevel adds the rules of a list. The elements of a list of objects
// named alike in both probes (containers, ports) are matched by name, as
// server-side apply merges them: each is checked as a level of its own,
// against the element of that name before an update; an element of
// another name, another manager's, may only stay as it was. Any other list
// the controller sets, it sets whole (a scalar list) or the reference rules
// cover (owner references). An element, or a whole list, the minimal
// probe pm lacks may be missing.
func (w *walker) listLevel(path, obj, old string, v1, v2 []any, pm any) error {
	e, o := fmt.Sprint("e", w.depth), fmt.Sprint("o", w.depth)
	names, named := elementNames(v1, v2)
	if !named {
		if equalJSON(v1, v2) {
			lit := literal(v1)
			create, update := obj+" == "+lit, obj+" == "+lit
			createMessage, updateMessage := fmt.Sprintf("%s must be %s", display(path), lit),
				fmt.Sprintf("%s must stay %s", display(path), lit)
			if pm == nil {
				create, update = fmt.Sprintf("size(%s) == 0 || %s", obj, create), fmt.Sprintf("size(%s) == 0 || %s", obj, update)
				createMessage, updateMessage = fmt.Sprintf("%s, if set, must be %s", display(path), lit), updateMessage+", or go"
			}
			w.addCreate(rule{create, createMessage})
			w.addUpdate(rule{update, updateMessage})
		}
		return nil
	}
	// The elements the minimal probe has, by name: the others may be missing.
	minimal := map[string]any{}
	if vm, ok := pm.([]any); ok {
		for _, m := range vm {
			if element, ok := m.(map[string]any); ok {
				if name, ok := element["name"].(string); ok {
					minimal[name] = element
				}
			}
		}
	}
	var required []string
	for _, name := range names {
		if _, ok := minimal[name]; ok {
			required = append(required, name)
		}
	}
	if len(required) == len(names) {
		w.addCreate(rule{
			fmt.Sprintf("size(%s) == %d && %s.all(%s, %s[?'name'].orValue('') in %s)",
				obj, len(names), obj, e, e, literal(names)),
			fmt.Sprintf("%s must be %s alone", display(path), strings.Join(names, ", ")),
		})
	} else {
		expr := fmt.Sprintf("size(%s) <= %d && %s.all(%s, %s[?'name'].orValue('') in %s)",
			obj, len(names), obj, e, e, literal(names))
		message := fmt.Sprintf("%s may hold %s alone", display(path), strings.Join(names, ", "))
		for _, name := range required {
			expr += fmt.Sprintf(" && %s.exists(%s, %s[?'name'].orValue('') == %s)", obj, e, e, literal(name))
		}
		if len(required) > 0 {
			message += fmt.Sprintf(", and must hold %s", strings.Join(required, ", "))
		}
		w.addCreate(rule{expr, message})
	}
	w.addUpdate(rule{
		fmt.Sprintf("%s.all(%s, %s[?'name'].orValue('') in %s || %s.exists(%s, %s == %s))",
			obj, e, e, literal(names), old, o, o, e),
		fmt.Sprintf("%s may add no element but %s", display(path), strings.Join(names, ", ")),
	})
	// Nor remove one, but those the controller may leave out (which its
	// apply removes once the owner no longer asks for them): an element of
	// another name is another manager's, kept as it was.
	keep := fmt.Sprintf("each element named other than %s as it was", strings.Join(names, ", "))
	if len(required) > 0 {
		keep = strings.Join(required, ", ") + ", and " + keep
	}
	w.addUpdate(rule{
		fmt.Sprintf("%s.all(%s, %s[?'name'].orValue('') in %s ? "+
			"%s.exists(%s, %s[?'name'].orValue('') == %s[?'name'].orValue('')) : "+
			"%s[?'name'].orValue('') in %s || %s.exists(%s, %s == %s))",
			old, o, o, literal(required), obj, e, e, o, o, literal(names), obj, e, e, o),
		fmt.Sprintf("%s must keep %s", display(path), keep),
	})
	for i, name := range names {
		// Each element's rules, on e in the new list and on its namesake
		// before the update, or {} if it is new.
		elem := path + "[]"
		sub := &walker{kind: w.kind, defaults: w.defaults, owner: w.owner, bounds: w.bounds, depth: w.depth + 1,
			elem: elem, elemKey: fmt.Sprintf("%s[name=%s]", w.key(path), name)}
		// An element the controller may leave out holds, where present,
		// what the probes' does.
		elementMinimal, ok := minimal[name]
		if !ok {
			elementMinimal = v1[i]
		}
		if err := sub.level(elem, e, o, v1[i], v2[i], elementMinimal); err != nil {
			return err
		}
		at := fmt.Sprintf("%s[name=%s]", display(path), name)
		for _, r := range sub.create {
			w.addCreate(rule{
				fmt.Sprintf("%s.all(%s, %s[?'name'].orValue('') != %s || %s)", obj, e, e, literal(name), r.expr),
				strings.Replace(r.message, display(elem), at, 1),
			})
		}
		// A new element is checked as on a create.
		newElement := andAll(sub.create)
		for _, r := range sub.update {
			w.addUpdate(rule{
				fmt.Sprintf("%s.all(%s, %s[?'name'].orValue('') != %s || (%s.exists(%s, %s[?'name'].orValue('') == %s) ? "+
					"%s.filter(%s, %s[?'name'].orValue('') == %s).all(%s, %s) : %s))",
					obj, e, e, literal(name), old, o, o, literal(name), old, o, o, literal(name), o, r.expr, newElement),
				strings.Replace(r.message, display(elem), at, 1),
			})
		}
	}
	return nil
}

// elementNames returns the names of the elements of a list of objects that
// carry the same names in both probes, in order.
func elementNames(v1, v2 []any) ([]string, bool) {
	if len(v1) == 0 || len(v1) != len(v2) {
		return nil, false
	}
	names := make([]string, len(v1))
	for i := range v1 {
		e1, ok1 := v1[i].(map[string]any)
		e2, ok2 := v2[i].(map[string]any)
		if !ok1 || !ok2 {
			return nil, false
		}
		n1, ok1 := e1["name"].(string)
		n2, ok2 := e2["name"].(string)
		if !ok1 || !ok2 || n1 != n2 {
			return nil, false
		}
		names[i] = n1
	}
	return names, true
}

func andAll(rules []rule) string {
	if len(rules) == 0 {
		return "true"
	}
	exprs := make([]string, len(rules))
	for i, r := range rules {
		exprs[i] = "(" + r.expr + ")"
	}
	return strings.Join(exprs, " && ")
}

// variableName names the level at path: spec.template.spec is
// specTemplateSpec.
func variableName(path string) string {
	var b strings.Builder
	upper := false
	for _, r := range path {
		switch {
		case r == '.' || r == '[' || r == ']':
			upper = true
		case upper && b.Len() > 0:
			b.WriteString(strings.ToUpper(string(r)))
			upper = false
		default:
			b.WriteRune(r)
			upper = false
		}
	}
	return b.String()
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func display(path string) string {
	if path == "" {
		return "the object"
	}
	return path
}

func equalJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// literal writes v, a JSON value, as a CEL literal.
func literal(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if !strings.ContainsAny(v, `'\`) && strconv.CanBackquote(v) {
			return "'" + v + "'"
		}
		s, _ := json.Marshal(v) // a JSON string is a CEL string literal, escapes and all
		return string(s)
	case bool:
		return fmt.Sprint(v)
	case float64:
		if v == float64(int64(v)) {
			return fmt.Sprint(int64(v))
		}
		return fmt.Sprint(v)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = literal(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = literal(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = literal(k) + ": " + literal(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprintf("%v", v)
}
