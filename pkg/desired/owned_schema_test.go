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
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"go.yaml.in/yaml/v2"

	"github.com/kube-samples/sample-controller/internal/testfixtures"
	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	samplev1beta1 "github.com/kube-samples/sample-controller/pkg/apis/samplecontroller/v1beta1"
	"github.com/kube-samples/sample-controller/pkg/generated/ownedschema"
	"github.com/kube-samples/sample-controller/pkg/owned"
)

// clientGoDeploymentType is the Deployment's type in client-go's schema of
// every built-in type, which pkg/owned parsed before it had the
// Deployment's part of it alone (ownedschema.YAML).
func clientGoDeploymentType(tb testing.TB) typed.ParseableType {
	tb.Helper()
	tv, err := applyconfigurations.NewTypeConverter(scheme.Scheme).ObjectToTyped(&appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}})
	if err != nil {
		tb.Fatal(err)
	}
	return typed.ParseableType{Schema: tv.Schema(), TypeRef: tv.TypeRef()}
}

func generatedDeploymentType(tb testing.TB) typed.ParseableType {
	tb.Helper()
	parser, err := ownedSchema()
	if err != nil {
		tb.Fatal(err)
	}
	t := parser.Type(deploymentKind.SchemaType)
	if !t.IsValid() {
		tb.Fatalf("the generated schema has no type %s", deploymentKind.SchemaType)
	}
	return t
}

// everyFieldSetDeployment is a Deployment with every field set (everyFieldSet,
// seed 1): every type the Deployment refers to has a value to be typed. The
// managed fields' FieldsV1 must be JSON, so the three object metas' managed
// fields (the Deployment's, its pod template's and an ephemeral volume's
// claim template's) are given one first, which everyFieldSet keeps.
func everyFieldSetDeployment() *appsv1.Deployment {
	managed := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}}
	}
	d := &appsv1.Deployment{ObjectMeta: managed()}
	d.Spec.Template.ObjectMeta = managed()
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{ObjectMeta: managed()}}}}}
	owned.EveryFieldSet(reflect.ValueOf(d).Elem(), 1)
	return d
}

// The Deployment's part of client-go's schema types every Deployment as the
// whole schema does: the same fields, to the leaves, for the fixtures'
// Deployments, a Deployment as a cluster serves it, the desired Deployment
// of a Foo with every spec field set, and a Deployment with every field set.
func TestSubsetSchemaTypesDeploymentsAsClientGoDoes(t *testing.T) {
	full, subset := clientGoDeploymentType(t), generatedDeploymentType(t)
	everySpecField := &samplev1beta1.Foo{}
	everySpecField.Name, everySpecField.Namespace, everySpecField.UID = "every", "default", "uid-every"
	owned.EveryFieldSet(reflect.ValueOf(&everySpecField.Spec).Elem(), 1)
	desiredOfEverySpecField, err := deploymentObject(DeploymentFor(everySpecField))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		d *appsv1.Deployment
		// some of the fields the set must have, deep in the Deployment
		has []string
	}{
		"the fixture's owned Deployment": {testfixtures.OwnedDeployment(t, testfixtures.NewFoo("test", 3)), []string{
			`.spec.template.spec.containers[name="nginx"].image`,
		}},
		"as a cluster serves it": {completeDeployment(t, testfixtures.NewFoo("test", 3)), []string{
			`.spec.template.spec.containers[name="nginx"].ports[containerPort=80,protocol="TCP"].name`,
			`.spec.template.spec.containers[name="log-shipper"].volumeMounts[mountPath="/var/log/nginx"].name`,
			`.status.conditions[type="Progressing"].reason`,
		}},
		"desired for a Foo with every spec field set": {desiredOfEverySpecField, []string{
			`.spec.replicas`,
		}},
		"every field set": {everyFieldSetDeployment(), []string{
			`.metadata.ownerReferences[uid="x1"]`,
			`.spec.selector`,
			`.spec.strategy.rollingUpdate.maxSurge`,
			`.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`,
			`.spec.template.spec.containers[name="x1"].env[name="x1"].valueFrom.secretKeyRef`,
			`.spec.template.spec.containers[name="x1"].ports[containerPort=1,protocol="x1"].hostIP`,
			`.spec.template.spec.containers[name="x1"].resources.limits.x1`,
			`.spec.template.spec.ephemeralContainers[name="x1"].securityContext.capabilities.add`,
			`.spec.template.spec.volumes[name="x1"].ephemeral.volumeClaimTemplate.spec.dataSourceRef.apiGroup`,
			`.spec.template.spec.volumes[name="x1"].projected.sources`,
			`.status.conditions[type="x1"].lastTransitionTime`,
		}},
	} {
		t.Run(name, func(t *testing.T) {
			want := fieldSet(t, full, tc.d)
			got := fieldSet(t, subset, tc.d)
			if !got.Equals(want) {
				t.Errorf("typed with the generated schema, fields\n%s\nbeyond client-go's, and client-go's\n%s\nbeyond the generated one's",
					got.Difference(want), want.Difference(got))
			}
			for _, p := range tc.has {
				if !hasPath(got, p) {
					t.Errorf("no field %s among the fields typed with the generated schema:\n%s", p, got)
				}
			}
		})
	}
}

// A value that is not a Deployment is refused by the generated schema as by
// client-go's: the shape is checked, not assumed.
func TestSubsetSchemaRefusesWhatClientGoRefuses(t *testing.T) {
	full, subset := clientGoDeploymentType(t), generatedDeploymentType(t)
	for name, obj := range map[string]map[string]interface{}{
		"replicas a string": {"spec": map[string]interface{}{"replicas": "three"}},
		"containers a map":  {"spec": map[string]interface{}{"template": map[string]interface{}{"spec": map[string]interface{}{"containers": map[string]interface{}{}}}}},
		"a label a number":  {"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": int64(1)}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, fullErr := full.FromUnstructured(obj)
			_, subsetErr := subset.FromUnstructured(obj)
			if fullErr == nil || subsetErr == nil {
				t.Fatalf("client-go's schema: error %v; the generated one: error %v; want both to refuse it", fullErr, subsetErr)
			}
			if fullErr.Error() != subsetErr.Error() {
				t.Errorf("the generated schema says\n%v\nclient-go's says\n%v", subsetErr, fullErr)
			}
		})
	}
}

// The fields the controller owns, the values the cache keeps of them and
// the drift found in them are the same with either schema.
func TestSubsetSchemaFindsTheOwnedFieldsAndDriftAsClientGoDoes(t *testing.T) {
	full, subset := clientGoDeploymentType(t), generatedDeploymentType(t)
	var fields [2]*owned.Fields
	for i, s := range []typed.ParseableType{full, subset} {
		var err error
		if fields[i], err = probedFields("Deployment", s, deploymentKind.For); err != nil {
			t.Fatal(err)
		}
	}

	foo := testfixtures.NewFoo("test", 3)
	for name, tc := range map[string]struct {
		d         *appsv1.Deployment
		wantOwned string // "" for: the same with both, not written out here
		wantDrift string
	}{
		"as a cluster serves it": {completeDeployment(t, foo), cachedCompleteDeployment().Values, ""},
		"drifted": {func() *appsv1.Deployment {
			d := completeDeployment(t, foo)
			d.Spec.Replicas = ptr.To[int32](1)
			delete(d.Labels, samplecontroller.LabelApp)
			d.Spec.Template.Spec.Containers[0].Image = "busybox"
			return d
		}(), "", `.metadata.labels.app,.spec.replicas,.spec.template.spec.containers[name="nginx"].image`},
		"every field set": {everyFieldSetDeployment(), "", `.metadata.labels.app,.metadata.labels.app.kubernetes.io/managed-by,` +
			`.metadata.labels.controller,.spec.replicas,.spec.selector,.spec.template.metadata.labels.app,` +
			`.spec.template.metadata.labels.controller,.spec.template.spec.automountServiceAccountToken,` +
			`.spec.template.spec.containers[name="nginx"]`},
	} {
		t.Run(name, func(t *testing.T) {
			var owned, drift [2]string
			for i, f := range fields {
				var err error
				if owned[i], err = f.Values(tc.d); err != nil {
					t.Fatal(err)
				}
				names, err := f.Drift(DeploymentFor(foo), tc.d.Name, owned[i])
				if err != nil {
					t.Fatal(err)
				}
				drift[i] = strings.Join(names, ",")
			}
			if owned[1] != owned[0] {
				t.Errorf("owned values with the generated schema\n%s\nwith client-go's\n%s", owned[1], owned[0])
			}
			if tc.wantOwned != "" && owned[1] != tc.wantOwned {
				t.Errorf("owned values\n%s\nwant\n%s", owned[1], tc.wantOwned)
			}
			if drift[1] != drift[0] {
				t.Errorf("drift with the generated schema %q, with client-go's %q", drift[1], drift[0])
			}
			if drift[1] != tc.wantDrift {
				t.Errorf("drift %q, want %q", drift[1], tc.wantDrift)
			}
		})
	}
}

func fieldSet(t *testing.T, s typed.ParseableType, d *appsv1.Deployment) *fieldpath.Set {
	t.Helper()
	tv, err := s.FromStructured(d)
	if err != nil {
		t.Fatal(err)
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// hasPath reports whether set has the field server-side apply names name.
func hasPath(set *fieldpath.Set, name string) bool {
	found := false
	set.Iterate(func(p fieldpath.Path) {
		found = found || p.String() == name
	})
	return found
}

// The price of the schema Deployments are typed with, parsed once per
// process on the first Deployment: client-go's schema of every built-in type
// ("full", what applyconfigurations.NewTypeConverter parses on its first
// use) and the Deployment's part of it that hack/owned-schema generates
// ("subset", what deploymentSchema parses). They report; they assert
// nothing. Run:
//
//	go test -run '^$' -bench DeploymentSchema -benchmem -count 3 ./pkg/desired
//
// docs/performance.md has the figures.

// BenchmarkDeploymentSchemaParse is the time and allocations of one parse,
// with the named-type index the first lookup builds. client-go's own text of
// the full schema is internal to it, so "full" parses its types as
// hack/owned-schema writes them, the same encoder for both; it reports
// the YAML's size as yaml-bytes.
func BenchmarkDeploymentSchemaParse(b *testing.B) {
	fullYAML, err := yaml.Marshal(clientGoDeploymentType(b).Schema)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, text string }{
		{"full", string(fullYAML)},
		{"subset", ownedschema.YAML},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				parser, err := typed.NewParser(typed.YAMLObject(bc.text))
				if err != nil {
					b.Fatal(err)
				}
				if !parser.Type(deploymentKind.SchemaType).IsValid() {
					b.Fatalf("no type %s", deploymentKind.SchemaType)
				}
			}
			b.ReportMetric(float64(len(bc.text)), "yaml-bytes")
		})
	}
}

// schemaChildEnv names the schema a child process of
// BenchmarkDeploymentSchemaParsePeakRSS parses.
const schemaChildEnv = "CONTRACT_SCHEMA_RSS_CHILD"

// BenchmarkDeploymentSchemaParsePeakRSS is what one parse costs a fresh
// process in memory: each iteration runs this test binary again, which
// parses one schema as the controller would (client-go's through
// applyconfigurations.NewTypeConverter, or deploymentSchema) and reports its
// peak RSS (VmHWM) before and after, and the heap still in use after a
// collection, which is what the parse keeps. ns/op is the child process's
// whole run; B/op and allocs/op are the parent's.
func BenchmarkDeploymentSchemaParsePeakRSS(b *testing.B) {
	if which := os.Getenv(schemaChildEnv); which != "" {
		parseInChild(b, which)
		return
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("no /proc/self/status to read VmHWM from")
	}
	for _, which := range []string{"full", "subset"} {
		b.Run(which, func(b *testing.B) {
			var before, after, kept float64
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkDeploymentSchemaParsePeakRSS$",
					"-test.benchtime=1x", "-test.count=1")
				cmd.Env = append(os.Environ(), schemaChildEnv+"="+which)
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("child process: %v\n%s", err, out)
				}
				var hwmBefore, hwmAfter, heapKept float64
				i := bytes.Index(out, []byte("schema-rss:"))
				if i < 0 {
					b.Fatalf("child process reported nothing:\n%s", out)
				}
				if _, err := fmt.Sscanf(string(out[i:]), "schema-rss: %g %g %g", &hwmBefore, &hwmAfter, &heapKept); err != nil {
					b.Fatalf("child process's report: %v\n%s", err, out)
				}
				before, after, kept = before+hwmBefore, after+hwmAfter, kept+heapKept
			}
			n := float64(b.N)
			b.ReportMetric(before/n/1024, "VmHWM-before-MiB")
			b.ReportMetric(after/n/1024, "VmHWM-after-MiB")
			b.ReportMetric((after-before)/n/1024, "VmHWM-growth-MiB")
			b.ReportMetric(kept/n/1024, "heap-kept-KiB")
		})
	}
}

// parseInChild parses one schema and prints "schema-rss: " and VmHWM before
// and after, in KiB, and the heap the parse keeps, in bytes.
func parseInChild(b *testing.B, which string) {
	heap := func() uint64 {
		goruntime.GC()
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	heapBefore, hwmBefore := heap(), vmHWM(b)
	var kept typed.ParseableType
	switch which {
	case "full":
		kept = clientGoDeploymentType(b)
	case "subset":
		kept = generatedDeploymentType(b)
	default:
		b.Fatalf("%s=%q: full or subset", schemaChildEnv, which)
	}
	hwmAfter, heapAfter := vmHWM(b), heap()
	goruntime.KeepAlive(kept)
	fmt.Printf("schema-rss: %d %d %d\n", hwmBefore, hwmAfter, int64(heapAfter)-int64(heapBefore))
}

// vmHWM is this process's peak resident set size so far, in KiB.
func vmHWM(tb testing.TB) int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kib
		}
	}
	tb.Fatal("no VmHWM in /proc/self/status")
	return 0
}
