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

// RefusedProblem is a write (action: "create", "update" or "delete") of an
// object the Foo owns, of any kind, that the API server refused for a reason
// its user must address (owned.IsRefused): a quota exceeded, an admission
// webhook or policy that denies it, missing permission, a namespace being
// deleted. The ReplicaSet controller reports such refusals as FailedCreate;
// the reason is the Foo's equivalent for the action. The Foo is retried with
// backoff, so it converges once the cause is gone.
func RefusedProblem(action, kind, name string, err error) *Problem {
	reason := map[string]string{
		"create": samplecontroller.ReasonFailedCreate,
		"update": samplecontroller.ReasonFailedUpdate,
		"delete": samplecontroller.ReasonFailedDelete,
	}[action]
	return &Problem{
		Reason:  reason,
		Message: fmt.Sprintf("Cannot %s %s %s: %v", action, kind, name, err),
		Retry:   true,
	}
}

// Refused is err, the error of a write (action: "create", "update" or
// "delete") of an object the Foo owns: its RefusedProblem when the API
// server refused it for a reason the Foo's user must address
// (owned.IsRefused), err itself otherwise.
func Refused(action, kind, name string, err error) error {
	if owned.IsRefused(err) {
		return RefusedProblem(action, kind, name, err)
	}
	return err
}

// NameTakenProblem is an object the Foo asks for that exists and is not
// controlled by the Foo: it is never modified. It is retried with backoff:
// the name may be freed by someone the controller does not watch.
func NameTakenProblem(kind string, object metav1.Object) *Problem {
	owner := "no Foo"
	if ref := owned.ControllerRef(object, samplecontroller.FooGroupKind); ref != nil {
		owner = fmt.Sprintf("Foo %q", ref.Name)
	}
	return &Problem{
		Reason: samplecontroller.ReasonResourceExists,
		Message: fmt.Sprintf("%s %q already exists and is not managed by this Foo (it is controlled by %s)",
			kind, object.GetName(), owner),
		Retry: true,
	}
}
