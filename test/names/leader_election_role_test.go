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
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kube-samples/sample-controller/pkg/options"
)

// The leader election Role may get and update one Lease by name: the one the
// deployed replicas elect their leader with, -leader-elect-id (its default
// unless the Deployment's args set it), in the Deployment's namespace, where
// -leader-elect-namespace defaults to in a pod. Name another and no replica
// ever leads, while every replica reports Ready.
func TestLeaderElectionRoleNamesTheDeployedLease(t *testing.T) {
	o := options.AddFlags(flag.NewFlagSet("controller", flag.ContinueOnError))
	lease, leaseFrom := o.LeaderElection.Name, "the default of -leader-elect-id"
	var d appsv1.Deployment
	decode(t, "deployment.yaml", &d)
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, arg := range c.Args {
			if v, ok := strings.CutPrefix(strings.TrimLeft(arg, "-"), "leader-elect-id="); ok {
				lease, leaseFrom = v, "the Deployment's -leader-elect-id"
			}
			if v, ok := strings.CutPrefix(strings.TrimLeft(arg, "-"), "leader-elect-namespace="); ok {
				t.Errorf("%s/deployment.yaml: -leader-elect-namespace=%s: the Role below is for the Deployment's own namespace", deployDir, v)
			}
		}
	}

	var role rbacv1.Role
	decode(t, "leader-election-role.yaml", &role)
	path := deployDir + "/leader-election-role.yaml"
	if role.Namespace != d.Namespace {
		t.Errorf("%s: namespace %q, want the Deployment's %q, where the Lease lives", path, role.Namespace, d.Namespace)
	}
	var named []string
	for _, rule := range role.Rules {
		if !slices.Contains(rule.APIGroups, coordinationv1.GroupName) || !slices.Contains(rule.Resources, "leases") {
			continue
		}
		if len(rule.ResourceNames) == 0 {
			if !slices.Equal(rule.Verbs, []string{"create"}) {
				t.Errorf("%s: verbs %v on every Lease, want only create (RBAC cannot name an object being created)", path, rule.Verbs)
			}
			continue
		}
		named = append(named, rule.ResourceNames...)
		if !slices.Equal(rule.Verbs, []string{"get", "update"}) {
			t.Errorf("%s: verbs %v on Leases %v, want get and update", path, rule.Verbs, rule.ResourceNames)
		}
	}
	if !slices.Equal(named, []string{lease}) {
		t.Errorf("%s: resourceNames %q, want [%q], %s", path, named, lease, leaseFrom)
	}
}
