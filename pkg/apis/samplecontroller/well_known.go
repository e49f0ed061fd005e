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

package samplecontroller

import "unicode/utf8"

// The words the sample-controller writes into the cluster: its name, the
// labels on the Deployments it manages, and the condition and reasons it
// reports on Foos. They are part of the API a user (and a test) relies on, so
// they are defined here, once, like the well-known labels of k8s.io/api.

// ControllerName is the controller's name wherever it signs what it writes:
// the field manager of its writes, the source of its events, its user agent,
// and the value of LabelManagedBy.
const ControllerName = "sample-controller"

// FooCRDName is the CustomResourceDefinition that serves the Foo API.
const FooCRDName = FooResource + "." + GroupName

// CRDWritePolicyName names the ValidatingAdmissionPolicy of artifacts/deploy,
// and its binding, that let the controller's ServiceAccount change nothing of
// FooCRDName but the conversion webhook's caBundle. The API server's refusals
// name it.
const CRDWritePolicyName = ControllerName + "-crd-writes"

// OwnNamespacePolicyName names the ValidatingAdmissionPolicy of
// artifacts/deploy, and its binding, that let the controller's ServiceAccount
// write nothing in its own namespace but its Lease, its CA Secret and Events.
const OwnNamespacePolicyName = ControllerName + "-own-namespace"

// OwnNamesPolicyName names the ValidatingAdmissionPolicy of
// artifacts/deploy, and its binding, that let the controller's
// ServiceAccount create no Secret, ConfigMap or Lease but its own:
// WebhookCASecretName, MetricsCAConfigMapName and the leader election Lease
// (ControllerName, the default -leader-elect-id). RBAC cannot name an object
// being created; the policy can.
const OwnNamesPolicyName = ControllerName + "-own-names"

// OwnEventsPolicyName names the ValidatingAdmissionPolicy of
// artifacts/deploy, and its binding, that let the controller's
// ServiceAccount create Events about Foos and WebhookCASecretName alone,
// reported as ControllerName, and patch its own alone. RBAC cannot read what
// an Event is about or who reports it; the policy can.
const OwnEventsPolicyName = ControllerName + "-own-events"

// OwnLeasesPolicyName names the ValidatingAdmissionPolicy of
// artifacts/deploy, and its binding, that let the controller's
// ServiceAccount write its leader, member and shard Leases alone, each as
// pkg/replicas writes it: its names, labels, a duration the flags allow, a
// replica's identity as holder. The sharding Role lets it update and delete
// every Lease of its namespace; the policy says which and what.
const OwnLeasesPolicyName = ControllerName + "-own-leases"

// LeaseQuotaName names the ResourceQuota of artifacts/deploy that bounds
// how many Leases the controller's namespace holds: no policy can count
// the member Leases a stolen token could create, which every sharded
// replica lists at each retry period.
const LeaseQuotaName = ControllerName + "-leases"

// The conversion webhook's names. The CRD reaches every replica's webhook
// through WebhookServiceName in the controller's namespace; the CA the
// replicas sign their serving certificates with, and that the CRD's caBundle
// trusts, is kept in the Secret WebhookCASecretName there.
const (
	WebhookServiceName  = ControllerName + "-webhook"
	WebhookCASecretName = ControllerName + "-webhook-ca"
)

// The metrics server's names. Prometheus scrapes every replica behind
// MetricsServiceName, over HTTPS with a certificate the controller's CA signs
// for that Service's DNS names (when the webhook's CA is there; see
// pkg/certauthority's MetricsCA) and that a scraper verifies with the CA bundle
// the replicas keep in the ConfigMap MetricsCAConfigMapName, key
// MetricsCAKey, of the controller's namespace. Its bearer token must be issued
// for MetricsAudience: a token for the API server alone is refused, so a
// token stolen from a scraper's pod is good for /metrics and nothing else,
// and the API server's own tokens are no good for /metrics. The shipped
// NetworkPolicy lets scrapers in from the namespaces labelled
// MetricsScraperNamespaceLabel="true".
const (
	MetricsServiceName           = ControllerName + "-metrics"
	MetricsCAConfigMapName       = ControllerName + "-metrics-ca"
	MetricsCAKey                 = "ca.crt"
	MetricsAudience              = ControllerName + "-metrics"
	MetricsScraperNamespaceLabel = GroupName + "/metrics-scraper"
)

// Labels on every Deployment the controller manages, and on its pods.
const (
	// LabelManagedBy, set to ControllerName, marks the Deployments the
	// controller manages. It watches only those, so its memory does not grow
	// with the cluster's other Deployments.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelApp and LabelController select a Foo's pods: LabelApp is always
	// "nginx", LabelController is the Foo's name. A Deployment's selector
	// cannot change, so neither may these.
	LabelApp        = "app"
	LabelController = "controller"
)

// ConditionReady is the one condition of a Foo: True when its Deployment has
// rolled out with all the requested replicas available.
const ConditionReady = "Ready"

// Reasons, one vocabulary for the Ready condition and for events: a problem
// the user has to resolve is both the reason of Ready=False and the reason of
// one Warning event, as the ReplicaSet controller's FailedCreate is.
const (
	// ReasonAvailable (condition): the Deployment is rolled out and fully
	// available.
	ReasonAvailable = "Available"
	// ReasonProgressing (condition): the Deployment is rolling out or
	// scaling.
	ReasonProgressing = "Progressing"
	// ReasonResourceExists (condition, Warning event): a Deployment with the
	// requested name exists and is not controlled by this Foo.
	ReasonResourceExists = "ResourceExists"
	// ReasonInvalidSpec (condition, Warning event): the spec cannot be acted
	// on; the message says why.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonFailedCreate, ReasonFailedUpdate and ReasonFailedDelete
	// (condition, Warning event): the API server refused to create, update
	// or delete the Foo's Deployment (a quota, an admission webhook or
	// policy, missing permission); the message is the server's. The
	// controller retries with backoff.
	ReasonFailedCreate = "FailedCreate"
	ReasonFailedUpdate = "FailedUpdate"
	ReasonFailedDelete = "FailedDelete"
	// ReasonStatusPruned (Warning event): the API server dropped status
	// fields the controller wrote, because the installed CRD's schema lacks
	// them. Reported once per Foo.
	ReasonStatusPruned = "StatusPruned"
	// ReasonSynced (Normal event): the controller created, updated or
	// deleted the Foo's Deployment to match the Foo.
	ReasonSynced = "Synced"
)

// OwnedWritesPolicyName names the ValidatingAdmissionPolicy, and its
// binding, of artifacts/deploy/owned-policy.yaml that confines the
// controller's writes of one kind a Foo owns, by its resource
// ("deployments").
func OwnedWritesPolicyName(resource string) string {
	return ControllerName + "-owned-" + resource
}

// Bounds of a Foo's status, in every version the CRD serves. The status is
// kept whole in every replica's Foo cache and in etcd, and anyone who may
// write foos/status (the controller's ServiceAccount among them) would
// otherwise fill it up to metav1.Condition's own bounds: any number of
// conditions with messages of 32 KiB, 1.3 MB a Foo for 40. The markers on
// FooStatus repeat them as literals (markers cannot name a constant); a unit
// test keeps them equal in every version. Within them a status still holds
// up to about 20 KB of text (48 KB were every character 4 bytes of UTF-8):
// 8 messages, and 8 reasons of 1024 and types of 316 (metav1.Condition's
// bounds), and the selector, where the controller writes a few hundred
// bytes. That is the residual, per Foo that exists (a token that may write
// foos/status creates none): up to 10 MB over 200 Foos, but beyond a
// replica's 256Mi over some ten thousand (docs/security.md).
const (
	// MaxConditions: the controller writes one condition, Ready; 8 leaves
	// room for the few others another controller may add (Gateway API
	// bounds its conditions to 8 too).
	MaxConditions = 8
	// MaxConditionMessageLength, in characters (Unicode code points, as
	// the CRD's CEL rule counts them): above the longest message the
	// controller composes itself (594, NameTakenProblem with two names of
	// 253 characters), and the length of a condition's reason and of an
	// event's note in the events API. A longer one (a refused write quotes
	// the API server's error) is cut by CutConditionMessage.
	MaxConditionMessageLength = 1024
	// MaxSelectorLength bounds status.selector, which the controller writes
	// as "app=nginx,controller=" and at most 63 characters: a fork's own pod
	// labels fit beside them.
	MaxSelectorLength = 1024
)

// CutConditionMessage returns message as a condition of a Foo may hold it:
// unchanged when it has at most MaxConditionMessageLength characters, else
// its first MaxConditionMessageLength-1 characters and "…", so that a
// reader sees it was cut. Cutting a cut message changes nothing.
func CutConditionMessage(message string) string {
	if utf8.RuneCountInString(message) <= MaxConditionMessageLength {
		return message
	}
	cut := 0
	for range MaxConditionMessageLength - 1 {
		_, size := utf8.DecodeRuneInString(message[cut:])
		cut += size
	}
	return message[:cut] + "…"
}
