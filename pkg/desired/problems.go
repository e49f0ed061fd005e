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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// Problem is why a Foo cannot be reconciled, in words for the Foo's user: its
// Reason and Message become the Ready=False condition and one Warning event.
// Retry says whether retrying (with backoff) can help.
type Problem struct {
	Reason  string
	Message string
	Retry   bool
}

func (p *Problem) Error() string { return p.Message }

// InvalidSpecProblem is a spec the controller cannot act on. Retrying cannot
// help; the next change to the spec queues the Foo again.
func InvalidSpecProblem(errs field.ErrorList) *Problem {
	return &Problem{
		Reason:  samplecontroller.ReasonInvalidSpec,
		Message: fmt.Sprintf("Invalid spec: %v", errs.ToAggregate()),
	}
}

// NameTakenProblem is a requested Deployment that exists and is not
// controlled by the Foo. It is retried with backoff: the name may be freed by
// someone the controller does not watch.
func NameTakenProblem(deployment metav1.Object) *Problem {
	owner := "no Foo"
	if ref := owned.ControllerRef(deployment, samplecontroller.FooGroupKind); ref != nil {
		owner = fmt.Sprintf("Foo %q", ref.Name)
	}
	return &Problem{
		Reason: samplecontroller.ReasonResourceExists,
		Message: fmt.Sprintf("Deployment %q already exists and is not managed by this Foo (it is controlled by %s)",
			deployment.GetName(), owner),
		Retry: true,
	}
}

// ProblemIfRefused returns a Problem when err is the API server refusing a
// write of the Foo's Deployment for a reason its user must address: a quota
// exceeded, an admission webhook or policy that denies it, missing
// permission, a namespace being deleted. The ReplicaSet controller reports
// such refusals as FailedCreate; reason is the Foo's equivalent. The Foo is
// retried with backoff, so it converges once the cause is gone.
//
// Any other error (a timeout, throttling, a conflict) is passing: it is
// returned unchanged, to be retried without bothering the user.
func ProblemIfRefused(reason, action, deploymentName string, err error) error {
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
		return err
	}
	return &Problem{
		Reason:  reason,
		Message: fmt.Sprintf("Cannot %s Deployment %s: %v", action, deploymentName, err),
		Retry:   true,
	}
}
