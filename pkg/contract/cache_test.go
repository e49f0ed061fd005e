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

package contract

import (
	"reflect"
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

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	samplescheme "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/scheme"
)

// completeDeployment is ownedDeployment as a cluster serves it, with what
// others add: the API server (managedFields, creationTimestamp), kubectl
// (annotations), the deployment controller (a revision, conditions), another
// team (a label, a sidecar, an owner), and the pod template's defaults.
func completeDeployment(t *testing.T, foo *samplev1alpha1.Foo) *appsv1.Deployment {
	t.Helper()
	d := ownedDeployment(t, foo)
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
		{Manager: samplev1alpha1.ControllerName, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1",
			Subresource: "status", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}},
	}
	d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%"))}}
	d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
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

// completeFoo is a Foo as the API server serves it after kubectl apply and a
// sync: with annotations, managedFields and the status the controller wrote.
func completeFoo(t *testing.T, name string, replicas int32) *samplev1alpha1.Foo {
	t.Helper()
	foo := newFoo(name, replicas)
	foo.ResourceVersion = "42"
	foo.Generation = 3
	foo.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	foo.Labels = map[string]string{"team": "payments"}
	foo.Annotations = map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"samplecontroller.k8s.io/v1alpha1","kind":"Foo","metadata":{"name":"` + name + `"}}`,
	}
	foo.Finalizers = []string{"example.com/audit"}
	foo.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "samplecontroller.k8s.io/v1alpha1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:deploymentName":{},"f:replicas":{}}}`)}},
	}
	withSyncedStatus(foo, completeDeployment(t, foo))
	foo.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC))
	return foo
}

// trimmedDeployment runs the informer transform on a copy of a Deployment
// (it trims in place).
func trimmedDeployment(t *testing.T, d *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	out, err := TrimForCache(d.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*appsv1.Deployment)
}

// trimmedFoo runs the informer transform on a copy of a Foo (it trims in
// place).
func trimmedFoo(t *testing.T, foo *samplev1alpha1.Foo) *samplev1alpha1.Foo {
	t.Helper()
	out, err := TrimForCache(foo.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	return out.(*samplev1alpha1.Foo)
}

// The drift check finds the same drift, or none, in the cached copy of a
// Deployment as in the Deployment itself.
func TestTrimmedDeploymentDriftsLikeTheOriginal(t *testing.T) {
	foo := newFoo("test", 3)
	for name, tc := range map[string]struct {
		mutate func(*appsv1.Deployment)
		want   string
	}{
		"in sync":                {func(*appsv1.Deployment) {}, ""},
		"replicas changed":       {func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }, "replicas"},
		"replicas unset":         {func(d *appsv1.Deployment) { d.Spec.Replicas = nil }, "replicas"},
		"managed-by label gone":  {func(d *appsv1.Deployment) { delete(d.Labels, samplev1alpha1.LabelManagedBy) }, "labels"},
		"controller label wrong": {func(d *appsv1.Deployment) { d.Labels[samplev1alpha1.LabelController] = "other" }, "labels"},
		"selector changed":       {func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels["extra"] = "x" }, "selector"},
		"selector unset":         {func(d *appsv1.Deployment) { d.Spec.Selector = nil }, "selector"},
		"template label gone":    {func(d *appsv1.Deployment) { delete(d.Spec.Template.Labels, samplev1alpha1.LabelApp) }, "template labels"},
		"image changed":          {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "busybox" }, "container nginx"},
		"container renamed":      {func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "web" }, "container nginx"},
		"ours after the sidecar": {func(d *appsv1.Deployment) {
			c := d.Spec.Template.Spec.Containers
			c[0], c[1] = c[1], c[0]
		}, ""},
		"several": {func(d *appsv1.Deployment) {
			d.Spec.Replicas = ptr.To[int32](1)
			delete(d.Labels, samplev1alpha1.LabelApp)
			d.Spec.Template.Spec.Containers[0].Image = "busybox"
		}, "labels,replicas,container nginx"},
	} {
		t.Run(name, func(t *testing.T) {
			d := completeDeployment(t, foo)
			tc.mutate(d)
			desired := DesiredDeployment(foo)
			complete := strings.Join(Drift(desired, d), ",")
			trimmed := strings.Join(Drift(desired, trimmedDeployment(t, d)), ",")
			if complete != tc.want {
				t.Fatalf("the complete Deployment drifts in %q, want %q: the case tests something else", complete, tc.want)
			}
			if trimmed != complete {
				t.Errorf("the trimmed Deployment drifts in %q, the complete one in %q", trimmed, complete)
			}
		})
	}
}

// The Ready condition and the status a Foo gets are the same from the cached
// copy of its Deployment as from the Deployment itself.
func TestTrimmedDeploymentGivesTheSameStatus(t *testing.T) {
	foo := completeFoo(t, "test", 3)
	for name, tc := range map[string]struct {
		mutate func(*appsv1.Deployment)
		want   string // the Ready condition's message, from the complete Deployment
	}{
		"rolled out":            {func(*appsv1.Deployment) {}, "3 of 3 replicas available"},
		"spec not observed yet": {func(d *appsv1.Deployment) { d.Generation = 4 }, "waiting for the deployment controller"},
		"scaling up":            {func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 }, "1 of 3 replicas updated"},
		"old pods terminating":  {func(d *appsv1.Deployment) { d.Status.Replicas = 4 }, "1 old replicas pending termination"},
		"not yet available":     {func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 2 }, "2 of 3 replicas available"},
		"no conditions yet":     {func(d *appsv1.Deployment) { d.Status.Conditions = nil }, "3 of 3 replicas available"},
		"progress deadline exceeded": {func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas = 0
			d.Status.Conditions[1].Status = corev1.ConditionFalse
			d.Status.Conditions[1].Reason = "ProgressDeadlineExceeded"
		}, "rollout exceeded its progress deadline"},
		"progress deadline exceeded, conditions reordered": {func(d *appsv1.Deployment) {
			c := d.Status.Conditions
			c[1].Status = corev1.ConditionFalse
			c[0], c[1] = c[1], c[0]
			d.Status.Conditions = append(c, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue})
		}, "rollout exceeded its progress deadline"},
	} {
		t.Run(name, func(t *testing.T) {
			d := completeDeployment(t, foo)
			tc.mutate(d)
			trimmed := trimmedDeployment(t, d)

			complete := ReadyCondition(foo, d)
			if !strings.Contains(complete.Message, tc.want) {
				t.Fatalf("the complete Deployment gives %q, want %q: the case tests something else", complete.Message, tc.want)
			}
			if got := ReadyCondition(foo, trimmed); got != complete {
				t.Errorf("Ready condition from the trimmed Deployment:\n%+v\nfrom the complete one:\n%+v", got, complete)
			}
			// New conditions are stamped with the time of the call.
			want := DesiredStatus(foo, d, complete)
			if got := DesiredStatus(foo, trimmed, ReadyCondition(foo, trimmed)); !EqualIgnoringTransitionTimes(got, want) {
				t.Errorf("status from the trimmed Deployment differs:\n%s", diff.Diff(want, got))
			}
		})
	}
}

// Which Foo controls a Deployment, if any, reads the same on the cached copy:
// for the event handlers, the controller-UID index, the ownership check and
// the problem reported when the name is taken.
func TestTrimmedDeploymentKeepsItsController(t *testing.T) {
	foo := newFoo("test", 1)
	for name, mutate := range map[string]func(*appsv1.Deployment){
		"controlled by the Foo, among other owners": func(*appsv1.Deployment) {},
		"controlled by another Foo": func(d *appsv1.Deployment) {
			d.OwnerReferences[1].Name, d.OwnerReferences[1].UID = "other", "uid-other"
		},
		"controlled by a ReplicaSet": func(d *appsv1.Deployment) {
			d.OwnerReferences[1] = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: "uid-x", Controller: ptr.To(true)}
		},
		"owned, not controlled": func(d *appsv1.Deployment) { d.OwnerReferences[1].Controller = nil },
		"no owner":              func(d *appsv1.Deployment) { d.OwnerReferences = nil },
	} {
		t.Run(name, func(t *testing.T) {
			d := completeDeployment(t, foo)
			mutate(d)
			trimmed := trimmedDeployment(t, d)

			if got, want := metav1.IsControlledBy(trimmed, foo), metav1.IsControlledBy(d, foo); got != want {
				t.Errorf("controlled by the Foo: %v for the trimmed Deployment, %v for the complete one", got, want)
			}
			got, _ := DeploymentIndexers()[DeploymentByControllingFoo](trimmed)
			want, _ := DeploymentIndexers()[DeploymentByControllingFoo](d)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("indexed under %q, the complete one under %q", got, want)
			}
			if got, want := NameTakenProblem(trimmed).Message, NameTakenProblem(d).Message; got != want {
				t.Errorf("name taken: %q, the complete one %q", got, want)
			}
			if got, want := cache.MetaObjectToName(trimmed), cache.MetaObjectToName(d); got != want {
				t.Errorf("cache key %v, want %v", got, want)
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
		mutate func(*samplev1alpha1.Foo)
		write  bool // whether the complete Foo's status needs a write
	}{
		"in sync":          {func(*samplev1alpha1.Foo) {}, false},
		"replicas changed": {func(f *samplev1alpha1.Foo) { f.Spec.Replicas = ptr.To[int32](5); f.Generation++ }, true},
		"replicas unset":   {func(f *samplev1alpha1.Foo) { f.Spec.Replicas = nil }, true},
		"invalid spec":     {func(f *samplev1alpha1.Foo) { f.Spec.Replicas = ptr.To[int32](11) }, true},
		"renamed":          {func(f *samplev1alpha1.Foo) { f.Spec.DeploymentName = "renamed" }, false},
		"long name":        {func(f *samplev1alpha1.Foo) { f.Name = strings.Repeat("a", 100) }, true},
		"no status yet":    {func(f *samplev1alpha1.Foo) { f.Status = samplev1alpha1.FooStatus{} }, true},
	} {
		t.Run(name, func(t *testing.T) {
			foo := completeFoo(t, "test", 3)
			d := completeDeployment(t, foo)
			tc.mutate(foo)
			trimmed := trimmedFoo(t, foo)

			if got, want := DesiredDeployment(trimmed), DesiredDeployment(foo); !reflect.DeepEqual(got, want) {
				t.Errorf("desired Deployment differs:\n%s", diff.Diff(want, got))
			}
			if got, want := ValidateSpec(&trimmed.Spec).ToAggregate(), ValidateSpec(&foo.Spec).ToAggregate(); !reflect.DeepEqual(got, want) {
				t.Errorf("spec validation: %v, the complete Foo %v", got, want)
			}
			want := DesiredStatus(foo, d, ReadyCondition(foo, d))
			got := DesiredStatus(trimmed, d, ReadyCondition(trimmed, d))
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
			gotIndex, _ := FooIndexers()[FooByDeploymentName](trimmed)
			wantIndex, _ := FooIndexers()[FooByDeploymentName](foo)
			if !reflect.DeepEqual(gotIndex, wantIndex) {
				t.Errorf("indexed under %q, the complete Foo under %q", gotIndex, wantIndex)
			}
			if got, want := cache.MetaObjectToName(trimmed), cache.MetaObjectToName(foo); got != want {
				t.Errorf("cache key %v, want %v", got, want)
			}
		})
	}
}

// The cache keeps of a Deployment exactly the fields the controller reads:
// no annotations, managedFields, timestamps, other owners, pod template
// beyond labels and container names and images, condition details.
func TestTrimmedDeploymentHoldsOnlyWhatTheControllerReads(t *testing.T) {
	foo := newFoo("test", 3)
	labels := map[string]string{
		samplev1alpha1.LabelApp:        "nginx",
		samplev1alpha1.LabelController: "test",
	}
	want := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "test-deployment",
			Namespace:       metav1.NamespaceDefault,
			UID:             "uid-test-deployment",
			ResourceVersion: "7",
			Generation:      3,
			Labels: map[string]string{
				samplev1alpha1.LabelApp:        "nginx",
				samplev1alpha1.LabelController: "test",
				samplev1alpha1.LabelManagedBy:  samplev1alpha1.ControllerName,
				"team":                         "payments",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: samplev1alpha1.SchemeGroupVersion.String(),
				Kind:       "Foo",
				Name:       "test",
				UID:        "uid-test",
				Controller: ptr.To(true),
			}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: ContainerName, Image: ContainerImage},
					{Name: "log-shipper", Image: "fluent-bit:3"},
				}},
			},
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 3,
			Replicas:           3,
			UpdatedReplicas:    3,
			AvailableReplicas:  3,
			Conditions:         []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue}},
		},
	}
	if got := trimmedDeployment(t, completeDeployment(t, foo)); !reflect.DeepEqual(got, want) {
		t.Errorf("trimmed Deployment:\n%s", diff.Diff(want, got))
	}
}

// The cache keeps of a Foo exactly the fields the controller reads: no
// TypeMeta, labels, annotations, managedFields, finalizers, timestamps.
func TestTrimmedFooHoldsOnlyWhatTheControllerReads(t *testing.T) {
	foo := completeFoo(t, "test", 3)
	want := &samplev1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "test",
			Namespace:       metav1.NamespaceDefault,
			UID:             "uid-test",
			ResourceVersion: "42",
			Generation:      3,
		},
		Spec: samplev1alpha1.FooSpec{DeploymentName: "test-deployment", Replicas: ptr.To[int32](3)},
		Status: samplev1alpha1.FooStatus{
			AvailableReplicas:  3,
			Replicas:           3,
			Selector:           "app=nginx,controller=test",
			ObservedGeneration: 3,
			Conditions: []metav1.Condition{{
				Type:               samplev1alpha1.ConditionReady,
				Status:             metav1.ConditionTrue,
				ObservedGeneration: 3,
				LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)),
				Reason:             samplev1alpha1.ReasonAvailable,
				Message:            "Deployment test-deployment: 3 of 3 replicas available",
			}},
		},
	}
	if got := trimmedFoo(t, foo); !reflect.DeepEqual(got, want) {
		t.Errorf("trimmed Foo:\n%s", diff.Diff(want, got))
	}
}

// Trimming a trimmed object changes nothing: client-go may pass an object
// through the transform twice (a watch-list's initial sync does).
func TestTrimForCacheIsIdempotent(t *testing.T) {
	foo := completeFoo(t, "test", 3)
	withoutOwner := completeDeployment(t, foo)
	withoutOwner.OwnerReferences = nil
	for name, obj := range map[string]interface{ DeepCopyObject() runtime.Object }{
		"Deployment":               completeDeployment(t, foo),
		"Deployment without owner": withoutOwner,
		"empty Deployment":         &appsv1.Deployment{},
		"Foo":                      foo,
		"empty Foo":                &samplev1alpha1.Foo{},
	} {
		t.Run(name, func(t *testing.T) {
			once, err := TrimForCache(obj.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			twice, err := TrimForCache(once.(runtime.Object).DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(once, twice) {
				t.Errorf("trimmed twice differs from trimmed once:\n%s", diff.Diff(once, twice))
			}
		})
	}
}

// The transform trims the object it is given rather than return a copy: the
// watch-list initial sync transforms every object twice while the first
// results are still held, and copies would double the memory at that moment.
func TestTrimForCacheTrimsInPlace(t *testing.T) {
	foo := completeFoo(t, "test", 3)
	d := completeDeployment(t, foo)
	for name, obj := range map[string]metav1.Object{"Deployment": d, "Foo": foo} {
		t.Run(name, func(t *testing.T) {
			out, err := TrimForCache(obj)
			if err != nil {
				t.Fatal(err)
			}
			if out != obj {
				t.Error("the transform returned a copy, not the object it was given")
			}
			if obj.GetAnnotations() != nil || obj.GetManagedFields() != nil {
				t.Errorf("the object given was not trimmed: annotations %v, %d managedFields entries",
					obj.GetAnnotations(), len(obj.GetManagedFields()))
			}
		})
	}
}

// Anything but a Deployment or a Foo passes through unchanged, tombstones
// included: their object was trimmed when it entered the cache.
func TestTrimForCachePassesOtherObjectsThrough(t *testing.T) {
	d := completeDeployment(t, newFoo("test", 1))
	tombstone := cache.DeletedFinalStateUnknown{Key: "default/test-deployment", Obj: d}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"a": "b"}}}
	for name, obj := range map[string]interface{}{
		"tombstone":       tombstone,
		"other type":      pod,
		"nil Deployment":  (*appsv1.Deployment)(nil),
		"nil Foo":         (*samplev1alpha1.Foo)(nil),
		"not an object":   "not an object",
		"untyped nil":     nil,
		"Deployment list": &appsv1.DeploymentList{Items: []appsv1.Deployment{*d}},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := TrimForCache(obj)
			if err != nil {
				t.Fatal(err)
			}
			if out != obj {
				t.Errorf("got %#v, want the input unchanged", out)
			}
		})
	}
	if tombstone.Obj.(*appsv1.Deployment).Annotations == nil || pod.Annotations["a"] != "b" {
		t.Error("a passed-through object was modified")
	}
}

// The cache keeps one map for a Deployment's selector and pod labels when
// they are equal, and the label strings every managed Deployment has once,
// not once per Deployment; different labels stay apart.
func TestTrimmedDeploymentSharesEqualLabels(t *testing.T) {
	foo := newFoo("test", 1)
	a := trimmedDeployment(t, completeDeployment(t, foo))
	b := trimmedDeployment(t, completeDeployment(t, foo))
	if reflect.ValueOf(a.Spec.Selector.MatchLabels).UnsafePointer() != reflect.ValueOf(a.Spec.Template.Labels).UnsafePointer() {
		t.Error("the selector and the pod template's labels are equal but kept in two maps")
	}
	for k := range a.Labels {
		if unsafe.StringData(k) != unsafe.StringData(keyOf(b.Labels, k)) {
			t.Errorf("label key %q is kept once per Deployment", k)
		}
	}
	if unsafe.StringData(a.Namespace) != unsafe.StringData(b.Namespace) {
		t.Error("the namespace is kept once per Deployment")
	}

	other := completeDeployment(t, foo)
	other.Spec.Template.Labels["tier"] = "web"
	c := trimmedDeployment(t, other)
	if reflect.ValueOf(c.Spec.Selector.MatchLabels).UnsafePointer() == reflect.ValueOf(c.Spec.Template.Labels).UnsafePointer() {
		t.Error("different selector and pod labels share a map")
	}
	if want := map[string]string{samplev1alpha1.LabelApp: "nginx", samplev1alpha1.LabelController: "test"}; !reflect.DeepEqual(c.Spec.Selector.MatchLabels, want) {
		t.Errorf("selector %v, want %v", c.Spec.Selector.MatchLabels, want)
	}
}

// keyOf returns the key of m equal to k, as m stores it.
func keyOf(m map[string]string, k string) string {
	for key := range m {
		if key == k {
			return key
		}
	}
	return ""
}
