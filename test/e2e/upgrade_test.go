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
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kube-samples/sample-controller/pkg/apicheck"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1alpha1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1alpha1"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/conversion"
	"github.com/kube-samples/sample-controller/pkg/desired"
	"github.com/kube-samples/sample-controller/test/framework"
)

// v1alpha1Release is the last commit of the release that served Foo
// v1alpha1 alone: what a cluster upgrades from.
const v1alpha1Release = "13d657f88df608b8d44c63b5b1abce36c25e3cd7"

// upgradeFoos is how many Foos the release makes before the upgrade: users
// change foo-0 in v1alpha1 and foo-1 in v1beta1 while it rolls out, a change
// after it goes to foo-2, and foo-3 stays stored in v1alpha1 until the
// migration.
const upgradeFoos = 4

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
	release, err := cluster.StartReleaseController(releaseBin, logDir, t.Name()+"-release", upgradeArgs(ns)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release.Kill)
	createFoosUnderRelease(t, ns)
	expectStored(t, ns, "v1alpha1")
	deploymentsBefore := deploymentsOf(t, ns)

	// The upgrade, rolled as `kubectl apply -k` rolls it: the CRD first,
	// then a new replica started beside the release, which still leads;
	// then the release stops and the new replica takes over. Users change
	// Foos in both versions throughout. The release serves no webhook, so
	// from the CRD's change until a new replica serves it, a change needs a
	// conversion no one makes and is refused; after that, none may be. The
	// new replica is in the webhook's Service only once ready, and it can
	// be ready only if its list of Foos, which needs that very webhook,
	// does not hold it back (conversionwebhook.SelfWait). It runs to the end: the
	// migration needs its webhook.
	parent := t
	var replicas []*framework.Controller
	if !t.Run("upgrade", func(t *testing.T) {
		putCRD(t, standardCRD(t))
		waitStandardCRD(t)
		changes := startUserChanges(t, ns)
		started := time.Now()
		c := startControllerFor(parent, t, "controller", upgradeArgs(ns, "-resync-period=5s")...)
		replicas = append(replicas, c)
		served := changes.waitAccepted(t, c)
		t.Logf("changes were refused for %v after the new replica started, until it served the webhook",
			served.Sub(started).Round(100*time.Millisecond))
		changes.expectAccepted(t, "with the release leading and the new replica beside it", served)

		if err := release.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if _, err := release.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		changes.expectAccepted(t, "after the release stopped", stopped)
		last := changes.stop(t)

		waitControllerReady(t, c)
		expectFoosAsLastChanged(t, ns, "after the upgrade", last)
		expectZeroWritesAtRest(t, c)
		expectNotRecreated(t, deploymentsBefore, deploymentsOf(t, ns))
		// Status goes on: a change made after the upgrade is reported.
		updateFoo(t, ns, "foo-2", func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(2) })
		waitFoo(t, ns, "foo-2", "2 available replicas", func(f *samplev1beta1.Foo) bool {
			return f.Status.AvailableReplicas == 2 && isReady(f) && f.Status.ObservedGeneration == f.Generation
		})
		deploymentsBefore = deploymentsOf(t, ns)
	}) {
		return
	}

	// Every replica restarted at once, as a node drain or two OOM kills do,
	// while a Foo is still stored in v1alpha1: the replicas come back by
	// themselves, though each must serve the webhook before any can list.
	// The API server restarts while none runs, so that its watch cache,
	// which would otherwise still hold the Foos it converted, must list
	// them from etcd, through the webhook, like the replicas.
	if !t.Run("restart every replica", func(t *testing.T) {
		expectStoredFoo(t, ns, "foo-3", "v1alpha1")
		second := startControllerFor(parent, t, "controller-2", upgradeArgs(ns, "-resync-period=5s")...)
		waitControllerReady(t, second)
		for _, c := range append(replicas, second) {
			c.Kill()
		}
		if os.Getenv("E2E_KUBECONFIG") == "" { // a control plane of the suite's own
			if err := cluster.KillComponent("kube-apiserver"); err != nil {
				t.Fatal(err)
			}
			if err := cluster.StartComponent("kube-apiserver"); err != nil {
				t.Fatal(err)
			}
		}
		replicas = []*framework.Controller{
			startControllerFor(parent, t, "controller-3", upgradeArgs(ns, "-resync-period=5s")...),
			startControllerFor(parent, t, "controller-4", upgradeArgs(ns, "-resync-period=5s")...),
		}
		for _, c := range replicas {
			waitControllerReady(t, c)
		}
		ctx := context.Background()
		beta, err := cluster.Sample.SamplecontrollerV1beta1().Foos(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(beta.Items) != upgradeFoos {
			t.Errorf("v1beta1 list after the restart: %v, %d Foos, want %d", err, len(beta.Items), upgradeFoos)
		}
		alpha, err := cluster.Sample.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(alpha.Items) != upgradeFoos {
			t.Errorf("v1alpha1 list after the restart: %v, %d Foos, want %d", err, len(alpha.Items), upgradeFoos)
		}
		updateFoo(t, ns, "foo-3", func(f *samplev1beta1.Foo) { f.Spec.Replicas = int32p(1) })
		waitFoo(t, ns, "foo-3", "1 available replica", func(f *samplev1beta1.Foo) bool {
			return f.Status.AvailableReplicas == 1 && isReady(f) && f.Status.ObservedGeneration == f.Generation
		})
		waitSettled(t, ns)
		for _, c := range replicas {
			expectZeroWritesAtRest(t, c)
		}
		expectNotRecreated(t, deploymentsBefore, deploymentsOf(t, ns))
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
		expectNotRecreated(t, deploymentsBefore, deploymentsOf(t, ns))
	})
}

// createFoosUnderRelease creates the upgrade's Foos in v1alpha1, foo-i asking
// for Deployment web-i of i+1 replicas, and waits until the release has
// made each Ready; foo-3's Deployment then as this release makes it.
func createFoosUnderRelease(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
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
	makeDeploymentAsThisReleaseWould(t, ns, fmt.Sprintf("foo-%d", upgradeFoos-1))
}

// makeDeploymentAsThisReleaseWould applies to the Deployment of the Foo
// name, made by the release, what this release's controller asks of it
// (desired.DeploymentFor, but for the owner reference the release wrote),
// as another manager, and waits for the rollout and the Foo's status under
// the release. Upgraded, the controller then finds none of it drifted and
// writes neither the Deployment nor the Foo, which stays stored in v1alpha1
// until the migration. Otherwise a field this release sets and the release
// did not (the pods' automountServiceAccountToken) rolls the Deployment out
// again after the upgrade, and the status write that reports it stores the
// Foo in v1beta1.
func makeDeploymentAsThisReleaseWould(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	foo, err := alphaFoos(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := desired.DeploymentFor(conversion.V1alpha1ToHub(foo))
	want.OwnerReferences = nil
	deployments := cluster.Kube.AppsV1().Deployments(ns)
	if _, err := deployments.Apply(ctx, want, metav1.ApplyOptions{FieldManager: "e2e-upgrade", Force: true}); err != nil {
		t.Fatal(err)
	}
	replicas := *foo.Spec.Replicas
	eventually(t, convergeTimeout, name+"'s Deployment rolled out under the release", func(ctx context.Context) (bool, error) {
		d, err := deployments.Get(ctx, *want.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.Replicas == replicas && s.UpdatedReplicas == replicas &&
			s.AvailableReplicas == replicas, nil
	})
	eventually(t, convergeTimeout, name+" Ready under the release after the rollout", func(ctx context.Context) (bool, error) {
		foo, err := alphaFoos(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready := slices.ContainsFunc(foo.Status.Conditions, func(c metav1.Condition) bool {
			return c.Type == samplecontroller.ConditionReady && c.Status == metav1.ConditionTrue
		})
		return ready && foo.Status.AvailableReplicas == replicas, nil
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
		expectStoredFoo(t, ns, fmt.Sprintf("foo-%d", i), version)
	}
}

// expectStoredFoo: etcd holds the Foo ns/name in version.
func expectStoredFoo(t *testing.T, ns, name, version string) {
	t.Helper()
	key := fmt.Sprintf("/registry/%s/%s/%s/%s", samplecontroller.GroupName, samplecontroller.FooResource, ns, name)
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

// waitSettled waits until the Deployment of every Foo of the upgrade has
// rolled out and every Foo says so, Ready at its generation with every
// replica available, so that no write of the controller's is still to come;
// it returns the Foos, foo-0 first.
func waitSettled(t *testing.T, ns string) []*samplev1beta1.Foo {
	t.Helper()
	foos := make([]*samplev1beta1.Foo, 0, upgradeFoos)
	for i := range upgradeFoos {
		eventually(t, convergeTimeout, fmt.Sprintf("web-%d rolled out", i), func(ctx context.Context) (bool, error) {
			d, err := getDeployment(ctx, ns, fmt.Sprintf("web-%d", i))
			return err == nil && rolledOut(d), err
		})
		foos = append(foos, waitFoo(t, ns, fmt.Sprintf("foo-%d", i), "Ready at its generation, every replica available",
			func(f *samplev1beta1.Foo) bool {
				return isReady(f) && f.Status.ObservedGeneration == f.Generation &&
					f.Status.AvailableReplicas == specReplicas(f)
			}))
	}
	return foos
}

// expectFoosAsLastChanged waits until every Foo of the upgrade has settled
// (waitSettled) and checks each: still asking for its own Deployment, at
// the replicas the user last changed it to (last, as stop returns it) or
// else those it was made with, and without a Warning event.
func expectFoosAsLastChanged(t *testing.T, ns, when string, last map[string]int32) {
	t.Helper()
	for i, foo := range waitSettled(t, ns) {
		replicas := int32(i + 1)
		if r, changed := last[foo.Name]; changed {
			replicas = r
		}
		if foo.Spec.Deployment.Name != fmt.Sprintf("web-%d", i) || specReplicas(foo) != replicas {
			t.Errorf("%s %s: %s, want deployment web-%d and %d replicas", foo.Name, when, describeFoo(foo), i, replicas)
		}
		if warnings := warningEvents(t, ns, foo); len(warnings) > 0 {
			t.Errorf("%s: Warning events %s: %s", foo.Name, when, describeEvents(warnings))
		}
	}
}

// expectNotRecreated: every Deployment of before is there after, the same
// object (its UID), whatever was written to it.
func expectNotRecreated(t *testing.T, before, after map[string]metav1.ObjectMeta) {
	t.Helper()
	if len(after) != len(before) {
		t.Errorf("%d Deployments, was %d", len(after), len(before))
	}
	for name, b := range before {
		if a, ok := after[name]; !ok {
			t.Errorf("Deployment %s gone", name)
		} else if a.UID != b.UID {
			t.Errorf("Deployment %s re-created (UID %s, was %s)", name, a.UID, b.UID)
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
// controller sends no write request but its Lease renewals. Those are
// updates (PUT), once a retry period while it leads; every write of the
// controller's own is a create, a patch or a delete (server-side apply, the
// status patch, Events) or, for the webhook's CA Secret, an update made
// only when the CA is created or renewed, never at rest.
func expectZeroWritesAtRest(t *testing.T, c *framework.Controller) {
	t.Helper()
	expectZeroWritesAtRestOf(t, c.MetricsURL())
}

// expectZeroWritesAtRestOf is expectZeroWritesAtRest of the controller
// serving metricsURL (a URL ScrapeURL knows).
func expectZeroWritesAtRestOf(t *testing.T, metricsURL string) {
	t.Helper()
	writesButRenewals := func(samples []framework.Sample) float64 {
		return writeRequests(samples) - framework.Sum(samples, "rest_client_requests_total",
			func(l map[string]string) bool { return l["method"] == http.MethodPut })
	}
	before := scrapeURL(t, metricsURL)
	writes := writesButRenewals(before)
	consistently(t, 12*time.Second, "no write requests at rest but Lease renewals", func(ctx context.Context) error {
		samples, err := framework.ScrapeURL(ctx, metricsURL)
		if err != nil {
			return err
		}
		if got := writesButRenewals(samples); got != writes {
			return fmt.Errorf("write requests but PUTs went from %v (%v) to %v (%v)",
				writes, writeBreakdown(before), got, writeBreakdown(samples))
		}
		return nil
	})
}

// upgradeArgs are the flags of a replica in the upgrade: confined to ns,
// and competing for the one Lease there with the release and each other.
func upgradeArgs(ns string, extra ...string) []string {
	return append([]string{"-namespace=" + ns, "-leader-elect=true", "-leader-elect-namespace=" + ns,
		"-leader-elect-retry-period=1s"}, extra...)
}

// changeRounds is how many changes in each version must be accepted in a
// row, with none refused, for a phase of the upgrade to pass.
const changeRounds = 10

// userChanges is a user who changes Foos in both versions all through the
// upgrade: foo-0's replicas in v1alpha1 and foo-1's in v1beta1, in turn,
// each a merge patch, as `kubectl scale` or `kubectl patch` sends.
type userChanges struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	changes []change
}

// change is one change the user tried: when it was sent, in which version,
// to what, and what came back.
type change struct {
	sent     time.Time
	version  string
	foo      string
	replicas int32
	err      error
}

func startUserChanges(t *testing.T, ns string) *userChanges {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	u := &userChanges{cancel: cancel, done: make(chan struct{})}
	t.Cleanup(func() { u.cancel(); <-u.done })
	go func() {
		defer close(u.done)
		for i := 0; ctx.Err() == nil; i++ {
			c := change{sent: time.Now(), replicas: int32(i/2%3 + 1)}
			patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, c.replicas))
			reqCtx, cancelReq := context.WithTimeout(ctx, 30*time.Second)
			if i%2 == 0 {
				c.version, c.foo = "v1alpha1", "foo-0"
				_, c.err = alphaFoos(ns).Patch(reqCtx, c.foo, types.MergePatchType, patch, metav1.PatchOptions{})
			} else {
				c.version, c.foo = "v1beta1", "foo-1"
				_, c.err = cluster.Sample.SamplecontrollerV1beta1().Foos(ns).Patch(reqCtx, c.foo,
					types.MergePatchType, patch, metav1.PatchOptions{})
			}
			cancelReq()
			if ctx.Err() != nil {
				return // the last may have been cut short by stop
			}
			u.mu.Lock()
			u.changes = append(u.changes, c)
			u.mu.Unlock()
			time.Sleep(250 * time.Millisecond)
		}
	}()
	return u
}

// waitAccepted waits until a change in each version has been accepted, and
// returns when the first was sent; it fails if c exits first.
func (u *userChanges) waitAccepted(t *testing.T, c *framework.Controller) time.Time {
	t.Helper()
	var first time.Time
	eventually(t, convergeTimeout, "a change accepted in each version", func(context.Context) (bool, error) {
		if c.Exited() {
			return false, fmt.Errorf("%s exited: %s", c.Name, framework.Trim(c.Log(), 2000))
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		accepted := map[string]bool{}
		var last error
		for _, ch := range u.changes {
			if ch.err != nil {
				last = ch.err
				continue
			}
			if first.IsZero() {
				first = ch.sent
			}
			accepted[ch.version] = true
		}
		if len(accepted) < 2 {
			return false, fmt.Errorf("accepted in %v; the last refused: %v", accepted, last)
		}
		return true, nil
	})
	return first
}

// expectAccepted waits until changeRounds changes in each version were sent
// after since, and fails on any of those refused.
func (u *userChanges) expectAccepted(t *testing.T, what string, since time.Time) {
	t.Helper()
	var refused []string
	eventually(t, convergeTimeout, fmt.Sprintf("%d changes in each version %s", changeRounds, what),
		func(context.Context) (bool, error) {
			u.mu.Lock()
			defer u.mu.Unlock()
			sent := map[string]int{}
			refused = nil
			for _, ch := range u.changes {
				if ch.sent.Before(since) {
					continue
				}
				if ch.err != nil {
					refused = append(refused, fmt.Sprintf("%s %s to %d replicas: %v",
						ch.version, ch.foo, ch.replicas, ch.err))
				}
				sent[ch.version]++
			}
			if len(refused) > 0 || sent["v1alpha1"] >= changeRounds && sent["v1beta1"] >= changeRounds {
				return true, nil
			}
			return false, fmt.Errorf("sent %v", sent)
		})
	if len(refused) > 0 {
		t.Errorf("changes %s were refused:\n%s", what, strings.Join(refused, "\n"))
	}
}

// stop stops the user and returns the replicas each Foo was last changed to.
func (u *userChanges) stop(t *testing.T) map[string]int32 {
	t.Helper()
	u.cancel()
	<-u.done
	u.mu.Lock()
	defer u.mu.Unlock()
	last := map[string]int32{}
	for _, ch := range u.changes {
		if ch.err == nil {
			last[ch.foo] = ch.replicas
		}
	}
	return last
}
