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
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
	"github.com/kube-samples/sample-controller/pkg/desired"
)

// deployDir is the kustomization an operator applies (kubectl apply -k).
const deployDir = "artifacts/deploy"

// labelName is the label every object of deployDir carries, and its
// selectors select, with the controller's name.
const labelName = "app.kubernetes.io/name"

// deployObject is what these checks read of any object.
type deployObject struct {
	metav1.TypeMeta
	Metadata metav1.ObjectMeta `json:"metadata"`
}

// decode reads the one object of a file of deployDir into out.
func decode(t *testing.T, file string, out any) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(read(t, deployDir+"/"+file)), out); err != nil {
		t.Fatalf("%s/%s: %v", deployDir, file, err)
	}
}

// ownedPolicyFile is the file of deployDir that hack/owned-policy generates:
// a policy and its binding for each kind a Foo owns.
const ownedPolicyFile = "owned-policy.yaml"

// The generated policies of the kinds a Foo owns are named for the
// controller and each kind, in the order of desired.OwnedKinds, each
// followed by its binding, cluster-scoped, labelled with the controller's
// name.
func TestOwnedPoliciesAreNamedForEachKind(t *testing.T) {
	want := make([]string, 0, 2*len(desired.OwnedKinds))
	for _, kind := range desired.OwnedKinds {
		name := samplecontroller.OwnedWritesPolicyName(kind.Resource.Resource)
		want = append(want, "ValidatingAdmissionPolicy "+name, "ValidatingAdmissionPolicyBinding "+name)
	}
	docs := strings.Split(read(t, deployDir+"/"+ownedPolicyFile), "\n---\n")[1:]
	got := make([]string, 0, len(docs))
	for i, doc := range docs {
		var o deployObject
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("%s/%s: document %d: %v", deployDir, ownedPolicyFile, i+1, err)
		}
		got = append(got, o.Kind+" "+o.Metadata.Name)
		if o.Metadata.Namespace != "" || o.Metadata.Labels[labelName] != samplecontroller.ControllerName {
			t.Errorf("%s/%s: %s %s: namespace %q, labels %v; want none, %s=%s", deployDir, ownedPolicyFile, o.Kind,
				o.Metadata.Name, o.Metadata.Namespace, o.Metadata.Labels, labelName, samplecontroller.ControllerName)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s/%s holds %q, want %q (make generate)", deployDir, ownedPolicyFile, got, want)
	}
}

// deployFiles are the files of deployDir, with the kind and name of the
// object each holds: all named for the controller. The generated
// ownedPolicyFile, which holds several, is checked apart.
func deployFiles() map[string]deployObject {
	name := samplecontroller.ControllerName
	object := func(kind, name string) deployObject {
		return deployObject{TypeMeta: metav1.TypeMeta{Kind: kind}, Metadata: metav1.ObjectMeta{Name: name}}
	}
	return map[string]deployObject{
		"namespace.yaml":                   object("Namespace", name),
		"serviceaccount.yaml":              object("ServiceAccount", name),
		"clusterrole.yaml":                 object("ClusterRole", name),
		"clusterrolebinding.yaml":          object("ClusterRoleBinding", name),
		"crd-policy.yaml":                  object("ValidatingAdmissionPolicy", samplecontroller.CRDWritePolicyName),
		"crd-policybinding.yaml":           object("ValidatingAdmissionPolicyBinding", samplecontroller.CRDWritePolicyName),
		"namespace-policy.yaml":            object("ValidatingAdmissionPolicy", samplecontroller.OwnNamespacePolicyName),
		"namespace-policybinding.yaml":     object("ValidatingAdmissionPolicyBinding", samplecontroller.OwnNamespacePolicyName),
		"names-policy.yaml":                object("ValidatingAdmissionPolicy", samplecontroller.OwnNamesPolicyName),
		"names-policybinding.yaml":         object("ValidatingAdmissionPolicyBinding", samplecontroller.OwnNamesPolicyName),
		"events-policy.yaml":               object("ValidatingAdmissionPolicy", samplecontroller.OwnEventsPolicyName),
		"events-policybinding.yaml":        object("ValidatingAdmissionPolicyBinding", samplecontroller.OwnEventsPolicyName),
		"leases-policy.yaml":               object("ValidatingAdmissionPolicy", samplecontroller.OwnLeasesPolicyName),
		"leases-policybinding.yaml":        object("ValidatingAdmissionPolicyBinding", samplecontroller.OwnLeasesPolicyName),
		"leases-quota.yaml":                object("ResourceQuota", samplecontroller.LeaseQuotaName),
		"metrics-reader-clusterrole.yaml":  object("ClusterRole", name+"-metrics-reader"),
		"leader-election-role.yaml":        object("Role", name+"-leader-election"),
		"leader-election-rolebinding.yaml": object("RoleBinding", name+"-leader-election"),
		"flowschema.yaml":                  object("FlowSchema", name+"-leader-election"),
		"sharding-role.yaml":               object("Role", name+"-sharding"),
		"sharding-rolebinding.yaml":        object("RoleBinding", name+"-sharding"),
		"deployment.yaml":                  object("Deployment", name),
		"poddisruptionbudget.yaml":         object("PodDisruptionBudget", name),
		"service.yaml":                     object("Service", samplecontroller.MetricsServiceName),
		"webhook-role.yaml":                object("Role", name+"-webhook"),
		"webhook-rolebinding.yaml":         object("RoleBinding", name+"-webhook"),
		"webhook-service.yaml":             object("Service", samplecontroller.WebhookServiceName),
		"networkpolicy.yaml":               object("NetworkPolicy", name),
	}
}

// Every object is named for the controller, lives in its namespace (the
// Namespace of the same name) unless cluster-scoped, and carries its name in
// every app.kubernetes.io/name label, selectors included.
func TestDeployObjectsAreNamedForTheController(t *testing.T) {
	name := samplecontroller.ControllerName
	var kustomization struct {
		Resources []string `json:"resources"`
		Images    []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
		} `json:"images"`
	}
	decode(t, "kustomization.yaml", &kustomization)
	files := deployFiles()
	want := make([]string, 0, len(files)+1)
	for file := range files {
		want = append(want, file)
	}
	want = append(want, "../examples", ownedPolicyFile)
	if got := slices.Sorted(slices.Values(kustomization.Resources)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("%s/kustomization.yaml: resources %v, want %v (a new file needs its name checked here)", deployDir, got, slices.Sorted(slices.Values(want)))
	}

	for file, want := range files {
		var got deployObject
		decode(t, file, &got)
		path := deployDir + "/" + file
		if got.Kind != want.Kind || got.Metadata.Name != want.Metadata.Name {
			t.Errorf("%s: %s %q, want %s %q", path, got.Kind, got.Metadata.Name, want.Kind, want.Metadata.Name)
		}
		wantNamespace := name
		if clusterScoped := slices.Contains([]string{"Namespace", "ClusterRole", "ClusterRoleBinding", "FlowSchema",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, want.Kind); clusterScoped {
			wantNamespace = ""
		}
		if got.Metadata.Namespace != wantNamespace {
			t.Errorf("%s: namespace %q, want %q", path, got.Metadata.Namespace, wantNamespace)
		}
		if _, ok := got.Metadata.Labels[labelName]; !ok {
			t.Errorf("%s: no label %s", path, labelName)
		}
		// The Deployments the controller manages carry this label: its
		// informer would watch its own objects.
		if v, ok := got.Metadata.Labels[samplecontroller.LabelManagedBy]; ok && v == name {
			t.Errorf("%s: label %s=%s marks the Deployments the controller manages", path, samplecontroller.LabelManagedBy, v)
		}
		var doc any
		decode(t, file, &doc)
		for _, v := range valuesOf(doc, labelName) {
			if v != name {
				t.Errorf("%s: %s: %q, want %q", path, labelName, v, name)
			}
		}
	}

	if len(kustomization.Images) != 1 || kustomization.Images[0].Name != name || kustomization.Images[0].NewName != name {
		t.Errorf("%s/kustomization.yaml: images %+v, want one named %q, newName %q", deployDir, kustomization.Images, name, name)
	}
	var d appsv1.Deployment
	decode(t, "deployment.yaml", &d)
	if sa := d.Spec.Template.Spec.ServiceAccountName; sa != name {
		t.Errorf("%s/deployment.yaml: serviceAccountName %q, want %q", deployDir, sa, name)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if image, _, _ := strings.Cut(c.Image, ":"); image != name {
			t.Errorf("%s/deployment.yaml: container %s runs image %q, want %q (the kustomization's images: entry)", deployDir, c.Name, c.Image, name)
		}
	}
}

// valuesOf returns the values of every key named key, at any depth.
func valuesOf(node any, key string) []any {
	var values []any
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if k == key {
				values = append(values, v)
			}
			values = append(values, valuesOf(v, key)...)
		}
	case []any:
		for _, v := range n {
			values = append(values, valuesOf(v, key)...)
		}
	}
	return values
}

// The bindings grant their role to the controller's ServiceAccount.
func TestDeployBindingsGrantTheirRoleToTheControllersServiceAccount(t *testing.T) {
	name := samplecontroller.ControllerName
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: name}
	for file, role := range map[string]rbacv1.RoleRef{
		"clusterrolebinding.yaml":          {APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		"leader-election-rolebinding.yaml": {APIGroup: rbacv1.GroupName, Kind: "Role", Name: name + "-leader-election"},
		"webhook-rolebinding.yaml":         {APIGroup: rbacv1.GroupName, Kind: "Role", Name: name + "-webhook"},
	} {
		var binding struct {
			RoleRef  rbacv1.RoleRef   `json:"roleRef"`
			Subjects []rbacv1.Subject `json:"subjects"`
		}
		decode(t, file, &binding)
		if binding.RoleRef != role {
			t.Errorf("%s/%s: roleRef %+v, want %+v", deployDir, file, binding.RoleRef, role)
		}
		if !slices.Equal(binding.Subjects, []rbacv1.Subject{subject}) {
			t.Errorf("%s/%s: subjects %+v, want %+v", deployDir, file, binding.Subjects, subject)
		}
	}
}

// The ClusterRole grants the Foo API under the group and resource the
// controller's clients use: a rule under an old name grants nothing.
func TestClusterRoleGrantsTheFooAPI(t *testing.T) {
	var role rbacv1.ClusterRole
	decode(t, "clusterrole.yaml", &role)
	// Not named for the plural: a copy's plural can be its group's package
	// name (policies), which the name would hide.
	resource := samplecontroller.FooResource
	want := map[string][]string{
		resource:                 {"list", "watch"},
		resource + "/status":     {"patch"},
		resource + "/finalizers": {"update"},
	}
	got := map[string][]string{}
	for _, rule := range role.Rules {
		for _, group := range rule.APIGroups {
			if group != samplecontroller.GroupName {
				continue
			}
			for _, r := range rule.Resources {
				got[r] = append(got[r], rule.Verbs...)
			}
		}
	}
	for r, verbs := range want {
		if !slices.Equal(got[r], verbs) {
			t.Errorf("%s/clusterrole.yaml: %s in group %s: verbs %v, want %v", deployDir, r, samplecontroller.GroupName, got[r], verbs)
		}
	}
	for r := range got {
		if _, ok := want[r]; !ok {
			t.Errorf("%s/clusterrole.yaml: %s in group %s, which the controller does not use", deployDir, r, samplecontroller.GroupName)
		}
	}
}

// ownedKindVerbs are the calls the controller makes on every kind a Foo owns: its
// informer lists and watches, a create, a get when the create finds the name
// taken, a server-side apply (patch) to repair, a delete after a rename.
var ownedKindVerbs = []string{"list", "watch", "create", "get", "patch", "delete"}

// Owning a kind is its entry in desired.OwnedKinds and its RBAC rule: the
// ClusterRole grants each kind a Foo owns exactly the calls the controller
// makes on it, so a kind without its rule fails here, not on a cluster.
func TestClusterRoleGrantsEveryOwnedKind(t *testing.T) {
	var role rbacv1.ClusterRole
	decode(t, "clusterrole.yaml", &role)
	for _, kind := range desired.OwnedKinds {
		var got []string
		for _, rule := range role.Rules {
			if slices.Contains(rule.APIGroups, kind.Resource.Group) && slices.Contains(rule.Resources, kind.Resource.Resource) {
				got = append(got, rule.Verbs...)
			}
		}
		if !slices.Equal(got, ownedKindVerbs) {
			t.Errorf("%s/clusterrole.yaml: %s: verbs %v, want %v", deployDir, kind.Resource, got, ownedKindVerbs)
		}
	}
}
