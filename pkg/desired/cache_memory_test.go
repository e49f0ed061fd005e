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

package desired

import (
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/foocache"
	samplescheme "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/scheme"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// How much memory the caches keep per object: the benchmarks decode
// cachedObjects Deployments (protobuf, as the controller's client receives
// them) or Foos (JSON), run each through the informer transform as the informer does
// (a Deployment becomes its CachedDeployment, the decoded Deployment
// garbage; a Foo is trimmed in place), hold the results as a store would,
// and report the live heap that grew, after a collection, per object: the
// objects, and the store with its indexes. They report; they assert
// nothing. Run:
//
//	go test -run '^$' -bench CachedBytes -benchtime 1x ./pkg/desired
//
// docs/performance.md has the figures.
const cachedObjects = 10000

func BenchmarkCachedBytesPerDeployment(b *testing.B) {
	serializer := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	encoded := make([][]byte, cachedObjects)
	for i := range encoded {
		data, err := runtime.Encode(serializer, servedDeployment(b, i))
		if err != nil {
			b.Fatal(err)
		}
		encoded[i] = data
	}
	reportCachedBytes(b, encoded, scheme.Codecs.UniversalDeserializer(), owned.Indexers(samplecontroller.FooGroupKind),
		TransformDeployment)
}

func BenchmarkCachedBytesPerFoo(b *testing.B) {
	codec := samplescheme.Codecs.LegacyCodec(samplev1beta1.SchemeGroupVersion)
	encoded := make([][]byte, cachedObjects)
	for i := range encoded {
		foo := servedFoo(b, i)
		data, err := runtime.Encode(codec, foo)
		if err != nil {
			b.Fatal(err)
		}
		encoded[i] = data
	}
	reportCachedBytes(b, encoded, samplescheme.Codecs.UniversalDeserializer(), foocache.Indexers(), foocache.Transform)
}

// BenchmarkCachedBytesPerLabelledFoo prices the labels and annotations
// foocache.Transform drops, on Foos applied with kubectl and two labels: trimmed as the
// cache keeps them, then trimmed but keeping their labels, then keeping
// their labels and annotations.
func BenchmarkCachedBytesPerLabelledFoo(b *testing.B) {
	codec := samplescheme.Codecs.LegacyCodec(samplev1beta1.SchemeGroupVersion)
	encoded := make([][]byte, cachedObjects)
	for i := range encoded {
		data, err := runtime.Encode(codec, appliedLabelledFoo(b, i))
		if err != nil {
			b.Fatal(err)
		}
		encoded[i] = data
	}
	keeping := func(annotations bool) func(interface{}) (interface{}, error) {
		return func(obj interface{}) (interface{}, error) {
			foo := obj.(*samplev1beta1.Foo)
			labels, notes := foo.Labels, foo.Annotations
			trimmed, err := transform(foo)
			trimmed.(*samplev1beta1.Foo).Labels = labels
			if annotations {
				trimmed.(*samplev1beta1.Foo).Annotations = notes
			}
			return trimmed, err
		}
	}
	for name, transform := range map[string]func(interface{}) (interface{}, error){
		"trimmed": foocache.Transform, "keeping labels": keeping(false), "keeping labels and annotations": keeping(true),
	} {
		b.Run(name, func(b *testing.B) {
			reportCachedBytes(b, encoded, samplescheme.Codecs.UniversalDeserializer(), foocache.Indexers(), transform)
		})
	}
}

// reportCachedBytes decodes every encoded object and runs it through
// transform (foocache.Transform but to price a field), b.N times, and reports the live heap kept per object: what
// the transform returns, and whatever of the decoded object it still holds
// (live-B/object); then what holding those objects in an informer's store
// with the controller's indexes adds (store+index-B/object): its key, its
// map entry, and client-go's set per index value.
func reportCachedBytes(b *testing.B, encoded [][]byte, decoder runtime.Decoder, indexers cache.Indexers,
	transform func(interface{}) (interface{}, error)) {
	var perObject, perEntry float64
	for range b.N {
		kept := make([]interface{}, len(encoded))
		before := liveHeap()
		for i, data := range encoded {
			obj, err := runtime.Decode(decoder, data)
			if err != nil {
				b.Fatal(err)
			}
			if kept[i], err = transform(obj); err != nil {
				b.Fatal(err)
			}
		}
		decoded := liveHeap()
		perObject = float64(decoded-before) / float64(len(encoded))

		store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, indexers)
		for _, obj := range kept {
			if err := store.Add(obj); err != nil {
				b.Fatal(err)
			}
		}
		perEntry = float64(liveHeap()-decoded) / float64(len(encoded))
		goruntime.KeepAlive(kept)
		goruntime.KeepAlive(store)
	}
	b.ReportMetric(perObject, "live-B/object")
	b.ReportMetric(perEntry, "store+index-B/object")
}

// liveHeap collects garbage and returns the bytes of live heap objects.
func liveHeap() int64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// servedDeployment is the i-th Foo's Deployment as the API server serves it
// to the controller once rolled out: what the controller applied, the API
// server's defaults and managedFields, the deployment controller's revision
// annotation and conditions.
func servedDeployment(tb testing.TB, i int) *appsv1.Deployment {
	tb.Helper()
	foo := testfixtures.NewFoo(fmt.Sprintf("foo-%05d", i), 1)
	d, err := deploymentObject(DeploymentFor(foo))
	if err != nil {
		tb.Fatal(err)
	}
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	d.UID = types.UID(fmt.Sprintf("6f0c1a52-3b7e-4d2a-9c1e-%012d", i))
	d.ResourceVersion = fmt.Sprint(100000 + i)
	d.Generation = 1
	d.CreationTimestamp = created
	d.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	d.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: samplecontroller.ControllerName, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1", Time: &created,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:app":{},"f:app.kubernetes.io/managed-by":{},"f:controller":{}},"f:ownerReferences":{"k:{\"uid\":\"uid-foo\"}":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{},"f:controller":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: &created,
			Subresource: "status", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{".":{},"f:deployment.kubernetes.io/revision":{}}},"f:status":{"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Progressing\"}":{".":{},"f:lastTransitionTime":{},"f:lastUpdateTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:updatedReplicas":{}}}`)},
	}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%"))}}
	d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	pod := &d.Spec.Template.Spec
	pod.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	pod.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
	pod.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageReadFile
	pod.RestartPolicy = corev1.RestartPolicyAlways
	pod.DNSPolicy = corev1.DNSClusterFirst
	pod.TerminationGracePeriodSeconds = ptr.To[int64](30)
	pod.SecurityContext = &corev1.PodSecurityContext{}
	pod.SchedulerName = corev1.DefaultSchedulerName
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				Message: "Deployment has minimum availability.", LastUpdateTime: created, LastTransitionTime: created},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
				Message: fmt.Sprintf(`ReplicaSet "%s-5d4f8c7b9" has successfully progressed.`, d.Name), LastUpdateTime: created, LastTransitionTime: created},
		}}
	return d
}

// servedFoo is the i-th Foo as the API server serves it once Ready:
// created by a client, its status written by the controller.
func servedFoo(tb testing.TB, i int) *samplev1beta1.Foo {
	tb.Helper()
	foo := testfixtures.NewFoo(fmt.Sprintf("foo-%05d", i), 1)
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	foo.UID = types.UID(fmt.Sprintf("0b9d7e6c-1f2a-4c3d-8e5f-%012d", i))
	foo.ResourceVersion = fmt.Sprint(200000 + i)
	foo.CreationTimestamp = created
	foo.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "samplecontroller.k8s.io/v1beta1", Time: &created,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{".":{},"f:deployment":{"f:name":{}},"f:replicas":{}}}`)},
		{Manager: samplecontroller.ControllerName, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "samplecontroller.k8s.io/v1beta1", Time: &created,
			Subresource: "status", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{".":{},"f:availableReplicas":{},"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{}}}`)},
	}
	return testfixtures.WithSyncedStatus(tb, foo, servedDeployment(tb, i))
}

// appliedLabelledFoo is servedFoo(i) created by "kubectl apply" of a
// manifest with two labels: the labels, and the manifest in kubectl's
// last-applied-configuration annotation.
func appliedLabelledFoo(tb testing.TB, i int) *samplev1beta1.Foo {
	tb.Helper()
	foo := servedFoo(tb, i)
	foo.Labels = map[string]string{"app.kubernetes.io/name": "shop", "app.kubernetes.io/part-of": "checkout"}
	foo.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": fmt.Sprintf(
		`{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","metadata":{"annotations":{},`+
			`"labels":{"app.kubernetes.io/name":"shop","app.kubernetes.io/part-of":"checkout"},"name":%q,"namespace":"default"},`+
			`"spec":{"deployment":{"name":%q},"replicas":1}}`+"\n", foo.Name, foo.Spec.Deployment.Name)}
	return foo
}
