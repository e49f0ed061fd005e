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

package framework

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kube-samples/sample-controller/pkg/clientconfig"
	"github.com/kube-samples/sample-controller/pkg/replicas"
)

// The audit checks recognize the user agents the controller sends, as its
// own code builds them: were they to miss, a check for writes by a replica
// that did not lead would find no write of the controller's at all, and pass.
func TestAuditChecksRecognizeTheControllersUserAgents(t *testing.T) {
	identity, err := replicas.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	sample, kube := clientconfig.ForController(&rest.Config{}, 0, 0, identity)
	for what, agent := range map[string]string{
		"Foo client":        sample.UserAgent,
		"Deployment client": kube.UserAgent,
		"Lease client":      kube.UserAgent + replicas.LeaseUserAgentSuffix,
	} {
		e := AuditEvent{UserAgent: agent}
		e.User.Username = "system:serviceaccount:sc:a"
		if !e.fromController() {
			t.Errorf("%s: user agent %q is not recognized as the controller's", what, agent)
		}
		if got := e.Replica(); got != identity {
			t.Errorf("%s: user agent %q names replica %q, want the Lease identity %q", what, agent, got, identity)
		}
	}
	other := AuditEvent{UserAgent: "kubectl/v1.37.0 (linux/amd64) kubernetes/abcdef0"}
	if other.fromController() {
		t.Errorf("user agent %q is taken for the controller's", other.UserAgent)
	}
}
