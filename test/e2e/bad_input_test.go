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

// Bad input gets a clear answer, and nothing is lost: what the CRD can say is
// rejected at admission, with a message naming the field; what only the
// controller can know is reported on the Foo, once.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

func TestInvalidFoosAreRejectedAtAdmission(t *testing.T) {
	ns := newNamespace(t, "bad-input")
	ensureStandardCRD(t)
	long := strings.Repeat("a", 254)
	// Each row: the spec a user writes, and what kubectl tells them.
	for name, tc := range map[string]struct {
		spec string
		want []string
	}{
		"replicas 0 is below the minimum": {"deployment: {name: web}\nreplicas: 0",
			[]string{"spec.replicas", "should be greater than or equal to 1"}},
		"replicas 11 is above the maximum": {"deployment: {name: web}\nreplicas: 11",
			[]string{"spec.replicas", "should be less than or equal to 10"}},
		"replicas -1 is below the minimum": {"deployment: {name: web}\nreplicas: -1",
			[]string{"spec.replicas", "should be greater than or equal to 1"}},
		"replicas x is not a number": {`deployment: {name: web}` + "\n" + `replicas: "x"`,
			[]string{"spec.replicas", "must be of type integer"}},
		"replicas 2147483648 does not fit int32": {"deployment: {name: web}\nreplicas: 2147483648",
			[]string{"spec.replicas", "should be less than or equal to 10"}},
		"replicas 1.5 is not an integer": {"deployment: {name: web}\nreplicas: 1.5",
			[]string{"spec.replicas", "must be of type integer"}},
		"deployment missing": {"replicas: 1",
			[]string{"spec.deployment", "Required value"}},
		"deployment name missing": {"deployment: {}",
			[]string{"spec.deployment.name", "Required value"}},
		"deployment name empty": {`deployment: {name: ""}`,
			[]string{"spec.deployment.name", "should be at least 1 chars long"}},
		"deployment name Bad_Name is no DNS-1123 subdomain": {"deployment: {name: Bad_Name}",
			[]string{"spec.deployment.name", "should match"}},
		"deployment name a..b is no DNS-1123 subdomain": {"deployment: {name: a..b}",
			[]string{"spec.deployment.name", "should match"}},
		"deployment name ABC is not lower case": {"deployment: {name: ABC}",
			[]string{"spec.deployment.name", "should match"}},
		"deployment name of 254 characters is too long": {"deployment: {name: " + long + "}",
			[]string{"spec.deployment.name", "Too long: may not be more than 253"}},
		"an unknown spec field": {"deployment: {name: web}\ncolour: blue",
			[]string{`unknown field "spec.colour"`}},
		"spec missing": {"",
			[]string{"spec", "Required value"}},
	} {
		t.Run(name, func(t *testing.T) {
			fooName := "rejected-" + strings.NewReplacer(" ", "-").Replace(strings.ToLower(name))
			fooName = fooName[:min(len(fooName), 63)]
			// kubectl validates strictly by default: the API server
			// answers unknown fields with an error, not a warning.
			out := kubectlFails(t, rawFooManifest(ns, fooName, tc.spec), "create", "--validate=strict", "-f", "-")
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl's answer lacks %q:\n%s", want, out)
				}
			}
			if _, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Get(context.Background(), fooName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("rejected Foo %s exists (err %v)", fooName, err)
			}
		})
	}
}

// A Foo asking for a name that is taken, by a Deployment no Foo owns or by
// another Foo's, is Ready=False with one Warning event, and the Deployment
// holding the name is never touched.
func TestFoosAskingForTakenNamesAreRefusedWithoutTouchingTheOwner(t *testing.T) {
	ns := newNamespace(t, "taken")
	ensureStandardCRD(t)
	startController(t, "controller", controllerArgs(ns)...)

	if _, err := cluster.Kube.AppsV1().Deployments(ns).Create(context.Background(), unmanagedDeployment(ns, "foreign", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := createFoo(t, newFoo(ns, "owner", "owned", int32p(1)))
	waitManagedDeployment(t, ns, "owned", owner)
	waitFooReady(t, ns, owner.Name)
	// Both holders rolled out, so that only a write of ours could change
	// them from here on.
	resourceVersions := map[string]string{}
	eventually(t, convergeTimeout, "both holders rolled out", func(ctx context.Context) (bool, error) {
		for _, holder := range []string{"foreign", "owned"} {
			d, err := getDeployment(ctx, ns, holder)
			if err != nil || !rolledOut(d) {
				return false, err
			}
			resourceVersions[holder] = d.ResourceVersion
		}
		return true, nil
	})

	for name, tc := range map[string]struct {
		holder  string
		message string
	}{
		"a Deployment of no Foo":   {"foreign", `Deployment "foreign" already exists and is not managed by this Foo (it is controlled by no Foo)`},
		"another Foo's Deployment": {"owned", `Deployment "owned" already exists and is not managed by this Foo (it is controlled by Foo "owner")`},
	} {
		t.Run(name, func(t *testing.T) {
			foo := createFoo(t, newFoo(ns, "wants-"+tc.holder, tc.holder, int32p(2)))
			foo = waitFooNotReady(t, ns, foo.Name, samplecontroller.ReasonResourceExists)
			if msg := readyCondition(foo).Message; msg != tc.message {
				t.Errorf("Ready message %q, want %q", msg, tc.message)
			}
			waitEvent(t, foo, samplecontroller.ReasonResourceExists)
		})
	}
	// Meanwhile both refused Foos are retried with backoff: still one event
	// each, and neither holder changed.
	consistently(t, 3*time.Second, "one Warning event per refused Foo, holders unchanged", func(ctx context.Context) error {
		for holder, rv := range resourceVersions {
			d, err := getDeployment(ctx, ns, holder)
			if err != nil {
				return err
			}
			if d.ResourceVersion != rv {
				return fmt.Errorf("Deployment %s changed: resourceVersion %s, was %s", holder, d.ResourceVersion, rv)
			}
		}
		return nil
	})
	for _, holder := range []string{"foreign", "owned"} {
		expectOneEvent(t, getFoo(t, ns, "wants-"+holder), corev1.EventTypeWarning, samplecontroller.ReasonResourceExists)
	}
}
