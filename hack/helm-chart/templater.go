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

// A template is the manifest's YAML with Go template text in a few places.
// Template text is not YAML ({{- if }} around a list item, a block that
// toYaml indents), so the templater marks each place in the parsed object
// with a token, encodes the object as YAML, and then puts the text in for
// the token: within the line, or in place of the whole line, at that
// line's indentation.

import (
	"bytes"
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

type templater struct{ subs []substitution }

type substitution struct {
	token string
	// text replaces the token within its line; line, when set, replaces the
	// whole line, given what comes before the token's key in it: its
	// indentation, and "- " too where the key starts a list item (item is
	// false). An item token (item) is given the indentation of its "- ".
	text string
	line func(prefix string) string
	item bool
}

func (t *templater) mark(s substitution) string {
	s.token = fmt.Sprintf("__chart_%d__", len(t.subs))
	t.subs = append(t.subs, s)
	return s.token
}

func tokenNode(token string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: token}
}

func nullNode() *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"} }

// inline puts text in place of a scalar's value.
func (t *templater) inline(node *yaml.Node, text string) {
	*node = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t.mark(substitution{text: text}),
		LineComment: node.LineComment}
}

// block puts the line f returns in place of the line of a map's key whose
// value node is: the value replaced whole (a toYaml of values).
func (t *templater) block(node *yaml.Node, f func(prefix string) string) {
	*node = *tokenNode(t.mark(substitution{line: f}))
}

// wrapKey puts the lines before and after a key of a map and its value.
func (t *templater) wrapKey(mapping *yaml.Node, key, before, after string) {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		if mapping.Content[i].Value != key {
			continue
		}
		open := []*yaml.Node{tokenNode(t.mark(substitution{line: fixed(before)})), nullNode()}
		closing := []*yaml.Node{tokenNode(t.mark(substitution{line: fixed(after)})), nullNode()}
		content := append([]*yaml.Node{}, mapping.Content[:i]...)
		content = append(content, open...)
		content = append(content, mapping.Content[i], mapping.Content[i+1])
		content = append(content, closing...)
		mapping.Content = append(content, mapping.Content[i+2:]...)
		return
	}
}

// wrapItem puts the lines before and after item i of a list.
func (t *templater) wrapItem(seq *yaml.Node, i int, before, after string) {
	content := append([]*yaml.Node{}, seq.Content[:i]...)
	content = append(content, tokenNode(t.mark(substitution{line: fixed(before), item: true})), seq.Content[i],
		tokenNode(t.mark(substitution{line: fixed(after), item: true})))
	seq.Content = append(content, seq.Content[i+1:]...)
}

// appendItem puts the lines f returns after the last item of a list.
func (t *templater) appendItem(seq *yaml.Node, f func(prefix string) string) {
	seq.Content = append(seq.Content, tokenNode(t.mark(substitution{line: f, item: true})))
}

// appendKey puts the lines f returns after the last key of a map.
func (t *templater) appendKey(mapping *yaml.Node, f func(prefix string) string) {
	mapping.Content = append(mapping.Content, tokenNode(t.mark(substitution{line: f})), nullNode())
}

var braces = strings.NewReplacer("{{", `{{ "{{" }}`, "}}", `{{ "}}" }}`)

func fixed(text string) func(string) string { return func(string) string { return text } }

// encode is the YAML of a node, indented as the manifests are.
func encode(node *yaml.Node) (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(node); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	// Braces the manifests hold (a PrometheusRule's {{ $value }}) are
	// Prometheus' or Grafana's, not Helm's: Helm prints them as they are.
	return braces.Replace(b.String()), nil
}

// render encodes the object and puts each token's text in.
func (t *templater) render(root *yaml.Node) ([]byte, error) {
	encoded, err := encode(root)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(encoded, "\n"), "\n")
	var out strings.Builder
	for _, line := range lines {
		for _, s := range t.subs {
			if !strings.Contains(line, s.token) {
				continue
			}
			if s.line != nil {
				// What comes before the token, less the key whose value it is.
				prefix := line[:strings.Index(line, s.token)]
				if key, ok := strings.CutSuffix(prefix, ": "); ok {
					prefix = key[:strings.LastIndex(key, " ")+1]
				}
				if s.item {
					prefix = strings.TrimSuffix(prefix, "- ")
				}
				line = s.line(prefix)
				break
			}
			line = strings.ReplaceAll(line, s.token, s.text)
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	for _, s := range t.subs {
		if n := strings.Count(encoded, s.token); n != 1 {
			return nil, fmt.Errorf("token %s for %q appears %d times in the encoded object", s.token, s.text, n)
		}
	}
	return []byte(out.String()), nil
}

// child is the value of a key of a map, nil if there is none.
func child(node *yaml.Node, key string) *yaml.Node {
	if node == nil || node.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i+1]
		}
	}
	return nil
}

func childContent(node *yaml.Node, key string) []*yaml.Node {
	if c := child(node, key); c != nil {
		return c.Content
	}
	return nil
}

// scalar is the value at a path of keys, "" if there is none.
func scalar(node *yaml.Node, path ...string) string {
	for _, key := range path {
		node = child(node, key)
	}
	if node == nil || node.Kind != yaml.ScalarNode {
		return ""
	}
	return node.Value
}

// setKey sets a key of a map, added last if it is not there.
func setKey(mapping *yaml.Node, key string, value *yaml.Node) {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		if mapping.Content[i].Value == key {
			mapping.Content[i+1] = value
			return
		}
	}
	mapping.Content = append(mapping.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, value)
}
