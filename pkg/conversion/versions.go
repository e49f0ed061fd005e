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

// Package conversion converts Foos between the versions of the API the CRD
// serves, as pure functions of their JSON. The API server asks for a
// conversion whenever a client reads or writes a Foo in a version other than
// the one etcd holds it in, through the controller's conversion webhook
// (pkg/conversionwebhook), which calls Convert.
//
// The versions are converted hub and spoke, as Kubernetes converts its own
// types through an internal version: v1beta1, the storage version and the
// one the controller works with, is the hub; every other version converts to
// and from it only. Adding a version is one entry in versions and its two
// functions, never a function per pair of versions.
package conversion

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/json"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// Hub is the version every other converts through.
type Hub = v1beta1.Foo

// version is how one served version of Foo converts to and from the hub.
// Both directions read and write JSON, which is what the webhook receives
// and returns.
type version struct {
	toHub   func(data []byte) (*Hub, error)
	fromHub func(hub *Hub) any
}

// versions are the served versions by apiVersion (group/version).
var versions = map[string]version{
	v1beta1.SchemeGroupVersion.String(): {
		toHub:   decode[v1beta1.Foo],
		fromHub: func(hub *Hub) any { return hub },
	},
	v1alpha1.SchemeGroupVersion.String(): {
		toHub: func(data []byte) (*Hub, error) {
			in, err := decode[v1alpha1.Foo](data)
			if err != nil {
				return nil, err
			}
			return V1alpha1ToHub(in), nil
		},
		fromHub: func(hub *Hub) any { return HubToV1alpha1(hub) },
	},
}

// Serves reports whether apiVersion (group/version) is a served version of
// Foo: one that Convert converts from and to.
func Serves(apiVersion string) bool {
	_, ok := versions[apiVersion]
	return ok
}

// decode reads one object of a version.
func decode[T any](data []byte) (*T, error) {
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Convert returns the Foo in data (JSON, of any served version) as the
// apiVersion to, in JSON. An object already in that version is returned as
// it is: the API server asks for conversions only between versions, but a
// list can hold Foos stored in both.
func Convert(data []byte, to string) ([]byte, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("reading apiVersion and kind: %w", err)
	}
	from, ok := versions[meta.APIVersion]
	if !ok {
		return nil, fmt.Errorf("cannot convert from %s: not a served version of Foo", quote(meta.APIVersion))
	}
	into, ok := versions[to]
	if !ok {
		return nil, fmt.Errorf("cannot convert to %s: not a served version of Foo", quote(to))
	}
	if meta.APIVersion == to {
		return data, nil
	}
	hub, err := from.toHub(data)
	if err != nil {
		return nil, fmt.Errorf("decoding a %s Foo: %w", meta.APIVersion, err)
	}
	out := into.fromHub(hub)
	setAPIVersion(out, to, meta.Kind)
	return Marshal(out)
}

// Marshal encodes v as JSON without HTML escaping, as Convert encodes a
// Foo; the webhook encodes the rest of its answer with it too. encoding/json
// escapes `<`, `>` and `&` as \u003c and the like, six bytes for one, for
// JSON put in HTML; an answer goes to the API server, which decodes both the
// same, and an object of `<` would be answered six times its size. What is
// still escaped takes no more bytes than it took as sent, but for invalid
// UTF-8 and U+2028 and U+2029, which the webhook's bounds on what it writes
// catch.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := stdjson.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	// Encode ends the value with a newline, which Marshal does not.
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// MaxAPIVersionBytes is the longest an apiVersion can be: a group is a DNS
// subdomain (253 bytes) and a version a DNS label (63), so no served version
// is longer.
const MaxAPIVersionBytes = 253 + 1 + 63

// quote quotes a version for a message, the message being written back and
// logged and the version the caller's: one longer than any version can be
// is named by its length alone.
func quote(s string) string {
	if len(s) > MaxAPIVersionBytes {
		return fmt.Sprintf("an apiVersion of %d bytes", len(s))
	}
	return strconv.Quote(s)
}

// setAPIVersion sets the type meta of a converted object: the conversion
// functions convert content, the API server checks the apiVersion.
func setAPIVersion(obj any, apiVersion, kind string) {
	switch o := obj.(type) {
	case *v1alpha1.Foo:
		o.APIVersion, o.Kind = apiVersion, kind
	case *v1beta1.Foo:
		o.APIVersion, o.Kind = apiVersion, kind
	}
}
