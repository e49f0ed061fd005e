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

package docs

import (
	"strings"
	"testing"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// What a user copies to let Prometheus scrape (the projected token's
// audience and path, the CA bundle, the namespace label of the network
// policy) names what the controller checks: a page or a manifest out of
// step with the Go names and the scrape is refused or dropped.
func TestScrapeInstructionsNameTheControllersAudienceCAAndLabel(t *testing.T) {
	const tokenPath = "/var/run/secrets/" + samplecontroller.MetricsAudience + "/token"
	for file, wants := range map[string][]string{
		"docs/monitoring.md": {
			"audience: " + samplecontroller.MetricsAudience + ",",
			"--audience=" + samplecontroller.MetricsAudience,
			"mountPath: /var/run/secrets/" + samplecontroller.MetricsAudience + ",",
			"credentials_file: " + tokenPath,
			"bearerTokenFile: " + tokenPath,
			"configmap " + samplecontroller.MetricsCAConfigMapName + " -o jsonpath='{.data.ca\\." +
				strings.TrimPrefix(samplecontroller.MetricsCAKey, "ca.") + "}'",
			samplecontroller.MetricsScraperNamespaceLabel + "=true",
		},
		"docs/deploying.md":                                  {"kubectl label namespace monitoring " + samplecontroller.MetricsScraperNamespaceLabel + "=true"},
		"artifacts/monitoring/servicemonitor.yaml":           {"bearerTokenFile: " + tokenPath},
		"artifacts/monitoring/prometheus-scrape-config.yaml": {"credentials_file: " + tokenPath},
		"artifacts/deploy/networkpolicy.yaml": {
			"kubectl label namespace monitoring " + samplecontroller.MetricsScraperNamespaceLabel + "=true",
		},
	} {
		text := read(t, file)
		for _, want := range wants {
			if !strings.Contains(text, want) {
				t.Errorf("%s does not say %q", file, want)
			}
		}
	}
}
