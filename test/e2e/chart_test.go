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

// The Helm chart (artifacts/charts/sample-controller) against the
// manifests it is made from: helm template with the default values renders
// what kubectl kustomize renders, but for the differences hack/helm-chart
// makes on purpose, written out here; and each values combination the chart
// documents (its ci/ files, as chart-testing reads them) passes helm lint and
// renders what it says.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

const (
	// chartDir is the chart, relative to the repository root.
	chartDir = "artifacts/charts/" + samplecontroller.ControllerName
	// monitoringKustomization holds the ServiceMonitor and PrometheusRule
	// the chart installs behind its monitoring values.
	monitoringKustomization = "artifacts/monitoring"
)

var (
	helmOnce  sync.Once
	helmPath  string
	helmBuild error
)

// helm runs the helm the Makefile builds from hack/tools/helm (building it
// if a run of go test alone finds none) against the suite's cluster, in
// the repository root, and returns its output.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runHelm(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func runHelm(args ...string) (string, error) {
	helmOnce.Do(func() {
		helmPath = filepath.Join(cluster.Root, "_output", "bin", "helm")
		if _, err := os.Stat(helmPath); err == nil {
			return
		}
		cmd := exec.Command("make", "-C", cluster.Root, "_output/bin/helm")
		if out, err := cmd.CombinedOutput(); err != nil {
			helmBuild = fmt.Errorf("building helm: %w: %s", err, out)
		}
	})
	if helmBuild != nil {
		return "", helmBuild
	}
	cmd := exec.Command(helmPath, append(args, "--kubeconfig", cluster.Kubeconfig)...)
	cmd.Dir = cluster.Root
	// Helm's caches and registry credentials in the suite's output, not
	// the home of whoever runs it.
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(outDir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(outDir, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(outDir, "helm", "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// decodeObjects reads a stream of YAML documents, by kind/namespace/name.
func decodeObjects(t *testing.T, text string) map[string]*unstructured.Unstructured {
	t.Helper()
	objects := map[string]*unstructured.Unstructured{}
	decoder := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding: %v\n%s", err, text)
		}
		if len(obj.Object) == 0 {
			continue
		}
		key := objectKey(obj)
		if _, dup := objects[key]; dup {
			t.Errorf("%s rendered twice", key)
		}
		objects[key] = obj
	}
	return objects
}

func objectKey(obj *unstructured.Unstructured) string {
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// renderChart is helm template of the chart (chartDir) as a release in the
// shipped namespace, with the values files given.
func renderChart(t *testing.T, values ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	args := make([]string, 0, 5+2*len(values))
	args = append(args, "template", deployName, chartDir, "--namespace", deployNamespace)
	for _, v := range values {
		args = append(args, "--values", v)
	}
	return decodeObjects(t, helm(t, args...))
}

// The chart with its default values renders the objects kubectl apply -k
// artifacts/deploy applies, field for field, but for three differences made
// on purpose (hack/helm-chart says why): no Namespace, the CRD kept on
// helm uninstall, and the own-namespace policy's binding selecting the
// release's namespace by name. With monitoring on, it renders
// artifacts/monitoring's ServiceMonitor and PrometheusRule too.
func TestChartRendersWhatTheManifestsInstall(t *testing.T) {
	want := decodeObjects(t, kubectl(t, "kustomize", deployKustomization))

	ns := "Namespace /" + deployNamespace
	if _, ok := want[ns]; !ok {
		t.Fatalf("kubectl kustomize %s renders no %s", deployKustomization, ns)
	}
	delete(want, ns)
	crd := want["CustomResourceDefinition /"+samplecontroller.FooCRDName]
	crd.SetAnnotations(mergeMaps(crd.GetAnnotations(), map[string]string{"helm.sh/resource-policy": "keep"}))
	binding := want["ValidatingAdmissionPolicyBinding /"+samplecontroller.OwnNamespacePolicyName]
	if err := unstructured.SetNestedStringMap(binding.Object,
		map[string]string{"kubernetes.io/metadata.name": deployNamespace},
		"spec", "matchResources", "namespaceSelector", "matchLabels"); err != nil {
		t.Fatal(err)
	}
	expectSameObjects(t, "helm template (default values)", renderChart(t), want)

	monitoring := decodeObjects(t, kubectl(t, "kustomize", monitoringKustomization))
	got := renderChart(t, filepath.Join(chartDir, "ci", "monitoring-values.yaml"))
	for key, obj := range monitoring {
		if obj.GetKind() != "ServiceMonitor" && obj.GetKind() != "PrometheusRule" {
			continue
		}
		if !reflect.DeepEqual(got[key], obj) {
			t.Errorf("helm template with monitoring on: %s differs from %s's:\n got %v\nwant %v",
				key, monitoringKustomization, got[key], obj)
		}
	}
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// expectSameObjects fails for each object one side has and the other has
// not, and for each that differs, with the fields that differ.
func expectSameObjects(t *testing.T, what string, got, want map[string]*unstructured.Unstructured) {
	t.Helper()
	for _, key := range sortedKeys(want) {
		g, ok := got[key]
		if !ok {
			t.Errorf("%s: no %s", what, key)
			continue
		}
		if !reflect.DeepEqual(g.Object, want[key].Object) {
			t.Errorf("%s: %s differs from the manifests':\n%s", what, key, fieldDiff(g.Object, want[key].Object, ""))
		}
	}
	for _, key := range sortedKeys(got) {
		if _, ok := want[key]; !ok {
			t.Errorf("%s: %s, which the manifests do not have", what, key)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fieldDiff names the paths at which two decoded objects differ.
func fieldDiff(got, want any, path string) string {
	gm, gok := got.(map[string]any)
	wm, wok := want.(map[string]any)
	if gok && wok {
		var b strings.Builder
		keys := map[string]bool{}
		for k := range gm {
			keys[k] = true
		}
		for k := range wm {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			b.WriteString(fieldDiff(gm[k], wm[k], path+"."+k))
		}
		return b.String()
	}
	if reflect.DeepEqual(got, want) {
		return ""
	}
	return fmt.Sprintf("  %s: chart %v, manifests %v\n", path, got, want)
}

// chartCombination is what one documented values combination must render.
type chartCombination struct {
	// present and absent are kind/namespace/name keys.
	present, absent []string
	// args are the controller's arguments, in order.
	args []string
	// image is the controller's image.
	image string
	// servedVersions are the versions the CRD serves.
	servedVersions []string
	// namespaceMode: the ClusterRole grants what is cluster-scoped alone
	// (clusterScoped), and a Role in tenant-a the rest of the manifests'
	// ClusterRole; otherwise the ClusterRole is the manifests'.
	namespaceMode bool
	// replicas, the pods' nodeSelector, and the labels of the namespaces
	// the NetworkPolicy lets scrape: checked where set.
	replicas      int64
	nodeSelector  map[string]string
	scraperLabels map[string]string
}

var (
	defaultArgs = []string{"-leader-elect=true", "-metrics-bind-address=:8443", "-health-probe-bind-address=:8081",
		"-webhook-bind-address=:9443"}
	// clusterScoped are the resources of the controller's ClusterRole that
	// are no namespace's.
	clusterScoped = []string{"customresourcedefinitions", "tokenreviews", "subjectaccessreviews"}
	deploymentKey = "Deployment " + deployNamespace + "/" + deployName
)

// chartCombinations are the chart's ci/ files: each combination
// docs/deploying.md documents, and what it must render.
var chartCombinations = map[string]chartCombination{
	"default-values.yaml": {
		present: []string{
			"NetworkPolicy " + deployNamespace + "/" + deployName,
			"FlowSchema /" + deployLeaseFlowSchema,
			"ValidatingAdmissionPolicy /" + samplecontroller.CRDWritePolicyName,
			"ValidatingAdmissionPolicyBinding /" + samplecontroller.CRDWritePolicyName,
			"Service " + deployNamespace + "/" + deployName + "-webhook",
		},
		absent: []string{
			"ServiceMonitor " + deployNamespace + "/" + deployName,
			"Role " + "tenant-a/" + deployName,
		},
		args:           defaultArgs,
		image:          "sample-controller:latest",
		servedVersions: []string{"v1alpha1", "v1beta1"},
	},
	"namespace-mode-values.yaml": {
		present: []string{"Role tenant-a/" + deployName, "RoleBinding tenant-a/" + deployName},
		args:    append(slices.Clone(defaultArgs), "-namespace=tenant-a"),
		image:   "sample-controller:latest", servedVersions: []string{"v1alpha1", "v1beta1"},
		namespaceMode: true,
	},
	"minimal-values.yaml": {
		absent: []string{
			"NetworkPolicy " + deployNamespace + "/" + deployName,
			"FlowSchema /" + deployLeaseFlowSchema,
			"ValidatingAdmissionPolicy /" + samplecontroller.CRDWritePolicyName,
			"ValidatingAdmissionPolicyBinding /" + samplecontroller.CRDWritePolicyName,
			"ValidatingAdmissionPolicy /" + samplecontroller.OwnNamespacePolicyName,
			"ValidatingAdmissionPolicyBinding /" + samplecontroller.OwnNamespacePolicyName,
			"Service " + deployNamespace + "/" + deployName + "-webhook",
		},
		args: []string{"-leader-elect=true", "-metrics-bind-address=:8443", "-health-probe-bind-address=:8081",
			"-webhook-bind-address=0"},
		image: "sample-controller:latest", servedVersions: []string{"v1beta1"},
	},
	"monitoring-values.yaml": {
		present: []string{
			"ServiceMonitor " + deployNamespace + "/" + deployName,
			"PrometheusRule " + deployNamespace + "/" + deployName,
		},
		args:  defaultArgs,
		image: "sample-controller:latest", servedVersions: []string{"v1alpha1", "v1beta1"},
		scraperLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"},
	},
	"sharded-values.yaml": {
		args: append(slices.Clone(defaultArgs), "-shards=16", "-shard-boundaries=weighted", "-workers=4"),
		image: "registry.example.com/team/sample-controller@" +
			"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		servedVersions: []string{"v1alpha1", "v1beta1"},
		replicas:       3,
		nodeSelector:   map[string]string{"node-role.example.com/controllers": "true"},
	},
}

// Each values combination the chart documents passes helm lint, and renders
// the objects, arguments, image and versions written out for it; with no
// ci/ file left untested, and none tested that the chart does not ship.
func TestChartValuesCombinationsLintAndRender(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(cluster.Root, chartDir, "ci"))
	if err != nil {
		t.Fatal(err)
	}
	files := make([]string, 0, len(entries))
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if want := sortedKeys(chartCombinations); !slices.Equal(files, want) {
		t.Fatalf("the chart's ci/ holds %v; this test checks %v", files, want)
	}
	manifestRole := grantedResources(decodeObjects(t, kubectl(t, "kustomize", deployKustomization))["ClusterRole /"+deployName])
	for _, file := range files {
		want := chartCombinations[file]
		t.Run(file, func(t *testing.T) {
			values := filepath.Join(chartDir, "ci", file)
			helm(t, "lint", "--strict", chartDir, "--values", values)
			got := renderChart(t, values)
			for _, key := range want.present {
				if got[key] == nil {
					t.Errorf("no %s", key)
				}
			}
			for _, key := range want.absent {
				if got[key] != nil {
					t.Errorf("%s, which %s turns off", key, file)
				}
			}
			dep := got[deploymentKey]
			if dep == nil {
				t.Fatalf("no %s", deploymentKey)
			}
			containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
			container := containers[0].(map[string]any)
			if args, _, _ := unstructured.NestedStringSlice(container, "args"); !slices.Equal(args, want.args) {
				t.Errorf("args %q, want %q", args, want.args)
			}
			if image := container["image"]; image != want.image {
				t.Errorf("image %q, want %q", image, want.image)
			}
			crd := got["CustomResourceDefinition /"+samplecontroller.FooCRDName]
			if crd == nil {
				t.Fatalf("no CRD")
			}
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			var served []string
			for _, v := range versions {
				served = append(served, v.(map[string]any)["name"].(string))
			}
			if !slices.Equal(served, want.servedVersions) {
				t.Errorf("the CRD serves %v, want %v", served, want.servedVersions)
			}
			_, conversion, _ := unstructured.NestedMap(crd.Object, "spec", "conversion")
			if conversion != (len(want.servedVersions) > 1) {
				t.Errorf("the CRD has a conversion: %v, with versions %v", conversion, served)
			}
			clusterRole := grantedResources(got["ClusterRole /"+deployName])
			switch {
			case !want.namespaceMode && !slices.Equal(clusterRole, manifestRole):
				t.Errorf("the ClusterRole grants %v, the manifests' %v", clusterRole, manifestRole)
			case want.namespaceMode && !slices.Equal(clusterRole, clusterScoped):
				t.Errorf("the ClusterRole grants %v, want %v", clusterRole, clusterScoped)
			case want.namespaceMode:
				namespaced := slices.DeleteFunc(slices.Clone(manifestRole), func(r string) bool {
					return slices.Contains(clusterScoped, r)
				})
				if role := grantedResources(got["Role tenant-a/"+deployName]); !slices.Equal(role, namespaced) {
					t.Errorf("the Role grants %v, want the manifests' ClusterRole's namespaced %v", role, namespaced)
				}
			}
			if want.replicas != 0 {
				// Decoded from JSON: a number is a float64.
				replicas, _, _ := unstructured.NestedFieldNoCopy(dep.Object, "spec", "replicas")
				if fmt.Sprint(replicas) != fmt.Sprint(want.replicas) {
					t.Errorf("%v replicas, want %d", replicas, want.replicas)
				}
			}
			if want.nodeSelector != nil {
				sel, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "spec", "nodeSelector")
				if !reflect.DeepEqual(sel, want.nodeSelector) {
					t.Errorf("nodeSelector %v, want %v", sel, want.nodeSelector)
				}
			}
			if want.scraperLabels != nil {
				policy := got["NetworkPolicy "+deployNamespace+"/"+deployName]
				ingress, _, _ := unstructured.NestedSlice(policy.Object, "spec", "ingress")
				from, _, _ := unstructured.NestedSlice(ingress[1].(map[string]any), "from")
				labels, _, _ := unstructured.NestedStringMap(from[0].(map[string]any), "namespaceSelector", "matchLabels")
				if !reflect.DeepEqual(labels, want.scraperLabels) {
					t.Errorf("the NetworkPolicy lets scrape the namespaces labelled %v, want %v", labels, want.scraperLabels)
				}
			}
		})
	}
}

// grantedResources are the resources a Role or ClusterRole grants, rule by
// rule; none where there is no role.
func grantedResources(role *unstructured.Unstructured) []string {
	if role == nil {
		return nil
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	var resources []string
	for _, r := range rules {
		rs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
		resources = append(resources, rs...)
	}
	return resources
}

// Values the chart cannot render as a user meant them are refused by helm
// before anything is applied, each with an answer that names the value
// (the chart's values.schema.json): a misspelled key, a wrong type, a flag
// without its dash, a digest that is none.
func TestChartRefusesValuesItCannotRenderWithAClearAnswer(t *testing.T) {
	for set, want := range map[string]string{
		"replica=3":                 "additional properties 'replica' not allowed",
		"replicas=two":              "at '/replicas': got string, want integer",
		"shards=0":                  "at '/shards': minimum: got 0, want 1",
		"shardBoundaries=quantiles": "at '/shardBoundaries'",
		"extraArgs[0]=workers=4":    "at '/extraArgs/0': 'workers=4' does not match pattern '^-'",
		"image.digest=abc":          "at '/image/digest': 'abc' does not match pattern",
		"networkPolicy.apiServerCIDRs[0]=192.0.2.10": "at '/networkPolicy/apiServerCIDRs/0': '192.0.2.10' does not match pattern",
		"leaseQuota=-1":          "at '/leaseQuota': minimum: got -1, want 0",
		"image.pullPolicy=Maybe": "at '/image/pullPolicy'",
		"webhook.enabled=maybe":  "at '/webhook/enabled': got string, want boolean",
	} {
		out, err := runHelm("template", deployName, chartDir, "--set", set)
		if err == nil {
			t.Errorf("helm template --set %s rendered, want it refused", set)
			continue
		}
		if !strings.Contains(out, want) {
			t.Errorf("helm template --set %s: %s, want it to say %q", set, out, want)
		}
	}
}

// networkPolicy.apiServerCIDRs, the operator's word for where the API
// servers are, narrows the NetworkPolicy's egress to those addresses alone,
// on the manifests' ports: one rule, an ipBlock per address, nothing
// excepted. The API server accepts the policy so rendered (a dry run).
// By default the egress is the manifests' (TestChartRendersWhatTheManifestsInstall).
func TestChartNarrowsEgressToTheAPIServersItIsGiven(t *testing.T) {
	key := "NetworkPolicy " + deployNamespace + "/" + deployName
	manifest := decodeObjects(t, kubectl(t, "kustomize", deployKustomization))[key]
	manifestEgress, _, _ := unstructured.NestedSlice(manifest.Object, "spec", "egress")
	if len(manifestEgress) != 1 {
		t.Fatalf("the manifests' %s has egress %v, want one rule", key, manifestEgress)
	}
	wantPorts := manifestEgress[0].(map[string]any)["ports"]
	rendered := decodeObjects(t, helm(t, "template", deployName, chartDir, "--namespace", deployNamespace,
		"--set", "networkPolicy.apiServerCIDRs={192.0.2.10/32,2001:db8::1/128}"))[key]
	if rendered == nil {
		t.Fatalf("no %s", key)
	}
	egress, _, _ := unstructured.NestedSlice(rendered.Object, "spec", "egress")
	want := []any{map[string]any{
		"to": []any{
			map[string]any{"ipBlock": map[string]any{"cidr": "192.0.2.10/32"}},
			map[string]any{"ipBlock": map[string]any{"cidr": "2001:db8::1/128"}},
		},
		"ports": wantPorts,
	}}
	if wantPorts == nil || !reflect.DeepEqual(egress, want) {
		t.Errorf("egress %v, want %v", egress, want)
	}
	ingress, _, _ := unstructured.NestedSlice(rendered.Object, "spec", "ingress")
	if manifestIngress, _, _ := unstructured.NestedSlice(manifest.Object, "spec", "ingress"); !reflect.DeepEqual(ingress, manifestIngress) {
		t.Errorf("ingress %v, want the manifests' %v", ingress, manifestIngress)
	}
	var policy networkingv1.NetworkPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rendered.Object, &policy); err != nil {
		t.Fatal(err)
	}
	policy.Namespace = metav1.NamespaceDefault
	if _, err := cluster.Kube.NetworkingV1().NetworkPolicies(policy.Namespace).Create(context.Background(), &policy,
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the API server refuses the rendered %s: %v", key, err)
	}
}

// leaseQuota sizes the quota of Leases in the release's namespace (its
// default, the manifests': TestChartRendersWhatTheManifestsInstall), for a
// namespace that holds other Leases too; 0 leaves the quota out.
func TestChartSizesTheLeaseQuota(t *testing.T) {
	key := "ResourceQuota " + deployNamespace + "/" + samplecontroller.LeaseQuotaName
	count := func(set string) any {
		quota := decodeObjects(t, helm(t, "template", deployName, chartDir, "--namespace", deployNamespace,
			"--set", set))[key]
		if quota == nil {
			return nil
		}
		hard, _, _ := unstructured.NestedStringMap(quota.Object, "spec", "hard")
		return hard
	}
	if got, want := count("leaseQuota=1000"), map[string]string{"count/leases.coordination.k8s.io": "1000"}; !reflect.DeepEqual(got, want) {
		t.Errorf("with leaseQuota=1000, %s hard %v, want %v", key, got, want)
	}
	if got := count("leaseQuota=0"); got != nil {
		t.Errorf("with leaseQuota=0, %s hard %v, want no quota", key, got)
	}
}

// unconfinedRefusal is what helm answers to admissionPolicies.enabled=false
// alone (hack/helm-chart's unconfinedGuard): both values, and where to read
// what the policies refuse.
const unconfinedRefusal = "admissionPolicies.enabled=false leaves the controller's ServiceAccount confined by " +
	"RBAC alone: a stolen token could write any pod template in any namespace, the Foo CRD's webhook, Secrets " +
	"and Leases of any name. Set admissionPolicies.acknowledgeUnconfined=true as well to install it so; what each " +
	"policy refuses: https://github.com/kube-samples/sample-controller/blob/main/docs/security.md#admission-policies"

// The chart renders without the admission policies only when a second
// value says the operator means it: admissionPolicies.enabled=false alone
// fails with unconfinedRefusal, as a value turned off in passing would
// otherwise leave the token confined by RBAC alone, unseen; with
// admissionPolicies.acknowledgeUnconfined=true too it renders the
// controller and no policy; by default, every policy and binding the
// manifests install.
func TestChartRendersWithoutAdmissionPoliciesOnlyWhenAcknowledged(t *testing.T) {
	policyKeys := func(objects map[string]*unstructured.Unstructured) []string {
		var keys []string
		for key, o := range objects {
			if k := o.GetKind(); k == "ValidatingAdmissionPolicy" || k == "ValidatingAdmissionPolicyBinding" {
				keys = append(keys, key)
			}
		}
		slices.Sort(keys)
		return keys
	}
	manifests := policyKeys(decodeObjects(t, kubectl(t, "kustomize", deployKustomization)))
	for _, name := range []string{samplecontroller.CRDWritePolicyName, samplecontroller.OwnNamespacePolicyName,
		samplecontroller.OwnNamesPolicyName, samplecontroller.OwnEventsPolicyName, samplecontroller.OwnLeasesPolicyName} {
		if !slices.Contains(manifests, "ValidatingAdmissionPolicy /"+name) ||
			!slices.Contains(manifests, "ValidatingAdmissionPolicyBinding /"+name) {
			t.Fatalf("the manifests install %v, without the policy and binding %s", manifests, name)
		}
	}

	out, err := runHelm("template", deployName, chartDir, "--namespace", deployNamespace,
		"--set", "admissionPolicies.enabled=false")
	if err == nil {
		t.Errorf("helm template --set admissionPolicies.enabled=false rendered, want it refused")
	} else if !strings.Contains(out, unconfinedRefusal) {
		t.Errorf("helm template --set admissionPolicies.enabled=false: %s\nwant it to say %q", out, unconfinedRefusal)
	}

	acknowledged := decodeObjects(t, helm(t, "template", deployName, chartDir, "--namespace", deployNamespace,
		"--set", "admissionPolicies.enabled=false", "--set", "admissionPolicies.acknowledgeUnconfined=true"))
	if got := policyKeys(acknowledged); len(got) != 0 {
		t.Errorf("with the policies off and acknowledged, the chart renders %v, want none", got)
	}
	if acknowledged[deploymentKey] == nil {
		t.Errorf("with the policies off and acknowledged, no %s", deploymentKey)
	}

	if got := policyKeys(renderChart(t)); !slices.Equal(got, manifests) {
		t.Errorf("by default the chart renders the policies %v, want the manifests' %v", got, manifests)
	}
}
