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
	"fmt"
	"maps"
	"slices"
	"strings"
)

// allowed is what a level of a new object may hold besides the fields the
// controller sets: the fields the API server defaults, each with the values
// it writes (nil: any value).
type allowed struct {
	keys map[string][]any // field: its allowed values; nil, any
}

// cel is the CEL alternative that a field k of obj is one of a; "" if none.
func (a *allowed) cel(k, obj string) string {
	var parts []string
	for _, key := range slices.Sorted(maps.Keys(a.keys)) {
		values := a.keys[key]
		if values == nil {
			parts = append(parts, fmt.Sprintf("%s == %s", k, literal(key)))
			continue
		}
		parts = append(parts, fmt.Sprintf("(%s == %s && %s[%s] in %s)", k, literal(key), obj, k, literal(values)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " || " + strings.Join(parts, " || ")
}

// describe says what a allows, for a message.
func (a *allowed) describe() string {
	if len(a.keys) == 0 {
		return ""
	}
	var parts []string
	for _, key := range slices.Sorted(maps.Keys(a.keys)) {
		if a.keys[key] == nil {
			parts = append(parts, key)
		} else {
			parts = append(parts, key+" "+literal(a.keys[key]))
		}
	}
	return ", and the API server's defaults: " + strings.Join(parts, ", ")
}

var (
	nothing = &allowed{}
	// createdMetadata is what the API server writes into a new object's
	// metadata before it admits it, whatever its kind (rest.BeforeCreate,
	// the field manager): no annotation, finalizer or label of its own. A
	// finalizer would keep the object, and what it runs, past every
	// delete; an annotation or a label, read by other automation, could
	// make it act.
	createdMetadata = &allowed{keys: map[string][]any{
		"uid": nil, "creationTimestamp": nil, "generation": nil, "managedFields": nil,
	}}
)

// serverDefaults are, for each kind a Foo may own and each level of it the
// controller sets (a path; [] for each element of a list), what the API
// server writes into a new object there: k8s.io/kubernetes pkg/apis/apps/v1
// and pkg/apis/core/v1, defaults.go (SetDefaults_Deployment, _PodSpec,
// _Container, _Service, _ServicePort). The policy lets a new object hold
// these and nothing else the controller does not set: no volume, no host
// namespace, no privilege, no other ServiceAccount. A level missing here
// fails the generator, so a kind or a field the controller comes to set
// is confined by a decision, not by default; a default a later Kubernetes
// adds is caught by the end-to-end tests, whose controller's creates would
// be refused (TestDeploymentPolicy...).
var serverDefaults = map[string]map[string]*allowed{
	"Deployment": {
		"":                {keys: map[string][]any{"status": nil}},
		metadataPath:      createdMetadata,
		"metadata.labels": nothing,
		"spec": {keys: map[string][]any{
			"strategy": nil, "revisionHistoryLimit": nil, "progressDeadlineSeconds": nil,
		}},
		"spec.selector":             nothing,
		"spec.selector.matchLabels": nothing,
		"spec.template":             nothing,
		"spec.template.metadata":    {keys: map[string][]any{"creationTimestamp": {nil}}},
		// The pods' labels alone: another label could join them to a
		// Service of someone else's.
		"spec.template.metadata.labels": nothing,
		"spec.template.spec": {keys: map[string][]any{
			"restartPolicy":                 {"Always"},
			"terminationGracePeriodSeconds": {float64(30)},
			"dnsPolicy":                     {"ClusterFirst"},
			"securityContext":               {map[string]any{}},
			"schedulerName":                 {"default-scheduler"},
		}},
		"spec.template.spec.containers[]": {keys: map[string][]any{
			"terminationMessagePath":   {"/dev/termination-log"},
			"terminationMessagePolicy": {"File"},
			"imagePullPolicy":          {"Always", "IfNotPresent", "Never"},
			"resources":                {map[string]any{}},
		}},
		"spec.template.spec.containers[].ports[]": {keys: map[string][]any{"protocol": {"TCP"}}},
	},
	"Service": {
		"":                {keys: map[string][]any{"status": nil}},
		metadataPath:      createdMetadata,
		"metadata.labels": nothing,
		"spec": {keys: map[string][]any{
			"clusterIP":             nil,
			"clusterIPs":            nil,
			"ipFamilies":            nil,
			"ipFamilyPolicy":        {"SingleStack"},
			"internalTrafficPolicy": {"Cluster"},
			"sessionAffinity":       {"None"},
			"type":                  {"ClusterIP"},
		}},
		"spec.selector": nothing,
		"spec.ports[]":  {keys: map[string][]any{"protocol": {"TCP"}}},
	},
}
