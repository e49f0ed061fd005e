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
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
)

// deploymentFixturesFile is written by the controller package's unit test
// TestDeploymentFixturesAreCurrent, which keeps it equal to what
// newDeployment returns for each valid seed of the FuzzNewDeployment corpus.
// The fuzz target checks the mapping with apimachinery's validation; here the
// real API server judges the same Deployments.
const deploymentFixturesFile = "testdata/deployment-fixtures.json"

// deploymentFixture is an entry of deploymentFixturesFile.
type deploymentFixture struct {
	Seed       string              `json:"seed"`
	Foo        *samplev1alpha1.Foo `json:"foo"`
	Deployment json.RawMessage     `json:"deployment"`
}

// The Deployment the controller asks for, for every valid seed of the fuzz
// corpus (long and dotted names, 1 and 10 replicas, the default), is
// accepted by the API server both ways the controller sends it: as the
// object of a create, and as the body of a forced server-side apply. Dry run:
// the API server validates and admits, and stores nothing.
func TestAPIServerAcceptsMappedDeployments(t *testing.T) {
	fixtures := readDeploymentFixtures(t)
	ns := newNamespace(t, "mapping")
	dryRun := []string{metav1.DryRunAll}
	deployments := cluster.Kube.AppsV1().Deployments(ns)
	for _, fixture := range fixtures {
		t.Run(fixture.Seed, func(t *testing.T) {
			// The Foo lived in another namespace when the fixture was
			// made; a Foo's Deployment is in the Foo's namespace.
			foo := fixture.Foo
			foo.Namespace = ns
			var object appsv1.Deployment
			var apply appsv1ac.DeploymentApplyConfiguration
			for _, into := range []interface{}{&object, &apply} {
				if err := json.Unmarshal(fixture.Deployment, into); err != nil {
					t.Fatal(err)
				}
			}
			object.Namespace = ns
			apply.WithNamespace(ns)

			created, err := deployments.Create(context.Background(), &object, metav1.CreateOptions{
				DryRun:          dryRun,
				FieldManager:    samplev1alpha1.ControllerName,
				FieldValidation: metav1.FieldValidationStrict,
			})
			if err != nil {
				t.Fatalf("create refused: %v", err)
			}
			if err := checkManagedDeployment(created, foo); err != nil {
				t.Errorf("create: %v", err)
			}

			applied, err := deployments.Apply(context.Background(), &apply, metav1.ApplyOptions{
				DryRun:       dryRun,
				FieldManager: samplev1alpha1.ControllerName,
				Force:        true,
			})
			if err != nil {
				t.Fatalf("apply refused: %v", err)
			}
			if err := checkManagedDeployment(applied, foo); err != nil {
				t.Errorf("apply: %v", err)
			}
		})
	}
	// Dry run means nothing was stored.
	list, err := deployments.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("dry runs stored %d Deployments in %s", len(list.Items), ns)
	}
}

func readDeploymentFixtures(t *testing.T) []deploymentFixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cluster.Root, deploymentFixturesFile))
	if err != nil {
		t.Fatal(err)
	}
	var fixtures []deploymentFixture
	if err := json.Unmarshal(data, &fixtures); err != nil {
		t.Fatalf("%s: %v", deploymentFixturesFile, err)
	}
	if len(fixtures) == 0 {
		t.Fatalf("%s has no fixtures", deploymentFixturesFile)
	}
	return fixtures
}
