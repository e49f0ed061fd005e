//go:build e2e

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

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/reference"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/eventrecorder"
	samplescheme "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/scheme"
)

// Enough of each message of the own-events policy
// (artifacts/deploy/events-policy.yaml) to tell which rule refused.
const (
	ownEventsAboutRefusal = "writes Events about Foos, in the Foo's namespace, and about its Secret " +
		samplecontroller.WebhookCASecretName + ", in its own namespace, alone"
	ownEventsReporterRefusal = "reports its Events as " + samplecontroller.ControllerName + " alone"
	ownEventsOthersRefusal   = "patches its own Events alone"
	ownEventsKeptRefusal     = "not the object an Event is about nor who reports it"
)

// expectOwnEventsAlone checks the own-events policy, in force, with saKube,
// a client of the deployed ServiceAccount, whose ClusterRole lets it create
// and patch Events in every namespace: about a Foo or its CA Secret, as the
// controller's recorders write them, admitted; about anything else, or
// elsewhere, or reported as another component, refused; of its own Events,
// a patch of the count admitted (client-go's recorder, for real), one of
// what an Event is about or who reports it refused; another component's
// Event refused. Dry runs but the recorder's. Without the policy every
// refusal below is admitted, as RBAC allows it; the case through
// events.k8s.io, which RBAC refuses the account, is tried with a wider
// role bound.
func expectOwnEventsAlone(t *testing.T, saKube kubernetes.Interface) {
	ctx := context.Background()
	waitPolicyChecked(t, samplecontroller.OwnEventsPolicyName)
	waitOwnEventsPolicyInForce(t, saKube)
	ns := newNamespace(t, "own-events")

	// The references client-go's recorder makes, from the scheme the
	// controller records with (its own types and client-go's).
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(samplescheme.AddToScheme(scheme))
	foo := newFoo(ns, "events-foo", "events-foo", nil)
	foo.UID = types.UID("00000000-0000-0000-0000-0000000000f0")
	caSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: deployNamespace, Name: samplecontroller.WebhookCASecretName}}
	ref := func(object runtime.Object) corev1.ObjectReference {
		r, err := reference.GetReference(scheme, object)
		if err != nil {
			t.Fatal(err)
		}
		return *r
	}
	// event is an Event in ns about what, reported as client-go's recorder
	// of component does.
	event := func(ns string, about corev1.ObjectReference, component string) *corev1.Event {
		now := metav1.NewTime(time.Now())
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: about.Name + "."},
			InvolvedObject: about, Type: corev1.EventTypeWarning, Reason: "PolicyProbe", Message: "probe",
			FirstTimestamp: now, LastTimestamp: now, Count: 1,
			Source: corev1.EventSource{Component: component}, ReportingController: component,
		}
	}
	// elsewhere is e with what the API server asks of an Event that is not
	// in its object's namespace, as the events.k8s.io API writes them: an
	// eventTime, an action and a reporting instance. Without, it refuses
	// such an Event as invalid before any policy sees it.
	elsewhere := func(e *corev1.Event) *corev1.Event {
		e.EventTime, e.Action, e.ReportingInstance = metav1.NewMicroTime(time.Now()), "Probe", e.ReportingController+"-0"
		return e
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	create := func(e *corev1.Event) error {
		_, err := saKube.CoreV1().Events(e.Namespace).Create(ctx, e, dryRun)
		return err
	}
	const controller, kubelet = samplecontroller.ControllerName, "kubelet"
	node := ref(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-node-0"}})
	reportedElsewhere := event(ns, ref(foo), controller)
	reportedElsewhere.ReportingController = kubelet

	refused := []struct {
		what    string
		err     error
		message string
	}{
		{"a Warning about Node " + node.Name + " in kube-system",
			create(elsewhere(event("kube-system", node, controller))), ownEventsAboutRefusal},
		{"an Event about Foo " + ns + "/" + foo.Name + " in kube-system",
			create(elsewhere(event("kube-system", ref(foo), controller))), ownEventsAboutRefusal},
		{"an Event about Pod " + ns + "/web-0",
			create(event(ns, ref(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}}), controller)),
			ownEventsAboutRefusal},
		{"an Event about Secret " + deployNamespace + "/planted",
			create(event(deployNamespace, ref(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: deployNamespace,
				Name: "planted"}}), controller)), ownEventsAboutRefusal},
		// Its name in another namespace is not its Secret.
		{"an Event about Secret " + ns + "/" + caSecret.Name,
			create(event(ns, ref(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: caSecret.Name}}),
				controller)), ownEventsAboutRefusal},
		{"an Event about a Foo reported as the " + kubelet, create(event(ns, ref(foo), kubelet)), ownEventsReporterRefusal},
		{"an Event about a Foo with reportingComponent " + kubelet, create(reportedElsewhere), ownEventsReporterRefusal},
	}
	for _, r := range refused {
		if problem := refusalBy(samplecontroller.OwnEventsPolicyName, r.err, r.message); problem != nil {
			t.Errorf("create %s as %s: %v", r.what, deployServiceAccount, problem)
		}
	}
	// Admitted, as the controller writes them (dry runs).
	for _, a := range []struct {
		what string
		err  error
	}{
		{"an Event about Foo " + ns + "/" + foo.Name, create(event(ns, ref(foo), controller))},
		{"an Event about Secret " + deployNamespace + "/" + caSecret.Name, create(event(deployNamespace, ref(caSecret), controller))},
	} {
		if a.err != nil {
			t.Errorf("create %s as %s: %v, want it admitted", a.what, deployServiceAccount, a.err)
		}
	}

	// Patches. Its own: the controller's recorder, with the token, records
	// one event twice, which it creates and then patches to count 2; a
	// refused patch would leave it at 1 (the recorder logs and gives up).
	recorder := eventrecorder.New(ctx, saKube.CoreV1(), scheme, controller, 0, nil)
	for range 2 {
		recorder.Event(foo, corev1.EventTypeNormal, "PolicyProbe", "repeated")
	}
	recorder.Shutdown(ctx, convergeTimeout)
	waitEventCount(t, foo, "PolicyProbe", "repeated", 2)
	events, err := fooEvents(ctx, ns, string(foo.UID), "PolicyProbe")
	if err != nil {
		t.Fatal(err)
	}
	own := events[0].Name
	// Another component's, written by an administrator.
	kubelets, err := cluster.Kube.CoreV1().Events(ns).Create(ctx, event(ns, ref(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"}}), kubelet), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := func(name, patch string) error {
		_, err := saKube.CoreV1().Events(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	for _, r := range []struct {
		what    string
		err     error
		message string
	}{
		{"the count of the " + kubelet + "'s Event " + kubelets.Name, patch(kubelets.Name, `{"count":2}`), ownEventsOthersRefusal},
		{"its own Event " + own + " to be about Pod " + ns + "/web-0",
			patch(own, `{"involvedObject":{"apiVersion":"v1","kind":"Pod","name":"web-0","uid":null}}`), ownEventsKeptRefusal},
		{"its own Event " + own + " to be reported as the " + kubelet,
			patch(own, `{"source":{"component":"`+kubelet+`"},"reportingComponent":"`+kubelet+`"}`), ownEventsKeptRefusal},
	} {
		if problem := refusalBy(samplecontroller.OwnEventsPolicyName, r.err, r.message); problem != nil {
			t.Errorf("patch %s as %s: %v", r.what, deployServiceAccount, problem)
		}
	}

	// events.k8s.io serves the same Events; RBAC does not grant it the
	// account, and were a wider role to, matchPolicy Equivalent has the
	// policy judge its writes too, converted to core/v1.
	bindWiderRole(t, "wider-events", rbacv1.PolicyRule{
		APIGroups: []string{eventsv1.GroupName}, Resources: []string{"events"}, Verbs: []string{"create"}})
	aboutNode := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: node.Name + ".probe"},
		EventTime:  metav1.NewMicroTime(time.Now()), Regarding: node, Type: corev1.EventTypeWarning,
		Reason: "PolicyProbe", Action: "Probe", Note: "probe",
		ReportingController: controller, ReportingInstance: controller + "-0",
	}
	eventually(t, convergeTimeout, "an events.k8s.io Event about Node "+node.Name+" refused by the policy, not RBAC",
		func(ctx context.Context) (bool, error) {
			_, err := saKube.EventsV1().Events("kube-system").Create(ctx, aboutNode, dryRun)
			if apierrors.IsForbidden(err) && refusalBy(samplecontroller.OwnEventsPolicyName, err, "") != nil {
				return false, err
			}
			if problem := refusalBy(samplecontroller.OwnEventsPolicyName, err, ownEventsAboutRefusal); problem != nil {
				t.Errorf("create through %s an Event about Node %s in kube-system as %s with a wider role: %v",
					eventsv1.GroupName, node.Name, deployServiceAccount, problem)
			}
			return true, nil
		})
}

// waitOwnEventsPolicyInForce waits until the API server enforces the
// own-events policy on saKube, a client of the controller's ServiceAccount,
// probing with a dry run of an Event the policy refuses (about a Node),
// which stores nothing until then.
func waitOwnEventsPolicyInForce(t *testing.T, saKube kubernetes.Interface) {
	t.Helper()
	eventually(t, convergeTimeout, "policy "+samplecontroller.OwnEventsPolicyName+" in force", func(ctx context.Context) (bool, error) {
		_, err := saKube.CoreV1().Events(metav1.NamespaceDefault).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "policy-probe."},
			InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: "policy-probe"},
			Source:         corev1.EventSource{Component: samplecontroller.ControllerName},
		}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if problem := refusalBy(samplecontroller.OwnEventsPolicyName, err, ownEventsAboutRefusal); problem != nil {
			return false, problem
		}
		return true, nil
	})
}
