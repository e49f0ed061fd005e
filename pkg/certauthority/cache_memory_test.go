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

package certauthority

import (
	"encoding/json"
	"os"
	goruntime "runtime"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// What the CRD informer's cache keeps of the Foo CRD: the benchmark decodes
// the CRD as the dynamic client receives it (JSON, here with the
// last-applied-configuration annotation kubectl apply adds: the whole CRD
// again), and reports the live heap it keeps after a collection, whole (as
// the cache holds it) and trimmed to what reconcile reads (trimCRD, a
// transform the informer could have). It reports; it asserts nothing. Run:
//
//	go test -run '^$' -bench CachedCRD -benchtime 1x ./pkg/certauthority
//
// docs/performance.md has the figures, and why the cache keeps the whole
// CRD.
func BenchmarkCachedCRDBytes(b *testing.B) {
	data, err := os.ReadFile("../../artifacts/examples/crd.yaml")
	if err != nil {
		b.Fatal(err)
	}
	applied, err := yaml.YAMLToJSON(data)
	if err != nil {
		b.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := json.Unmarshal(applied, &crd.Object); err != nil {
		b.Fatal(err)
	}
	crd.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied)})
	crd.SetResourceVersion("1234")
	if err := unstructured.SetNestedField(crd.Object, "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
		"spec", "conversion", "webhook", "clientConfig", "caBundle"); err != nil {
		b.Fatal(err)
	}
	served, err := json.Marshal(crd.Object)
	if err != nil {
		b.Fatal(err)
	}
	for name, transform := range map[string]func(any) (any, error){
		"whole":   func(obj any) (any, error) { return obj, nil },
		"trimmed": trimCRD,
	} {
		b.Run(name, func(b *testing.B) {
			var kept int64
			for range b.N {
				before := liveHeap()
				obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, served)
				if err != nil {
					b.Fatal(err)
				}
				cached, err := transform(obj)
				if err != nil {
					b.Fatal(err)
				}
				kept = liveHeap() - before
				goruntime.KeepAlive(cached)
			}
			b.ReportMetric(float64(kept), "live-B")
		})
	}
}

// trimCRD keeps of a CRD what reconcile reads (the conversion strategy and
// the caBundle) and what the store needs (the name, the resourceVersion).
func trimCRD(obj any) (any, error) {
	crd := obj.(*unstructured.Unstructured)
	conversion := map[string]any{}
	if strategy, found, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); found {
		conversion["strategy"] = strategy
	}
	if bundle, found, _ := unstructured.NestedString(crd.Object,
		"spec", "conversion", "webhook", "clientConfig", "caBundle"); found {
		conversion["webhook"] = map[string]any{"clientConfig": map[string]any{"caBundle": bundle}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": crd.GetAPIVersion(),
		"kind":       crd.GetKind(),
		"metadata":   map[string]any{"name": crd.GetName(), "resourceVersion": crd.GetResourceVersion()},
		"spec":       map[string]any{"conversion": conversion},
	}}, nil
}

// liveHeap collects garbage and returns the bytes of live heap objects.
func liveHeap() int64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
