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

// The life of an API version: a cluster running the release that served
// v1alpha1 alone is upgraded to the CRD and controller of two versions, its
// stored Foos are migrated to v1beta1, and v1alpha1 is retired, first no
// longer served, then removed from the CRD. Nothing a Foo made is touched on
// the way.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/test/framework"
)

// v1alpha1Release is the last commit of the release that served Foo
// v1alpha1 alone: what a cluster upgrades from.
const v1alpha1Release = "13d657f88df608b8d44c63b5b1abce36c25e3cd7"

// upgradeFoos is how many Foos the release makes before the upgrade.
const upgradeFoos = 3

func TestUpgradeFromV1alpha1ThenMigrateAndRetireIt(t *testing.T) {
	restoreStandardCRDAtEnd(t)
	ctx := context.Background()

	// The release: its controller built from its source, its CRD as it
	// shipped. The CRD of two versions cannot be replaced by one without
	// v1beta1 while etcd may hold v1beta1 Foos: the cluster starts over
	// without the Foo API.
	releaseDir := filepath.Join(outDir, "v1alpha1-release")
	if err := framework.CheckoutRelease(cluster.Root, v1alpha1Release, releaseDir); err != nil {
		t.Fatal(err)
	}
	releaseBin := filepath.Join(outDir, "sample-controller-v1alpha1-release")
	if err := framework.BuildController(releaseDir, releaseBin); err != nil {
		t.Fatal(err)
	}
	deleteCRD(t)
	putCRD(t, crdFromFile(t, filepath.Join(releaseDir, crdManifest)))
	waitCRDEstablished(t)
	waitFooAPI(t, "foos of the release", func(api *apicheck.FooAPI) bool { return len(api.OlderVersions) == 1 })

	ns := newNamespace(t, "upgrade")
	release, err := cluster.StartReleaseController(releaseBin, logDir, t.Name()+"-release", controllerArgs(ns)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release.Kill)
	for i := range upgradeFoos {
		if _, err := alphaFoos(ns).Create(ctx, &samplev1alpha1.Foo{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("foo-%d", i)},
			Spec:       samplev1alpha1.FooSpec{DeploymentName: fmt.Sprintf("web-%d", i), Replicas: int32p(int32(i + 1))},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range upgradeFoos {
		name := fmt.Sprintf("foo-%d", i)
		eventually(t, convergeTimeout, name+" Ready under the release", func(ctx context.Context) (bool, error) {
			foo, err := alphaFoos(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range foo.Status.Conditions {
				if c.Type == samplecontroller.ConditionReady && c.Status == metav1.ConditionTrue {
					return true, nil
				}
			}
			return false, fmt.Errorf("conditions %+v", foo.Status.Conditions)
		})
	}
	expectStored(t, ns, "v1alpha1")
	deploymentsBefore := deploymentsOf(t, ns)

	// The upgrade: the CRD first, then the controller replaced. The new
	// controller runs to the end: the migration needs its webhook.
	parent := t
	if !t.Run("upgrade", func(t *testing.T) {
		putCRD(t, standardCRD(t))
		waitStandardCRD(t)
		if err := release.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if _, err := release.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		c := startControllerFor(parent, t, "controller", controllerArgs(ns, "-resync-period=5s")...)
		waitControllerReady(t, c)
		for i := range upgradeFoos {
			foo := waitFoo(t, ns, fmt.Sprintf("foo-%d", i), "Ready, observed at its generation", func(f *samplev1beta1.Foo) bool {
				return isReady(f) && f.Status.ObservedGeneration == f.Generation
			})
			if foo.Spec.Deployment.Name != fmt.Sprintf("web-%d", i) || specReplicas(foo) != int32(i+1) {
				t.Errorf("%s after the upgrade: %s", foo.Name, describeFoo(foo))
			}
			if warnings := warningEvents(t, ns, foo); len(warnings) > 0 {
				t.Errorf("%s: Warning events after the upgrade: %s", foo.Name, describeEvents(warnings))
			}
		}
		expectZeroWritesAtRest(t, c)
		expectSameDeployments(t, deploymentsBefore, deploymentsOf(t, ns))
		// Status goes on: a change made after the upgrade is reported.
		updateFoo(t, ns, "foo-0", func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(2) })
		waitFoo(t, ns, "foo-0", "2 available replicas", func(f *samplev1beta1.Foo) bool {
			return f.Status.AvailableReplicas == 2 && isReady(f) && f.Status.ObservedGeneration == f.Generation
		})
		deploymentsBefore = deploymentsOf(t, ns)
	}) {
		return
	}

	// Storage migration: every Foo rewritten in v1beta1, and the CRD's
	// storedVersions then v1beta1 alone.
	if !t.Run("migrate", func(t *testing.T) {
		expectStoredVersions(t, "v1alpha1", "v1beta1")
		if servesStorageVersionMigration(t) {
			migrateWithStorageVersionMigration(t)
		} else {
			out, err := cluster.Run("hack/migrate-foos.sh")
			if err != nil {
				t.Fatalf("hack/migrate-foos.sh: %v\n%s", err, out)
			}
		}
		expectStored(t, ns, "v1beta1")
		eventually(t, convergeTimeout, "storedVersions v1beta1 alone", func(context.Context) (bool, error) {
			if got := storedVersions(t); len(got) != 1 || got[0] != "v1beta1" {
				return false, fmt.Errorf("storedVersions %v", got)
			}
			return true, nil
		})
		expectSameDeployments(t, deploymentsBefore, deploymentsOf(t, ns))
	}) {
		return
	}

	// Retirement: v1alpha1 no longer served, then gone from the CRD. The
	// controller, which never spoke it, goes on.
	t.Run("retire", func(t *testing.T) {
		crd := standardCRD(t)
		setVersions(t, crd, func(versions []any) []any {
			for _, v := range versions {
				if v := v.(map[string]any); v["name"] == "v1alpha1" {
					v["served"] = false
				}
			}
			return versions
		})
		putCRD(t, crd)
		eventually(t, convergeTimeout, "v1alpha1 no longer served", func(ctx context.Context) (bool, error) {
			if _, err := alphaFoos(ns).Get(ctx, "foo-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("v1alpha1 get: %v, want NotFound", err)
			}
			return true, nil
		})
		updateFoo(t, ns, "foo-1", func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(1) })
		waitFoo(t, ns, "foo-1", "1 available replica", func(f *samplev1beta1.Foo) bool {
			return f.Status.AvailableReplicas == 1 && isReady(f) && f.Status.ObservedGeneration == f.Generation
		})

		setVersions(t, crd, func(versions []any) []any {
			var kept []any
			for _, v := range versions {
				if v.(map[string]any)["name"] != "v1alpha1" {
					kept = append(kept, v)
				}
			}
			return kept
		})
		putCRD(t, crd)
		waitFooAPI(t, "v1beta1 alone", withSubresources)
		updateFoo(t, ns, "foo-2", func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(1) })
		waitFoo(t, ns, "foo-2", "1 available replica", func(f *samplev1beta1.Foo) bool {
			return f.Status.AvailableReplicas == 1 && isReady(f) && f.Status.ObservedGeneration == f.Generation
		})
		foos, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(foos.Items) != upgradeFoos {
			t.Errorf("%d Foos after v1alpha1 is retired, want %d", len(foos.Items), upgradeFoos)
		}
		after := deploymentsOf(t, ns)
		for name, d := range deploymentsBefore {
			if after[name].UID != d.UID {
				t.Errorf("Deployment %s re-created while v1alpha1 was retired", name)
			}
		}
	})
}

// setVersions replaces the CRD's spec.versions with what edit makes of them.
func setVersions(t *testing.T, crd *unstructured.Unstructured, edit func([]any) []any) {
	t.Helper()
	versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(crd.Object, edit(versions), "spec", "versions"); err != nil {
		t.Fatal(err)
	}
}

// storedVersions is the Foo CRD's status.storedVersions.
func storedVersions(t *testing.T) []string {
	t.Helper()
	crd, err := crds(t).Get(context.Background(), samplecontroller.FooCRDName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	return got
}

func expectStoredVersions(t *testing.T, want ...string) {
	t.Helper()
	if got := storedVersions(t); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("storedVersions %v, want %v", got, want)
	}
}

// expectStored checks the version etcd holds every Foo of ns in.
func expectStored(t *testing.T, ns, version string) {
	t.Helper()
	for i := range upgradeFoos {
		key := fmt.Sprintf("/registry/%s/%s/%s/foo-%d", samplecontroller.GroupName, samplecontroller.FooResource, ns, i)
		data, err := cluster.EtcdValue(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		var stored struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal(data, &stored); err != nil {
			t.Fatalf("etcd %s: %v: %q", key, err, data)
		}
		if want := samplecontroller.GroupName + "/" + version; stored.APIVersion != want {
			t.Errorf("etcd holds %s in %s, want %s", key, stored.APIVersion, want)
		}
	}
}

// servesStorageVersionMigration: whether the cluster serves
// storagemigration.k8s.io/v1 (on by default from Kubernetes 1.37).
func servesStorageVersionMigration(t *testing.T) bool {
	t.Helper()
	_, err := cluster.Kube.Discovery().ServerResourcesForGroupVersion(storagemigrationv1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// migrateWithStorageVersionMigration asks kube-controller-manager to
// rewrite every Foo, and waits until it says it has.
func migrateWithStorageVersionMigration(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	svm := &storagemigrationv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "foos-"},
		Spec: storagemigrationv1.StorageVersionMigrationSpec{
			Resource: metav1.GroupResource{Group: samplecontroller.GroupName, Resource: samplecontroller.FooResource},
		},
	}
	created, err := cluster.Kube.StoragemigrationV1().StorageVersionMigrations().Create(ctx, svm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cluster.Kube.StoragemigrationV1().StorageVersionMigrations().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
	})
	eventually(t, 2*convergeTimeout, "the StorageVersionMigration to succeed", func(ctx context.Context) (bool, error) {
		got, err := cluster.Kube.StoragemigrationV1().StorageVersionMigrations().Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == string(storagemigrationv1.MigrationFailed) && c.Status == metav1.ConditionTrue {
				t.Fatalf("StorageVersionMigration failed: %s", c.Message)
			}
			if c.Type == string(storagemigrationv1.MigrationSucceeded) && c.Status == metav1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
}

// deploymentsOf returns the Deployments of ns by name.
func deploymentsOf(t *testing.T, ns string) map[string]metav1.ObjectMeta {
	t.Helper()
	list, err := cluster.Kube.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]metav1.ObjectMeta{}
	for _, d := range list.Items {
		out[d.Name] = d.ObjectMeta
	}
	return out
}

// expectSameDeployments: not one Deployment re-created, rolled (a new
// generation) or written (a new resourceVersion beyond the status its own
// controller writes, which only a roll-out would bring).
func expectSameDeployments(t *testing.T, before, after map[string]metav1.ObjectMeta) {
	t.Helper()
	if len(after) != len(before) {
		t.Errorf("%d Deployments, was %d", len(after), len(before))
	}
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("Deployment %s gone", name)
		case a.UID != b.UID:
			t.Errorf("Deployment %s re-created (UID %s, was %s)", name, a.UID, b.UID)
		case a.Generation != b.Generation:
			t.Errorf("Deployment %s written: generation %d, was %d", name, a.Generation, b.Generation)
		}
	}
}

// warningEvents are the Warning events of a Foo.
func warningEvents(t *testing.T, ns string, foo *samplev1beta1.Foo) []corev1.Event {
	t.Helper()
	list, err := cluster.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.UID == foo.UID && e.Type == corev1.EventTypeWarning {
			out = append(out, e)
		}
	}
	return out
}

// expectZeroWritesAtRest: over a window of more than two resyncs, the
// controller sends no write request.
func expectZeroWritesAtRest(t *testing.T, c *framework.Controller) {
	t.Helper()
	writes := writeRequests(scrape(t, c))
	consistently(t, 12*time.Second, "no write requests at rest", func(ctx context.Context) error {
		samples, err := framework.ScrapeURL(ctx, c.MetricsURL())
		if err != nil {
			return err
		}
		if got := writeRequests(samples); got != writes {
			return fmt.Errorf("write requests went from %v to %v: %v", writes, got, writeBreakdown(samples))
		}
		return nil
	})
}
