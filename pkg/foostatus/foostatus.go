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

// Package foostatus writes a Foo's status: what the controller observed, or the problem the Foo's user has to
// resolve. Upstream's updateFooStatus replaces the status with an update; production needs more of it, each for a
// reason said where it is done: the write is a JSON patch conditional on the Foo read (a stale status is refused, not
// written over a newer one), made only when the status differs, remembered until the cache shows it
// (pkg/expectations), and a status an outdated CRD prunes is reported once, not rewritten on every sync.
package foostatus

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/pkg/expectations"
	samplev1beta1client "github.com/kube-samples/sample-controller/pkg/generated/clientset/versioned/typed/samplecontroller/v1beta1"
)

// Writer writes the status of Foos.
type Writer struct {
	// Client writes the status subresource, signed by the controller's field manager.
	Client samplev1beta1client.FoosGetter
	// Expectations keep the writes until the cache shows them, and the statuses the API server pruned.
	Expectations *expectations.Foos
	// Recorder records the Warning events of problems and pruned statuses on the Foo.
	Recorder record.EventRecorder
}

// ReportProblem records a problem the user has to resolve: Ready=False with its reason and message in status, and a
// Warning event the first time this problem is seen, after a successful status write only (a write refused 409 is
// retried on fresh data, which already shows the problem reported). It returns the problem itself when retrying can
// help (problem.Retry), to be retried with backoff.
func (w *Writer) ReportProblem(ctx context.Context, foo *samplev1beta1.Foo, problem *desired.Problem) error {
	ready := desired.NotReady(problem.Reason, problem.Message)
	prev := meta.FindStatusCondition(foo.Status.Conditions, samplecontroller.ConditionReady)
	isNew := prev == nil || prev.Status != ready.Status || prev.Reason != ready.Reason || prev.Message != ready.Message
	written, err := w.Update(ctx, foo, desired.StatusFor(foo, nil, ready))
	if err != nil {
		return err
	}
	if written && isNew {
		klog.FromContext(ctx).Info("Foo cannot be reconciled", "reason", problem.Reason, "message", problem.Message)
		w.Recorder.Event(foo, corev1.EventTypeWarning, problem.Reason, problem.Message)
	}
	if problem.Retry {
		return problem
	}
	return nil
}

// Update writes status unless the Foo has it, and says whether it wrote. A JSON patch conditional on the Foo's
// resourceVersion (desired.StatusPatch), not an update: a stale status is refused 409, not written over a newer one,
// and the write is remembered until the cache shows it (pkg/expectations).
func (w *Writer) Update(ctx context.Context, foo *samplev1beta1.Foo,
	status samplev1beta1.FooStatus) (bool, error) {
	if write, err := w.Expectations.StatusToWrite(foo, status); !write || err != nil {
		return false, err
	}
	patch, err := desired.StatusPatch(foo.ResourceVersion, status)
	if err != nil {
		return false, err
	}
	updated, err := w.Client.Foos(foo.Namespace).Patch(ctx, foo.Name,
		types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: samplecontroller.ControllerName}, "status")
	if apierrors.IsNotFound(err) {
		klog.FromContext(ctx).V(2).Info("Foo deleted meanwhile, not syncing it until the cache shows it")
		w.Expectations.Deleted.Add(foo.UID)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if pruned := w.Expectations.WroteStatus(foo, status, updated); pruned != nil {
		// Pruned by an outdated CRD: said once per Foo, not rewritten.
		klog.FromContext(ctx).Error(nil, "Foo status pruned by the API server",
			"fields", pruned, "crd", samplecontroller.FooCRDName)
		w.Recorder.Event(foo, corev1.EventTypeWarning, samplecontroller.ReasonStatusPruned,
			expectations.PrunedStatusMessage(pruned))
	}
	return true, nil
}
