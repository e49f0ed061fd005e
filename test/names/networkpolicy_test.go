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
	"maps"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kube-samples/sample-controller/pkg/apis/samplecontroller"
)

// The NetworkPolicy selects the Deployment's pods, and lets in exactly two
// things: anyone to the port the webhook Service targets, and the scrapers'
// namespaces (the label docs/security.md tells a user to set) to the port the
// metrics Service targets. No other port in: a port renamed
// in the Deployment or a Service, or a selector out of step, and the API
// server's conversion calls or Prometheus' scrapes are dropped on a cluster
// that enforces it.
func TestNetworkPolicyLetsInOnlyWhatEachPortIsFor(t *testing.T) {
	var np networkingv1.NetworkPolicy
	decode(t, "networkpolicy.yaml", &np)
	var d appsv1.Deployment
	decode(t, "deployment.yaml", &d)
	var metricsSvc, webhookSvc corev1.Service
	decode(t, "service.yaml", &metricsSvc)
	decode(t, "webhook-service.yaml", &webhookSvc)
	path := deployDir + "/networkpolicy.yaml"

	if np.Spec.PodSelector.MatchExpressions != nil ||
		!maps.Equal(np.Spec.PodSelector.MatchLabels, d.Spec.Selector.MatchLabels) ||
		!maps.Equal(np.Spec.PodSelector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("%s: podSelector %+v, want the Deployment's selector %v (its pods carry %v)",
			path, np.Spec.PodSelector, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("%s: policyTypes %v, want [Ingress Egress]", path, np.Spec.PolicyTypes)
	}

	// Each Service's one port targets a named container port of the
	// Deployment; the policy must name the same.
	containerPorts := map[string]corev1.ContainerPort{}
	for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
		containerPorts[p.Name] = p
	}
	target := func(svc corev1.Service) string {
		if len(svc.Spec.Ports) != 1 {
			t.Fatalf("Service %s: ports %+v, want one", svc.Name, svc.Spec.Ports)
		}
		name := svc.Spec.Ports[0].TargetPort.String()
		if _, ok := containerPorts[name]; !ok {
			t.Fatalf("Service %s targets port %q, which the Deployment's container does not name", svc.Name, name)
		}
		return name
	}
	if metricsSvc.Name != samplecontroller.MetricsServiceName {
		t.Errorf("%s/service.yaml: Service %q, want %q", deployDir, metricsSvc.Name, samplecontroller.MetricsServiceName)
	}
	webhookPort, metricsPort := target(webhookSvc), target(metricsSvc)

	if len(np.Spec.Ingress) != 2 {
		t.Fatalf("%s: %d ingress rules, want 2 (webhook from anyone, metrics from the scrapers' namespaces): %+v",
			path, len(np.Spec.Ingress), np.Spec.Ingress)
	}
	onePort := func(rule networkingv1.NetworkPolicyIngressRule, want string) {
		t.Helper()
		if len(rule.Ports) != 1 || rule.Ports[0].Port == nil || rule.Ports[0].Port.String() != want ||
			rule.Ports[0].Protocol == nil || *rule.Ports[0].Protocol != corev1.ProtocolTCP || rule.Ports[0].EndPort != nil {
			t.Errorf("%s: rule %+v, want TCP port %q alone", path, rule, want)
		}
		if p := containerPorts[want]; p.Protocol != corev1.ProtocolTCP {
			t.Errorf("%s/deployment.yaml: port %q is %s, the policy lets TCP in", deployDir, want, p.Protocol)
		}
	}

	webhook := np.Spec.Ingress[0]
	onePort(webhook, webhookPort)
	if len(webhook.From) != 0 {
		t.Errorf("%s: the webhook rule allows %+v only; the API server's addresses differ per cluster, so it "+
			"ships open to any source (narrowed by the user, docs/deploying.md)", path, webhook.From)
	}

	metrics := np.Spec.Ingress[1]
	onePort(metrics, metricsPort)
	wantFrom := map[string]string{samplecontroller.MetricsScraperNamespaceLabel: "true"}
	if len(metrics.From) != 1 || metrics.From[0].NamespaceSelector == nil || metrics.From[0].PodSelector != nil ||
		metrics.From[0].IPBlock != nil || metrics.From[0].NamespaceSelector.MatchExpressions != nil ||
		!maps.Equal(metrics.From[0].NamespaceSelector.MatchLabels, wantFrom) {
		t.Errorf("%s: the metrics rule allows %+v, want the namespaces labelled %v alone", path, metrics.From, wantFrom)
	}

	// The probe port stays out: the kubelet's probes come from the node,
	// which NetworkPolicy always lets through.
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.String() == "health" {
				t.Errorf("%s: lets in port health; only the node's kubelet probes it", path)
			}
		}
	}
	if _, ok := containerPorts["health"]; !ok {
		t.Errorf("%s/deployment.yaml: no port named health, which the policy's comment and docs/security.md name", deployDir)
	}
}

// Egress is what docs/security.md says: TCP to ports 443 and 6443 alone,
// where the API server listens, to any address but the link-local ranges,
// where clouds serve instance metadata (169.254.169.254, and fd00:ec2::254
// on AWS over IPv6). No DNS (port 53): in a pod the controller reaches the
// API server by the address in KUBERNETES_SERVICE_HOST.
func TestNetworkPolicyLetsOutTheAPIServersPortsButNotMetadata(t *testing.T) {
	var np networkingv1.NetworkPolicy
	decode(t, "networkpolicy.yaml", &np)
	path := deployDir + "/networkpolicy.yaml"
	tcp := corev1.ProtocolTCP
	want := []networkingv1.NetworkPolicyEgressRule{{
		To: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"169.254.0.0/16"}}},
			{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: []string{"fe80::/10", "fd00:ec2::254/128"}}},
		},
		Ports: []networkingv1.NetworkPolicyPort{
			{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(443))},
			{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(6443))},
		},
	}}
	if !reflect.DeepEqual(np.Spec.Egress, want) {
		t.Errorf("%s: egress %s, want %s", path, dump(np.Spec.Egress), dump(want))
	}
}
