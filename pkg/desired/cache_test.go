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
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/foocache"
	samplescheme "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/scheme"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// completeDeployment is ownedDeployment as a cluster serves it, with what
// others add: the API server (managedFields, creationTimestamp), kubectl
// (annotations), the deployment controller (a revision, conditions), another
// team (a label, a pod label, a sidecar, an owner, fields of the
// controller's container it does not set), and the pod template's defaults.
func completeDeployment(t *testing.T, foo *samplev1beta1.Foo) *appsv1.Deployment {
	t.Helper()
	d := testfixtures.OwnedDeployment(t, foo)
	d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	d.ResourceVersion = "7"
	d.Generation = 3
	d.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	d.Labels["team"] = "payments"
	d.Annotations = map[string]string{
		"deployment.kubernetes.io/revision":                "3",
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"team":"payments"}}}`,
	}
	d.Finalizers = []string{"example.com/audit"}
	d.OwnerReferences = append([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "audit", UID: "uid-audit"}},
		d.OwnerReferences...)
	d.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: samplecontroller.ControllerName, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
			Subresource: "status", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)},
	}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%"))}}
	d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	d.Spec.Template.Labels["tier"] = "web"
	d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-01-02T03:04:05Z"}
	pod := &d.Spec.Template.Spec
	pod.Containers[0].ImagePullPolicy = corev1.PullAlways
	pod.Containers[0].TerminationMessagePath = corev1.TerminationMessagePathDefault
	pod.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
	pod.Containers[0].Env = []corev1.EnvVar{{Name: "NGINX_PORT", Value: "80"}}
	pod.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
	pod.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80)}}}
	pod.Containers = append(pod.Containers, corev1.Container{Name: "log-shipper", Image: "fluent-bit:3",
		VolumeMounts: []corev1.VolumeMount{{Name: "logs", MountPath: "/var/log/nginx"}}})
	pod.Volumes = []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.RestartPolicy = corev1.RestartPolicyAlways
	pod.DNSPolicy = corev1.DNSClusterFirst
	pod.TerminationGracePeriodSeconds = ptr.To[int64](30)
	pod.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	pod.SchedulerName = corev1.DefaultSchedulerName
	d.Status.ObservedGeneration = 3
	since := metav1.NewTime(time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC))
	d.Status.Conditions = []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
			Message: "Deployment has minimum availability.", LastUpdateTime: since, LastTransitionTime: since},
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
			Message: `ReplicaSet "test-deployment-5d4f8c7b9" has successfully progressed.`, LastUpdateTime: since, LastTransitionTime: since},
	}
	return d
}

// completeFoo is the Foo "test" with 3 replicas as the API server serves it
// after kubectl apply and a sync: with annotations, managedFields and the
// status the controller wrote.
func completeFoo(t *testing.T) *samplev1beta1.Foo {
	t.Helper()
	foo := testfixtures.NewFoo("test", 3)
	foo.ResourceVersion = "42"
	foo.Generation = 3
	foo.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	foo.Labels = map[string]string{"team": "payments"}
	foo.Annotations = map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"samplecontroller.k8s.io/v1beta1","kind":"Foo","metadata":{"name":"test"}}`,
	}
	foo.Finalizers = []string{"example.com/audit"}
	foo.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "samplecontroller.k8s.io/v1beta1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:deployment":{"f:name":{}},"f:replicas":{}}}`)},
	}
	testfixtures.WithSyncedStatus(t, foo, completeDeployment(t, foo))
	foo.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC))
	return foo
}

// beingDeleted is foo as the API server serves it once a client deleted it
// with foreground propagation: a deletion timestamp and grace period, the
// garbage collector's finalizer after the others. (The API server also
// increments the generation; the cases that compare statuses do it.)
func beingDeleted(foo *samplev1beta1.Foo) *samplev1beta1.Foo {
	foo.DeletionTimestamp = ptr.To(metav1.NewTime(time.Date(2026, 1, 2, 3, 6, 0, 0, time.UTC)))
	foo.DeletionGracePeriodSeconds = ptr.To[int64](0)
	foo.Finalizers = append(foo.Finalizers, metav1.FinalizerDeleteDependents)
	return foo
}

// cachedDeployment runs a Deployment through the informer transform, which
// turns it into what the cache keeps of it.
func cachedDeployment(t *testing.T, d *appsv1.Deployment) *CachedDeployment {
	t.Helper()
	out, err := transform(d)
	if err != nil {
		t.Fatal(err)
	}
	cached, ok := out.(*CachedDeployment)
	if !ok {
		t.Fatalf("the transform turned a Deployment into a %T, want a *CachedDeployment", out)
	}
	return cached
}

// trimmedFoo runs the informer transform on a copy of a Foo (it trims in
// place).
func trimmedFoo(t *testing.T, foo *samplev1beta1.Foo) *samplev1beta1.Foo {
	t.Helper()
	out, err := transform(foo.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*samplev1beta1.Foo)
}

// The drift check, on what the cache keeps of a Deployment as the cluster
// serves it, finds drift in exactly the fields the controller owns, named as
// server-side apply names them: what others add (labels, pod labels,
// annotations, a sidecar, fields of the controller's container it does not
// set, a strategy) never counts. The selector is atomic, as for an apply:
// the controller owns all of it, so a match expression makes it another
// selector.
func TestCachedDeploymentDrift(t *testing.T) {
	foo := testfixtures.NewFoo("test", 3)
	for name, tc := range map[string]struct {
		mutate func(*appsv1.Deployment)
		want   string
	}{
		"in sync":                {func(*appsv1.Deployment) {}, ""},
		"replicas changed":       {func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }, ".spec.replicas"},
		"replicas unset":         {func(d *appsv1.Deployment) { d.Spec.Replicas = nil }, ".spec.replicas"},
		"managed-by label gone":  {func(d *appsv1.Deployment) { delete(d.Labels, samplecontroller.LabelManagedBy) }, ".metadata.labels.app.kubernetes.io/managed-by"},
		"controller label wrong": {func(d *appsv1.Deployment) { d.Labels[samplecontroller.LabelController] = "other" }, ".metadata.labels.controller"},
		"all labels gone":        {func(d *appsv1.Deployment) { d.Labels = nil }, ".metadata.labels"},
		"selector changed":       {func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels["extra"] = "x" }, ".spec.selector"},
		"selector label gone":    {func(d *appsv1.Deployment) { delete(d.Spec.Selector.MatchLabels, samplecontroller.LabelController) }, ".spec.selector"},
		"selector value wrong":   {func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels[samplecontroller.LabelApp] = "web" }, ".spec.selector"},
		"selector unset":         {func(d *appsv1.Deployment) { d.Spec.Selector = nil }, ".spec.selector"},
		"selector match expression": {func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}
		}, ".spec.selector"},
		"template label gone":      {func(d *appsv1.Deployment) { delete(d.Spec.Template.Labels, samplecontroller.LabelApp) }, ".spec.template.metadata.labels.app"},
		"another team's pod label": {func(d *appsv1.Deployment) { d.Spec.Template.Labels["tier"] = "api" }, ""},
		"image changed":            {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "busybox" }, `.spec.template.spec.containers[name="nginx"].image`},
		"image unset":              {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }, `.spec.template.spec.containers[name="nginx"].image`},
		"container renamed":        {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "web" }, `.spec.template.spec.containers[name="nginx"]`},
		"no containers":            {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = nil }, ".spec.template.spec.containers"},
		"another field of ours changed by another team": {func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Env = append(d.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "DEBUG", Value: "1"})
		}, ""},
		"ours after the sidecar": {func(d *appsv1.Deployment) {
			c := d.Spec.Template.Spec.Containers
			c[0], c[1] = c[1], c[0]
		}, ""},
		"several": {func(d *appsv1.Deployment) {
			d.Spec.Replicas = ptr.To[int32](1)
			delete(d.Labels, samplecontroller.LabelApp)
			d.Spec.Template.Spec.Containers[0].Image = "busybox"
		}, `.metadata.labels.app,.spec.replicas,.spec.template.spec.containers[name="nginx"].image`},
	} {
		t.Run(name, func(t *testing.T) {
			d := completeDeployment(t, foo)
			tc.mutate(d)
			drift, err := DeploymentDrift(DeploymentFor(foo), cachedDeployment(t, d))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(drift, ","); got != tc.want {
				t.Errorf("drift %q, want %q", got, tc.want)
			}
		})
	}
}

// A CachedDeployment whose values could not be kept is not taken for one in
// sync: Drift returns an error, which fails the sync.
func TestDriftOfUnreadableCachedValuesIsAnError(t *testing.T) {
	foo := testfixtures.NewFoo("test", 1)
	for name, values := range map[string]string{"none": "", "not JSON": "{"} {
		t.Run(name, func(t *testing.T) {
			cached := CacheDeployment(testfixtures.OwnedDeployment(t, foo))
			cached.Values = values
			if drift, err := DeploymentDrift(DeploymentFor(foo), cached); err == nil {
				t.Errorf("drift %q and no error", drift)
			}
		})
	}
}

// The Ready condition and the status a Foo gets from what the cache keeps of
// its Deployment, as the cluster serves it, follow the rollout the
// deployment controller reports, and nothing else the Deployment holds.
func TestCachedDeploymentGivesTheStatus(t *testing.T) {
	foo := completeFoo(t)
	for name, tc := range map[string]struct {
		mutate              func(*appsv1.Deployment)
		ready               metav1.ConditionStatus
		reason, msg         string
		replicas, available int32 // in the Foo's status
	}{
		"rolled out": {func(*appsv1.Deployment) {}, metav1.ConditionTrue, samplecontroller.ReasonAvailable,
			"Deployment test-deployment: 3 of 3 replicas available", 3, 3},
		"spec not observed yet": {func(d *appsv1.Deployment) { d.Generation = 4 }, metav1.ConditionFalse, samplecontroller.ReasonProgressing,
			"Deployment test-deployment: waiting for the deployment controller to observe the latest spec", 3, 3},
		"scaling up": {func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 }, metav1.ConditionFalse, samplecontroller.ReasonProgressing,
			"Deployment test-deployment: 1 of 3 replicas updated", 3, 3},
		"old pods terminating": {func(d *appsv1.Deployment) { d.Status.Replicas = 4 }, metav1.ConditionFalse, samplecontroller.ReasonProgressing,
			"Deployment test-deployment: 1 old replicas pending termination", 4, 3},
		"not yet available": {func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 }, metav1.ConditionFalse, samplecontroller.ReasonProgressing,
			"Deployment test-deployment: 2 of 3 replicas available", 3, 2},
		"no conditions yet": {func(d *appsv1.Deployment) { d.Status.Conditions = nil }, metav1.ConditionTrue, samplecontroller.ReasonAvailable,
			"Deployment test-deployment: 3 of 3 replicas available", 3, 3},
		"progress deadline exceeded": {func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas = 0
			d.Status.Conditions[1].Status = corev1.ConditionFalse
			d.Status.Conditions[1].Reason = "ProgressDeadlineExceeded"
		}, metav1.ConditionFalse, samplecontroller.ReasonProgressing, "Deployment test-deployment: rollout exceeded its progress deadline", 3, 0},
		"progress deadline exceeded, conditions reordered": {func(d *appsv1.Deployment) {
			c := d.Status.Conditions
			c[1].Status = corev1.ConditionFalse
			c[0], c[1] = c[1], c[0]
			d.Status.Conditions = append(c, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue})
		}, metav1.ConditionFalse, samplecontroller.ReasonProgressing, "Deployment test-deployment: rollout exceeded its progress deadline", 3, 3},
		"not available, progressing": {func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas = 0
			d.Status.Conditions[0].Status = corev1.ConditionFalse
		}, metav1.ConditionFalse, samplecontroller.ReasonProgressing, "Deployment test-deployment: 0 of 3 replicas available", 3, 0},
	} {
		t.Run(name, func(t *testing.T) {
			d := completeDeployment(t, foo)
			tc.mutate(d)
			cached := cachedDeployment(t, d)

			want := metav1.Condition{Type: samplecontroller.ConditionReady, Status: tc.ready, Reason: tc.reason, Message: tc.msg}
			ready := ReadyCondition(foo, cached)
			if ready != want {
				t.Errorf("Ready condition:\n%s", diff.Diff(want, ready))
			}
			wantStatus := samplev1beta1.FooStatus{
				AvailableReplicas:  tc.available,
				Replicas:           tc.replicas,
				Selector:           "app=nginx,controller=test",
				ObservedGeneration: 3,
				Conditions: []metav1.Condition{{Type: samplecontroller.ConditionReady, Status: tc.ready, ObservedGeneration: 3,
					Reason: tc.reason, Message: tc.msg}},
			}
			// A changed condition is stamped with the time of the call.
			if got := StatusFor(foo, cached, ready); !EqualIgnoringTransitionTimes(got, wantStatus) {
				t.Errorf("status:\n%s", diff.Diff(wantStatus, got))
			}
		})
	}
}

// Which Foo controls a Deployment, if any, reads from what the cache keeps
// of it: for the event handlers, the controller-UID index, the ownership
// check and the problem reported when the name is taken. The cache keeps the
// controller reference alone, without blockOwnerDeletion, and the
// Deployment's key.
func TestCachedDeploymentKeepsItsController(t *testing.T) {
	foo := testfixtures.NewFoo("test", 1)
	for name, tc := range map[string]struct {
		mutate     func(*appsv1.Deployment)
		owners     []metav1.OwnerReference // kept in the cache
		controlled bool                    // by foo
		indexed    []string                // under the controller-UID index
		owner      string                  // named when the name is taken
	}{
		"controlled by the Foo, among other owners": {func(*appsv1.Deployment) {},
			[]metav1.OwnerReference{{APIVersion: "samplecontroller.k8s.io/v1beta1", Kind: "Foo", Name: "test", UID: "uid-test", Controller: ptr.To(true)}},
			true, []string{"uid-test"}, `Foo "test"`},
		"controlled by another Foo": {func(d *appsv1.Deployment) {
			d.OwnerReferences[1].Name, d.OwnerReferences[1].UID = "other", "uid-other"
		},
			[]metav1.OwnerReference{{APIVersion: "samplecontroller.k8s.io/v1beta1", Kind: "Foo", Name: "other", UID: "uid-other", Controller: ptr.To(true)}},
			false, []string{"uid-other"}, `Foo "other"`},
		"controlled by a ReplicaSet": {func(d *appsv1.Deployment) {
			d.OwnerReferences[1] = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: "uid-x",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
		},
			[]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: "uid-x", Controller: ptr.To(true)}},
			false, nil, "no Foo"},
		"owned, not controlled":   {func(d *appsv1.Deployment) { d.OwnerReferences[1].Controller = nil }, nil, false, nil, "no Foo"},
		"owned, controller false": {func(d *appsv1.Deployment) { d.OwnerReferences[1].Controller = ptr.To(false) }, nil, false, nil, "no Foo"},
		"no owner":                {func(d *appsv1.Deployment) { d.OwnerReferences = nil }, nil, false, nil, "no Foo"},
	} {
		t.Run(name, func(t *testing.T) {
			d := completeDeployment(t, foo)
			tc.mutate(d)
			cached := cachedDeployment(t, d)

			if !reflect.DeepEqual(cached.OwnerReferences, tc.owners) {
				t.Errorf("owner references:\n%s", diff.Diff(tc.owners, cached.OwnerReferences))
			}
			if got := metav1.IsControlledBy(cached, foo); got != tc.controlled {
				t.Errorf("controlled by the Foo: %v, want %v", got, tc.controlled)
			}
			got, err := owned.Indexers(samplecontroller.FooGroupKind)[owned.ByControllerUID](cached)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.indexed) {
				t.Errorf("indexed under %q, want %q", got, tc.indexed)
			}
			want := `Deployment "test-deployment" already exists and is not managed by this Foo (it is controlled by ` + tc.owner + ")"
			if got := NameTakenProblem("Deployment", cached).Message; got != want {
				t.Errorf("name taken: %q, want %q", got, want)
			}
			key, err := cache.MetaNamespaceKeyFunc(cached)
			if err != nil {
				t.Fatal(err)
			}
			if key != "default/test-deployment" {
				t.Errorf("cache key %q, want %q", key, "default/test-deployment")
			}
		})
	}
}

// A sync reads the same Foo from the cache as from the API server: the same
// desired Deployment, the same verdict on its spec, the same status, no
// status write when it is in sync, and the same reference in events.
func TestTrimmedFooSyncsLikeTheOriginal(t *testing.T) {
	// As NewController does: events name Foos by the kind the scheme knows.
	utilruntime.Must(samplescheme.AddToScheme(scheme.Scheme))
	for name, tc := range map[string]struct {
		mutate func(*samplev1beta1.Foo)
		write  bool // whether the complete Foo's status needs a write
	}{
		"in sync":          {func(*samplev1beta1.Foo) {}, false},
		"replicas changed": {func(f *samplev1beta1.Foo) { f.Spec.Replicas = ptr.To[int32](5); f.Generation++ }, true},
		"replicas unset":   {func(f *samplev1beta1.Foo) { f.Spec.Replicas = nil }, true},
		"invalid spec":     {func(f *samplev1beta1.Foo) { f.Spec.Replicas = ptr.To[int32](11) }, true},
		"renamed":          {func(f *samplev1beta1.Foo) { f.Spec.Deployment.Name = "renamed" }, false},
		"long name":        {func(f *samplev1beta1.Foo) { f.Name = strings.Repeat("a", 100) }, true},
		"no status yet":    {func(f *samplev1beta1.Foo) { f.Status = samplev1beta1.FooStatus{} }, true},
		"being deleted":    {func(f *samplev1beta1.Foo) { beingDeleted(f); f.Generation++ }, true},
	} {
		t.Run(name, func(t *testing.T) {
			foo := completeFoo(t)
			d := CacheDeployment(completeDeployment(t, foo))
			tc.mutate(foo)
			trimmed := trimmedFoo(t, foo)

			if got, want := DeploymentFor(trimmed), DeploymentFor(foo); !reflect.DeepEqual(got, want) {
				t.Errorf("desired Deployment differs:\n%s", diff.Diff(want, got))
			}
			if got, want := ValidateSpec(&trimmed.Spec).ToAggregate(), ValidateSpec(&foo.Spec).ToAggregate(); !reflect.DeepEqual(got, want) {
				t.Errorf("spec validation: %v, the complete Foo %v", got, want)
			}
			want := StatusFor(foo, d, ReadyCondition(foo, d))
			got := StatusFor(trimmed, d, ReadyCondition(trimmed, d))
			if !EqualIgnoringTransitionTimes(got, want) {
				t.Errorf("status differs:\n%s", diff.Diff(want, got))
			}
			// The controller writes status when the computed status differs from
			// the cached one.
			if write := !equality.Semantic.DeepEqual(foo.Status, want); write != tc.write {
				t.Fatalf("the complete Foo needs a status write: %v, want %v: the case tests something else", write, tc.write)
			}
			if write := !equality.Semantic.DeepEqual(trimmed.Status, got); write != tc.write {
				t.Errorf("the trimmed Foo needs a status write: %v, the complete one: %v\n%s", write, tc.write, diff.Diff(trimmed.Status, got))
			}
			gotRef, err := reference.GetReference(scheme.Scheme, trimmed)
			if err != nil {
				t.Fatalf("no event reference for the trimmed Foo: %v", err)
			}
			wantRef, err := reference.GetReference(scheme.Scheme, foo)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotRef, wantRef) {
				t.Errorf("event reference differs:\n%s", diff.Diff(wantRef, gotRef))
			}
			gotIndex, _ := foocache.Indexers()[foocache.ByDeploymentName](trimmed)
			wantIndex, _ := foocache.Indexers()[foocache.ByDeploymentName](foo)
			if !reflect.DeepEqual(gotIndex, wantIndex) {
				t.Errorf("indexed under %q, the complete Foo under %q", gotIndex, wantIndex)
			}
			if got, want := cache.MetaObjectToName(trimmed), cache.MetaObjectToName(foo); got != want {
				t.Errorf("cache key %v, want %v", got, want)
			}
			if !reflect.DeepEqual(trimmed.DeletionTimestamp, foo.DeletionTimestamp) || !slices.Equal(trimmed.Finalizers, foo.Finalizers) {
				t.Errorf("deletion timestamp %v and finalizers %q, the complete Foo's %v and %q",
					trimmed.DeletionTimestamp, trimmed.Finalizers, foo.DeletionTimestamp, foo.Finalizers)
			}
		})
	}
}

// cachedCompleteDeployment is what the cache keeps of
// completeDeployment(t, testfixtures.NewFoo("test", 3)).
func cachedCompleteDeployment() *CachedDeployment {
	return &CachedDeployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "test-deployment",
			Namespace:       "default",
			UID:             "uid-test-deployment",
			ResourceVersion: "7",
			Generation:      3,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "samplecontroller.k8s.io/v1beta1",
				Kind:       "Foo",
				Name:       "test",
				UID:        "uid-test",
				Controller: ptr.To(true),
			}},
		},
		// Its values at the fields Deployment sets, and only there.
		Values: `{"metadata":{"labels":{"app":"nginx","app.kubernetes.io/managed-by":"sample-controller","controller":"test"}},` +
			`"spec":{"replicas":3,"selector":{"matchLabels":{"app":"nginx","controller":"test"}},` +
			`"template":{"metadata":{"labels":{"app":"nginx","controller":"test"}},` +
			`"spec":{"automountServiceAccountToken":false,"containers":[{"image":"nginx:latest","name":"nginx"}]}}}}`,
		Status: Rollout{
			ObservedGeneration: 3,
			Replicas:           3,
			UpdatedReplicas:    3,
			AvailableReplicas:  3,
		},
	}
}

// The cache keeps of a Deployment exactly the fields the controller reads:
// no TypeMeta, annotations, managedFields, timestamps, finalizers, other
// owners, blockOwnerDeletion, condition details, and of the rest only the
// values at the fields the controller sets: not other teams' labels or pod
// labels, not the sidecar, not the strategy, not the fields of its
// container it does not set (ports, env, resources, probes, defaults).
func TestCachedDeploymentHoldsOnlyWhatTheControllerReads(t *testing.T) {
	d := completeDeployment(t, testfixtures.NewFoo("test", 3))
	want := cachedCompleteDeployment()
	if got := CacheDeployment(d); !reflect.DeepEqual(got, want) {
		t.Errorf("cached Deployment:\n%s", diff.Diff(want, got))
	}
	if got := cachedDeployment(t, completeDeployment(t, testfixtures.NewFoo("test", 3))); !reflect.DeepEqual(got, want) {
		t.Errorf("the transform's cached Deployment:\n%s", diff.Diff(want, got))
	}
}

// Deployments.Compact, and so the transform, leaves the Deployment it is
// given as it was: it may be shared (a tombstone's, a client's), and no
// caller expects it trimmed.
func TestCachedDeploymentDoesNotModifyTheDeployment(t *testing.T) {
	for name, build := range map[string]func(*testing.T, *appsv1.Deployment){
		"CacheDeployment":     func(_ *testing.T, d *appsv1.Deployment) { CacheDeployment(d) },
		"TransformDeployment": func(t *testing.T, d *appsv1.Deployment) { cachedDeployment(t, d) },
	} {
		t.Run(name, func(t *testing.T) {
			d := completeDeployment(t, testfixtures.NewFoo("test", 3))
			before := d.DeepCopy()
			build(t, d)
			if !reflect.DeepEqual(d, before) {
				t.Errorf("the Deployment was modified:\n%s", diff.Diff(before, d))
			}
		})
	}
}

// A CachedDeployment shares no map, slice or pointer with the Deployment it
// was built from: changing the Deployment afterwards leaves it as it was
// (and the Deployment can be collected as soon as it is built).
func TestCachedDeploymentSharesNothingWithTheDeployment(t *testing.T) {
	d := completeDeployment(t, testfixtures.NewFoo("test", 3))
	cached := CacheDeployment(d)

	*d.Spec.Replicas = 9
	*d.OwnerReferences[1].Controller = false
	d.OwnerReferences[1].Name = "changed"
	d.Labels[samplecontroller.LabelApp] = "changed"
	d.Spec.Selector.MatchLabels[samplecontroller.LabelApp] = "changed"
	d.Spec.Template.Labels[samplecontroller.LabelApp] = "changed"
	d.Spec.Template.Spec.Containers[0].Image = "changed"
	d.Status.Conditions[1].Status = corev1.ConditionFalse
	d.Status.AvailableReplicas = 0

	if want := cachedCompleteDeployment(); !reflect.DeepEqual(cached, want) {
		t.Errorf("the cached Deployment changed with the Deployment:\n%s", diff.Diff(want, cached))
	}
}

// A deep copy of a CachedDeployment (what client-go's cache mutation
// detector makes of each cached object) shares nothing that can be changed
// with the original.
func TestCachedDeploymentDeepCopySharesNothing(t *testing.T) {
	cached := CacheDeployment(completeDeployment(t, testfixtures.NewFoo("test", 3)))
	var obj runtime.Object = cached
	cp := obj.DeepCopyObject().(*CachedDeployment)
	if !reflect.DeepEqual(cp, cachedCompleteDeployment()) {
		t.Fatalf("the copy differs:\n%s", diff.Diff(cachedCompleteDeployment(), cp))
	}

	cp.OwnerReferences[0].Name = "changed"
	*cp.OwnerReferences[0].Controller = false
	cp.Values = "changed"

	if want := cachedCompleteDeployment(); !reflect.DeepEqual(cached, want) {
		t.Errorf("the original changed with its copy:\n%s", diff.Diff(want, cached))
	}
}

// The cache keeps of a Foo exactly the fields the controller reads: no
// TypeMeta, labels, annotations, managedFields, creation timestamp or grace
// period; of a Foo being deleted, its deletion timestamp and finalizers.
func TestTrimmedFooHoldsOnlyWhatTheControllerReads(t *testing.T) {
	foo := beingDeleted(completeFoo(t))
	want := &samplev1beta1.Foo{
		ObjectMeta: metav1.ObjectMeta{
			Name:              "test",
			Namespace:         metav1.NamespaceDefault,
			UID:               "uid-test",
			ResourceVersion:   "42",
			Generation:        3,
			DeletionTimestamp: ptr.To(metav1.NewTime(time.Date(2026, 1, 2, 3, 6, 0, 0, time.UTC))),
			Finalizers:        []string{"example.com/audit", metav1.FinalizerDeleteDependents},
		},
		Spec: samplev1beta1.FooSpec{Deployment: samplev1beta1.FooDeployment{Name: "test-deployment"}, Replicas: ptr.To[int32](3)},
		Status: samplev1beta1.FooStatus{
			AvailableReplicas:  3,
			Replicas:           3,
			Selector:           "app=nginx,controller=test",
			ObservedGeneration: 3,
			Conditions: []metav1.Condition{{
				Type:               samplecontroller.ConditionReady,
				Status:             metav1.ConditionTrue,
				ObservedGeneration: 3,
				LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)),
				Reason:             samplecontroller.ReasonAvailable,
				Message:            "Deployment test-deployment: 3 of 3 replicas available",
			}},
		},
	}
	if got := trimmedFoo(t, foo); !reflect.DeepEqual(got, want) {
		t.Errorf("trimmed Foo:\n%s", diff.Diff(want, got))
	}
}

// Client-go may pass an object through the transform twice (a watch-list's
// initial sync does): a CachedDeployment passes through as it is, the very
// same object, and a trimmed Foo trims to itself.
func TestTransformsAreIdempotent(t *testing.T) {
	foo := completeFoo(t)
	withoutOwner := completeDeployment(t, foo)
	withoutOwner.OwnerReferences = nil
	for name, d := range map[string]*appsv1.Deployment{
		"Deployment":               completeDeployment(t, foo),
		"Deployment without owner": withoutOwner,
		"empty Deployment":         {},
	} {
		t.Run(name, func(t *testing.T) {
			once := cachedDeployment(t, d)
			twice, err := transform(once)
			if err != nil {
				t.Fatal(err)
			}
			if twice != once {
				t.Errorf("the transform turned a CachedDeployment into %#v, want the same one", twice)
			}
			if want := CacheDeployment(d); !reflect.DeepEqual(once, want) {
				t.Errorf("the transform modified the CachedDeployment:\n%s", diff.Diff(want, once))
			}
		})
	}
	for name, foo := range map[string]*samplev1beta1.Foo{
		"Foo":               foo,
		"Foo being deleted": beingDeleted(completeFoo(t)),
		"empty Foo":         {},
	} {
		t.Run(name, func(t *testing.T) {
			once := trimmedFoo(t, foo)
			if twice := trimmedFoo(t, once); !reflect.DeepEqual(once, twice) {
				t.Errorf("trimmed twice differs from trimmed once:\n%s", diff.Diff(once, twice))
			}
		})
	}
}

// The transform trims a Foo it is given rather than return a copy: the
// watch-list initial sync transforms every object twice while the first
// results are still held, and copies would double the memory at that moment.
func TestFooTransformTrimsInPlace(t *testing.T) {
	foo := completeFoo(t)
	out, err := transform(foo)
	if err != nil {
		t.Fatal(err)
	}
	if out != foo {
		t.Error("the transform returned a copy, not the Foo it was given")
	}
	if foo.Annotations != nil || foo.ManagedFields != nil {
		t.Errorf("the Foo given was not trimmed: annotations %v, %d managedFields entries", foo.Annotations, len(foo.ManagedFields))
	}
}

// Anything but a Deployment or a Foo passes through unchanged, a
// CachedDeployment and tombstones included: their object was trimmed when
// it entered the cache.
func TestTransformsPassOtherObjectsThrough(t *testing.T) {
	d := completeDeployment(t, testfixtures.NewFoo("test", 1))
	cached := CacheDeployment(d)
	tombstone := cache.DeletedFinalStateUnknown{Key: "default/test-deployment", Obj: cached}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"a": "b"}}}
	list := &appsv1.DeploymentList{Items: []appsv1.Deployment{*d.DeepCopy()}}
	for name, obj := range map[string]interface{}{
		"CachedDeployment":     cached,
		"tombstone":            tombstone,
		"other type":           pod,
		"nil Deployment":       (*appsv1.Deployment)(nil),
		"nil CachedDeployment": (*CachedDeployment)(nil),
		"nil Foo":              (*samplev1beta1.Foo)(nil),
		"not an object":        "not an object",
		"untyped nil":          nil,
		"Deployment list":      list,
	} {
		t.Run(name, func(t *testing.T) {
			out, err := transform(obj)
			if err != nil {
				t.Fatal(err)
			}
			if out != obj {
				t.Errorf("got %#v, want the input unchanged", out)
			}
		})
	}
	if want := CacheDeployment(d); !reflect.DeepEqual(cached, want) {
		t.Errorf("a passed-through CachedDeployment was modified:\n%s", diff.Diff(want, cached))
	}
	if pod.Annotations["a"] != "b" || !reflect.DeepEqual(list.Items[0], *d) {
		t.Error("a passed-through object was modified")
	}
}

// The cache keeps the strings every managed Deployment holds once, not once
// per Deployment: the namespace, the controller reference's apiVersion and
// kind.
func TestCachedDeploymentKeepsCommonStringsOnce(t *testing.T) {
	foo := testfixtures.NewFoo("test", 1)
	da, db := completeDeployment(t, foo), completeDeployment(t, foo)
	for _, d := range []*appsv1.Deployment{da, db} { // as a decoder allocates them
		ref := &d.OwnerReferences[1]
		ref.APIVersion, ref.Kind = strings.Clone(ref.APIVersion), strings.Clone(ref.Kind)
	}
	if unsafe.StringData(da.Namespace) == unsafe.StringData(db.Namespace) ||
		unsafe.StringData(da.OwnerReferences[1].Kind) == unsafe.StringData(db.OwnerReferences[1].Kind) {
		t.Fatal("the Deployments built share their strings already: the test tests nothing")
	}
	a, b := CacheDeployment(da), CacheDeployment(db)
	if unsafe.StringData(a.Namespace) != unsafe.StringData(b.Namespace) {
		t.Error("the namespace is kept once per Deployment")
	}
	ref := a.OwnerReferences[0]
	if unsafe.StringData(ref.APIVersion) != unsafe.StringData(b.OwnerReferences[0].APIVersion) ||
		unsafe.StringData(ref.Kind) != unsafe.StringData(b.OwnerReferences[0].Kind) {
		t.Errorf("the owner reference's %s %s is kept once per Deployment", ref.APIVersion, ref.Kind)
	}
}

// An owned.Object is copied whole (DeepCopy copies its status by value): the
// status of a kind the Foo owns holds values only, no pointer, slice or map
// a copy would share.
func TestRolloutHoldsValuesOnly(t *testing.T) {
	st := reflect.TypeOf(Rollout{})
	for i := range st.NumField() {
		switch f := st.Field(i); f.Type.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func:
			t.Errorf("Rollout.%s is a %s: a copy of a cached Deployment would share it", f.Name, f.Type.Kind())
		}
	}
}

// The cache keeps no more of a status than the CRD admits, whatever the API
// server still holds (a Foo bloated before the CRD had its bounds, or under
// an older CRD): the Ready condition and the first 7 others, in their order,
// each message cut to 1024 characters, and no selector longer than 1024. So
// the status the controller computes from it, its Ready beside those, is one
// the CRD admits. Within the bounds a status is kept as it is.
func TestTrimmedFooKeepsNoMoreStatusThanTheCRDAdmits(t *testing.T) {
	others := func(from, to int, message string) []metav1.Condition {
		var out []metav1.Condition
		for i := from; i < to; i++ {
			out = append(out, metav1.Condition{Type: fmt.Sprintf("example.com/Other%d", i), Status: metav1.ConditionTrue,
				Reason: "Other", Message: message})
		}
		return out
	}
	ready := completeFoo(t).Status.Conditions[0]
	kib32, chars1024, chars1025 := strings.Repeat("x", 32768), strings.Repeat("x", 1024), strings.Repeat("x", 1025)
	cut := strings.Repeat("x", 1023) + "…"
	for name, tc := range map[string]struct {
		selector   string
		conditions []metav1.Condition
		want       []metav1.Condition
	}{
		"40 others of 32 KiB around Ready, a selector of 1 MiB": {
			selector:   strings.Repeat("s", 1<<20),
			conditions: slices.Concat(others(0, 20, kib32), []metav1.Condition{ready}, others(20, 40, kib32)),
			want:       slices.Concat(others(0, 7, cut), []metav1.Condition{ready}),
		},
		"8 others and no Ready yet: room is kept for it": {
			conditions: others(0, 8, "x"),
			want:       others(0, 7, "x"),
		},
		"Ready and 7 others of 1024 characters: at the bounds, kept whole": {
			conditions: slices.Concat([]metav1.Condition{ready}, others(0, 7, chars1024)),
			want:       slices.Concat([]metav1.Condition{ready}, others(0, 7, chars1024)),
		},
		"one message of 1025 characters": {
			conditions: slices.Concat([]metav1.Condition{ready}, others(0, 1, chars1025)),
			want:       slices.Concat([]metav1.Condition{ready}, others(0, 1, cut)),
		},
	} {
		t.Run(name, func(t *testing.T) {
			foo := completeFoo(t)
			if tc.selector != "" {
				foo.Status.Selector = tc.selector
			}
			foo.Status.Conditions = tc.conditions
			want := completeFoo(t).Status
			if tc.selector != "" {
				want.Selector = ""
			}
			want.Conditions = tc.want
			if got := trimmedFoo(t, foo).Status; !reflect.DeepEqual(got, want) {
				t.Errorf("trimmed status:\n%s", diff.Diff(want, got))
			}
		})
	}
}
