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
	"testing"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
)

// What finding drift costs a sync: of a Deployment as desired (most syncs,
// the values' text compared), and of one whose image drifted (the values
// compared by the schema, which names the field), beside the floor every
// sync pays, building the desired state. They report; they assert nothing.
// Run:
//
//	go test -run '^$' -bench DeploymentDrift ./pkg/desired
//
// docs/performance.md has the figures.
func BenchmarkDeploymentDrift(b *testing.B) {
	foo := testfixtures.NewFoo("test", 2)
	asDesired := CacheDeployment(testfixtures.OwnedDeployment(b, foo))
	drifted := testfixtures.OwnedDeployment(b, foo)
	drifted.Spec.Template.Spec.Containers[0].Image = "busybox"
	imageDrifted := CacheDeployment(drifted)
	b.Run("floor: the desired state", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = DeploymentFor(foo)
		}
	})
	for name, cached := range map[string]*CachedDeployment{"as desired": asDesired, "image drifted": imageDrifted} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DeploymentDrift(DeploymentFor(foo), cached); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
