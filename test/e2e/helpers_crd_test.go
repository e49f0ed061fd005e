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

// The Foo CRD: the standard one users install, its variants, and waits for
// the API server to serve what it says.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
)

// crdManifest is the CRD a user installs, relative to the repository root
// (kubectl runs there).
const crdManifest = "artifacts/examples/crd.yaml"

// caBundlePath is where a CRD holds the CA its conversion webhook is
// trusted through.
var caBundlePath = []string{"spec", "conversion", "webhook", "clientConfig", "caBundle"}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crds is the dynamic client for CustomResourceDefinitions (the module does
// not depend on the apiextensions clientset).
func crds(t *testing.T) dynamic.ResourceInterface {
	t.Helper()
	client, err := dynamic.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	return client.Resource(crdGVR)
}

// standardCRD returns artifacts/examples/crd.yaml, the CRD users install.
func standardCRD(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	crd := crdFromFile(t, filepath.Join(cluster.Root, crdManifest))
	if crd.GetName() != samplecontroller.FooCRDName {
		t.Fatalf("%s holds %q, not %s", crdManifest, crd.GetName(), samplecontroller.FooCRDName)
	}
	// The API server reaches the conversion webhook through the suite's
	// stand-in for its Service, on 127.0.0.1, as a local run does (hack/run.sh).
	url, err := cluster.WebhookURL()
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringMap(crd.Object, map[string]string{"url": url},
		"spec", "conversion", "webhook", "clientConfig"); err != nil {
		t.Fatal(err)
	}
	return crd
}

// crdFromFile reads a CRD manifest.
func crdFromFile(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := utilyaml.ToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := crd.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return crd
}

// editFooVersion lets edit change the CRD's version the controller speaks
// (v1beta1) in place.
func editFooVersion(t *testing.T, crd *unstructured.Unstructured, edit func(version map[string]interface{})) {
	t.Helper()
	versions, found, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil || !found {
		t.Fatalf("%s: no versions (err=%v)", crdManifest, err)
	}
	edited := false
	for _, v := range versions {
		if version := v.(map[string]interface{}); version["name"] == samplev1beta1.SchemeGroupVersion.Version {
			edit(version)
			edited = true
		}
	}
	if !edited {
		t.Fatalf("%s: no version %s", crdManifest, samplev1beta1.SchemeGroupVersion.Version)
	}
	if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
		t.Fatal(err)
	}
}

// putCRD makes the Foo CRD's spec what desired says: it creates the CRD if
// it is missing (waiting out a deletion in progress), else it updates it.
func putCRD(t *testing.T, desired *unstructured.Unstructured) {
	t.Helper()
	client := crds(t)
	eventually(t, 2*convergeTimeout, "the Foo CRD to be written", func(ctx context.Context) (bool, error) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current, err := client.Get(ctx, samplecontroller.FooCRDName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				_, err = client.Create(ctx, desired.DeepCopy(), metav1.CreateOptions{})
				return err
			}
			if err != nil {
				return err
			}
			if current.GetDeletionTimestamp() != nil {
				return fmt.Errorf("CRD %s is being deleted", samplecontroller.FooCRDName)
			}
			updated := current.DeepCopy()
			updated.Object["spec"] = desired.DeepCopy().Object["spec"]
			// The caBundle is the controller's (pkg/certauthority), and
			// stays, as with kubectl apply of a manifest that has none.
			if caBundle, found, _ := unstructured.NestedString(current.Object, caBundlePath...); found {
				if _, set, _ := unstructured.NestedString(desired.Object, caBundlePath...); !set {
					if err := unstructured.SetNestedField(updated.Object, caBundle, caBundlePath...); err != nil {
						return err
					}
				}
			}
			annotations := updated.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			for k, v := range desired.GetAnnotations() {
				annotations[k] = v
			}
			updated.SetAnnotations(annotations)
			_, err = client.Update(ctx, updated, metav1.UpdateOptions{})
			return err
		})
		return err == nil, err
	})
}

// deleteCRD deletes the Foo CRD, and with it every Foo, and waits until the
// API server no longer serves Foos.
func deleteCRD(t *testing.T) {
	t.Helper()
	client := crds(t)
	err := client.Delete(context.Background(), samplecontroller.FooCRDName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, 2*convergeTimeout, "the Foo CRD to be gone", func(ctx context.Context) (bool, error) {
		_, err := client.Get(ctx, samplecontroller.FooCRDName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	waitFooAPI(t, "no Foo API", notServed)
}

// waitCRDEstablished waits until the Foo CRD is Established with the names
// accepted.
func waitCRDEstablished(t *testing.T) {
	t.Helper()
	client := crds(t)
	eventually(t, convergeTimeout, "the Foo CRD to be Established", func(ctx context.Context) (bool, error) {
		crd, err := client.Get(ctx, samplecontroller.FooCRDName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		want := map[string]bool{"Established": false, "NamesAccepted": false}
		for _, c := range conditions {
			c, _ := c.(map[string]interface{})
			if typ, _ := c["type"].(string); c["status"] == "True" {
				if _, ok := want[typ]; ok {
					want[typ] = true
				}
			}
		}
		return want["Established"] && want["NamesAccepted"], nil
	})
}

// waitFooAPI waits until what the cluster serves of the Foo API satisfies
// ok: the resources discovery lists and the published schema, read as the
// controller reads them at start (apicheck.Served). The published OpenAPI
// follows a CRD change a moment after discovery does.
func waitFooAPI(t *testing.T, what string, ok func(api *apicheck.FooAPI) bool) {
	t.Helper()
	eventually(t, convergeTimeout, "the Foo API to show "+what, func(ctx context.Context) (bool, error) {
		api, err := apicheck.Served(ctx, cluster.Kube.Discovery())
		if err != nil {
			return false, err
		}
		return ok(api), nil
	})
}

// withSubresources is the Foo API of the standard CRD: foos with status and
// scale, and nothing missing from the published schema.
func withSubresources(api *apicheck.FooAPI) bool {
	return api.Resources[samplecontroller.FooResource] && len(api.Missing()) == 0
}

// notServed is the Foo API of a cluster without the Foo CRD.
func notServed(api *apicheck.FooAPI) bool {
	return len(api.Resources) == 0
}

// badNameFoo is a Foo that only the standard CRD's schema rejects.
func badNameFoo(ns, name string) *samplev1beta1.Foo {
	return newFoo(ns, name, "Bad_Name", nil)
}

// waitSchemaEnforced waits until the API server validates Foos with the
// given (enforced=true) or a schema-less CRD, probing with a server-side dry
// run: the CRD's storage is rebuilt a moment after the CRD changes.
func waitSchemaEnforced(t *testing.T, enforced bool) {
	t.Helper()
	eventually(t, convergeTimeout, fmt.Sprintf("Foo validation enforced=%v", enforced), func(ctx context.Context) (bool, error) {
		_, err := cluster.Sample.SamplecontrollerV1beta1().Foos(metav1.NamespaceDefault).Create(ctx,
			badNameFoo(metav1.NamespaceDefault, "schema-probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			return !enforced, nil
		case apierrors.IsInvalid(err):
			return enforced, nil
		default:
			return false, err
		}
	})
}

// ensureStandardCRD installs artifacts/examples/crd.yaml unless it is
// already what is served (an identical update changes nothing), and waits
// until Foos are served with its schema and subresources.
func ensureStandardCRD(t *testing.T) {
	t.Helper()
	putCRD(t, standardCRD(t))
	waitStandardCRD(t)
}

// waitStandardCRD waits until the standard CRD is established and in force:
// discovery lists foos with status and scale, and the schema is enforced.
func waitStandardCRD(t *testing.T) {
	t.Helper()
	waitCRDEstablished(t)
	waitFooAPI(t, "foos, foos/status and foos/scale, and the full schema", withSubresources)
	waitSchemaEnforced(t, true)
}

// restoreStandardCRDAtEnd puts the standard CRD back when the test ends,
// however it ends, for the tests that change or delete it.
func restoreStandardCRDAtEnd(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		putCRD(t, standardCRD(t))
		waitStandardCRD(t)
	})
}
