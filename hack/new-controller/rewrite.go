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
	"regexp"
	"slices"
	"sort"
	"strings"
)

// A rule replaces one spelling of a template name. At each position the
// rewriter tries the longest spelling first (samplecontroller.k8s.io
// before samplecontroller), and a rule takes a match only when the bytes
// around it say it is a whole word of that form: replace gets the byte
// before the match and the byte after (0 at either end of the text) and
// returns the replacement, or false to leave the match alone.
type rule struct {
	old     string
	replace func(prev, next byte) (string, bool)
}

func isLower(b byte) bool  { return 'a' <= b && b <= 'z' }
func isUpper(b byte) bool  { return 'A' <= b && b <= 'Z' }
func isDigit(b byte) bool  { return '0' <= b && b <= '9' }
func isLetter(b byte) bool { return isLower(b) || isUpper(b) }
func isAlnum(b byte) bool  { return isLetter(b) || isDigit(b) }

// always replaces a spelling distinctive enough to need no boundary.
func always(s string) func(prev, next byte) (string, bool) {
	return func(byte, byte) (string, bool) { return s, true }
}

// word replaces a spelling with neither a letter nor a digit on either side
// (sample-controller in sample-controller-leader-election, not in
// xsample-controller).
func word(s string) func(prev, next byte) (string, bool) {
	return func(prev, next byte) (string, bool) { return s, !isAlnum(prev) && !isAlnum(next) }
}

// camel replaces an UpperCamelCase word that may sit inside an identifier
// (enqueueFoo, FooList) but not before a lower-case letter (Food).
func camel(s string) func(prev, next byte) (string, bool) {
	return func(_, next byte) (string, bool) { return s, !isLower(next) && !isDigit(next) }
}

// rewriter rewrites every name of the template in a text, in one pass:
// what it wrote is never read again, so a new name that contains an old
// one (kind FooBar) is safe.
type rewriter struct {
	byFirst map[byte][]rule // longest first
}

func newRewriter(rules []rule) *rewriter {
	r := &rewriter{byFirst: map[byte][]rule{}}
	for _, ru := range rules {
		r.byFirst[ru.old[0]] = append(r.byFirst[ru.old[0]], ru)
	}
	for _, rs := range r.byFirst {
		sort.SliceStable(rs, func(i, j int) bool { return len(rs[i].old) > len(rs[j].old) })
	}
	return r
}

func (r *rewriter) rewrite(text string) string {
	var b strings.Builder
	last := 0 // text[last:i] is still to be copied
	for i := 0; i < len(text); {
		matched := false
		for _, ru := range r.byFirst[text[i]] {
			if !strings.HasPrefix(text[i:], ru.old) {
				continue
			}
			var prev, next byte
			if i > 0 {
				prev = text[i-1]
			}
			if end := i + len(ru.old); end < len(text) {
				next = text[end]
			}
			repl, ok := ru.replace(prev, next)
			if !ok {
				continue
			}
			b.WriteString(text[last:i])
			b.WriteString(repl)
			i += len(ru.old)
			last = i
			matched = true
			break
		}
		if !matched {
			i++
		}
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// kindRules rewrite the kind's word forms: Foos, Foo (and so FooList,
// enqueueFoo), foos and foo as words or at the start of an identifier
// (fooInformer, foosLister: there in lowerCamelCase, elsewhere the
// resource's lower-case singular and plural), FOOS and FOO (SOAK_FOOS), and
// the short name, only where a short name stands (shortName=fo, - fo,
// kubectl get fo).
func kindRules(n names) []rule {
	lowerStart := func(camelForm, lowerForm string) func(prev, next byte) (string, bool) {
		return func(prev, next byte) (string, bool) {
			switch {
			case isLetter(prev) || isLower(next):
				return "", false
			case isUpper(next):
				return camelForm, true
			}
			return lowerForm, true
		}
	}
	upper := func(s string) func(prev, next byte) (string, bool) {
		return func(prev, next byte) (string, bool) { return s, !isUpper(prev) && !isLetter(next) }
	}
	shortNameStands := func(prev, next byte) (string, bool) {
		return n.ShortName, strings.IndexByte(" \t\n=[(\"'`,", prev) >= 0 && strings.IndexByte(" \t\n,])\"'`", next) >= 0
	}
	lowerOld := strings.ToLower(oldKind)
	return []rule{
		{oldKindPlural, camel(n.KindPlural)},
		{oldKind, camel(n.Kind)},
		{strings.ToLower(oldKindPlural), lowerStart(lowerFirst(n.KindPlural), n.Plural)},
		{lowerOld, lowerStart(lowerFirst(n.Kind), n.Singular)},
		{strings.ToUpper(oldKindPlural), upper(strings.ToUpper(n.Plural))},
		{strings.ToUpper(oldKind), upper(strings.ToUpper(n.Singular))},
		{oldShortName, shortNameStands},
	}
}

// oldGroupPackage is the template's API package and its group's first
// label; oldGroupGoName is code-generator's name for the group.
var (
	oldGroupPackage = strings.Split(oldGroup, ".")[0]
	oldGroupGoName  = upperFirst(oldGroupPackage)
	oldNamePascal   = pascal(oldName)
)

// groupRules rewrite the module path, the API group and its Go package, the
// controller's name and the metric prefix.
func groupRules(oldModule string, n names) []rule {
	domain := func(s string) func(prev, next byte) (string, bool) {
		return func(prev, next byte) (string, bool) {
			return s, !isAlnum(prev) && prev != '-' && !isAlnum(next) && next != '-'
		}
	}
	const keepCopyright = "Copyright The Sample Controller Authors"
	rules := make([]rule, 0, 32)
	rules = append(rules, []rule{
		// The copy derives from this work: its notices stay (Apache-2.0, 4(c)).
		{keepCopyright, always(keepCopyright)},
		{oldModule, func(_, next byte) (string, bool) { return n.Module, !isAlnum(next) && next != '-' && next != '_' }},
		{oldGroup, domain(n.Group)},
		{reverseDomain(oldGroup), domain(reverseDomain(n.Group))},
	}...)
	// Each version keeps its name; the names made of the group and a
	// version take the copy's group.
	for _, v := range oldVersions {
		rules = append(rules,
			rule{oldGroupPackage + v, word(n.GroupPackage + v)},
			rule{oldGroupGoName + upperFirst(v), camel(n.GroupGoName + upperFirst(v))})
	}
	rules = append(rules, []rule{
		{oldGroupGoName, camel(n.GroupGoName)},
		{oldMetricPrefix + "_", func(prev, _ byte) (string, bool) {
			return n.MetricPrefix + "_", !isAlnum(prev) && prev != '_'
		}},
		// A metric prefix written alone is a string: the subsystem.
		{`"` + oldMetricPrefix + `"`, always(`"` + n.MetricPrefix + `"`)},
		{oldGroupPackage, word(n.GroupPackage)},
		{oldName, word(n.Name)},
		{snake(oldName), word(snake(n.Name))},
		{strings.ToUpper(snake(oldName)), word(strings.ToUpper(snake(n.Name)))},
		{oldNamePascal, camel(pascal(n.Name))},
		{title(oldName), word(title(n.Name))},
	}...)
	// The template's own aliases and variables for its API's clients
	// (samplev1beta1, samplescheme, sampleClient, ...) take the group's
	// package name.
	sample := strings.Split(oldName, "-")[0]
	suffixes := append(slices.Clone(oldVersions), "scheme", "clientset", "Client", "InformerFactory", "Factory")
	for _, suffix := range suffixes {
		rules = append(rules, rule{sample + suffix, word(n.GroupPackage + suffix)})
	}
	return rules
}

// pascalNames finds the identifiers that start with the controller's name
// in UpperCamelCase (the alerts, SampleControllerDown).
var pascalNames = regexp.MustCompile(oldNamePascal + `[A-Za-z0-9]*`)

// anchorRules rewrite the lower-case forms of those identifiers, which
// Markdown makes of headings (#samplecontrollerdown): the rewriter cannot
// tell where the words of samplecontrollerfoosnotready start, so each is
// derived from its UpperCamelCase source.
func anchorRules(base *rewriter, texts []string) []rule {
	seen := map[string]bool{}
	var rules []rule
	for _, text := range texts {
		for _, id := range pascalNames.FindAllString(text, -1) {
			old := strings.ToLower(id)
			if seen[old] || old == oldGroupPackage {
				continue
			}
			seen[old] = true
			rules = append(rules, rule{old, word(strings.ToLower(base.rewrite(id)))})
		}
	}
	return rules
}

// newNameRewriter is the rewriter of every template name, for texts (all of
// the copy's files, to find the alerts' anchors).
func newNameRewriter(oldModule string, n names, texts []string) *rewriter {
	rules := append(groupRules(oldModule, n), kindRules(n)...)
	base := newRewriter(rules)
	return newRewriter(append(rules, anchorRules(base, texts)...))
}
