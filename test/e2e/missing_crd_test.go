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
	"testing"
	"time"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// Without the CRD the controller says what to do and exits non-zero.
// Deleting the CRD deletes every Foo in the cluster: the tests run one at a
// time, so no other test has Foos then, and the CRD is put back when this one
// ends.
func TestWithoutCRDControllerExitsNonZeroSayingWhatToDo(t *testing.T) {
	ns := newNamespace(t, "missing-crd")
	restoreStandardCRDAtEnd(t)
	deleteCRD(t)

	c := startController(t, "controller", controllerArgs(ns)...)
	expectExitSaying(t, c, time.Minute, samplecontroller.FooCRDName, "kubectl apply -f "+crdManifest)
}
