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

package names

import (
	"flag"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kube-samples/sample-controller/pkg/certauthority"
	"github.com/kube-samples/sample-controller/pkg/metrics"
	"github.com/kube-samples/sample-controller/pkg/options"
)

// The revoke-now command of docs/api-versions.md annotates the deployed CA
// Secret, in the Deployment's namespace, with the annotation the controller
// acts on; the docs name the annotations, the event's reason and the metric
// as pkg/certauthority and pkg/metrics define them. A name out of step and the
// documented command does nothing.
func TestWebhookCADocsNameWhatTheControllerReads(t *testing.T) {
	o := options.AddFlags(flag.NewFlagSet("controller", flag.ContinueOnError))
	var d appsv1.Deployment
	decode(t, "deployment.yaml", &d)
	command := "kubectl -n " + d.Namespace + " annotate secret " + o.Webhook.CASecretName + " --overwrite \\\n  " +
		certauthority.RevokeAnnotation + "="
	check := func(page string, wants ...string) {
		t.Helper()
		text, err := os.ReadFile("../../docs/" + page)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range wants {
			if !strings.Contains(string(text), want) {
				t.Errorf("docs/%s does not say %q", page, want)
			}
		}
	}
	check("operations.md", "`"+metrics.WebhookForeignCAs.FQName()+"`")
	check("api-versions.md", command, `index .metadata.annotations "`+certauthority.RevokedAnnotation+`"`,
		"`"+certauthority.RevokeAnnotation+"`", "`"+certauthority.RevokingAnnotation+"`",
		"`"+certauthority.RevokedAnnotation+"`", "`"+certauthority.ReasonForeignCA+"`",
		"`"+metrics.WebhookForeignCAs.FQName()+"`")
	check("security.md", "`"+certauthority.RevokeAnnotation+"`", "`"+certauthority.ReasonForeignCA+"`")
	check("monitoring.md", "`"+metrics.WebhookForeignCAs.FQName()+"`")
}
