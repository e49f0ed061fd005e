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

package main

// builtinPlurals are the resources Kubernetes 1.37 serves itself: a custom
// resource with one of these plurals is shadowed, for kubectl, by the
// built-in one (kubectl get deployments finds apps' Deployments). Read from
// the resources k8s.io/kubernetes v1.37.2 registers (DefaultQualifiedResource
// in pkg/registry/*/*/storage), plus the virtual resources served without a
// store (bindings, componentstatuses, the reviews) and apiextensions' and
// kube-aggregator's own, and kubectl's category "all".
var builtinPlurals = map[string]bool{
	// core
	"bindings": true, "componentstatuses": true, "configmaps": true, "endpoints": true, "events": true,
	"limitranges": true, "namespaces": true, "nodes": true, "persistentvolumeclaims": true,
	"persistentvolumes": true, "pods": true, "podtemplates": true, "replicationcontrollers": true,
	"resourcequotas": true, "secrets": true, "serviceaccounts": true, "services": true,
	// admissionregistration.k8s.io
	"mutatingwebhookconfigurations": true, "validatingwebhookconfigurations": true,
	"validatingadmissionpolicies": true, "validatingadmissionpolicybindings": true,
	"mutatingadmissionpolicies": true, "mutatingadmissionpolicybindings": true,
	// apiextensions.k8s.io, apiregistration.k8s.io
	"customresourcedefinitions": true, "apiservices": true,
	// apps
	"controllerrevisions": true, "daemonsets": true, "deployments": true, "replicasets": true, "statefulsets": true,
	// authentication.k8s.io, authorization.k8s.io
	"selfsubjectreviews": true, "tokenreviews": true, "localsubjectaccessreviews": true,
	"selfsubjectaccessreviews": true, "selfsubjectrulesreviews": true, "subjectaccessreviews": true,
	// autoscaling, batch
	"horizontalpodautoscalers": true, "cronjobs": true, "jobs": true,
	// certificates.k8s.io
	"certificatesigningrequests": true, "clustertrustbundles": true, "podcertificaterequests": true,
	// coordination.k8s.io, discovery.k8s.io
	"leases": true, "leasecandidates": true, "endpointslices": true,
	// flowcontrol.apiserver.k8s.io, internal.apiserver.k8s.io
	"flowschemas": true, "prioritylevelconfigurations": true, "storageversions": true,
	// networking.k8s.io
	"ingressclasses": true, "ingresses": true, "networkpolicies": true, "ipaddresses": true, "servicecidrs": true,
	// node.k8s.io, policy, scheduling.k8s.io
	"runtimeclasses": true, "poddisruptionbudgets": true, "evictions": true, "priorityclasses": true,
	"podgroups": true, "workloads": true,
	// rbac.authorization.k8s.io
	"clusterrolebindings": true, "clusterroles": true, "rolebindings": true, "roles": true,
	// resource.k8s.io
	"deviceclasses": true, "devicetaintrules": true, "resourceclaims": true, "resourceclaimtemplates": true,
	"resourceslices": true,
	// storage.k8s.io, storagemigration.k8s.io
	"csidrivers": true, "csinodes": true, "csistoragecapacities": true, "storageclasses": true,
	"volumeattachments": true, "volumeattributesclasses": true, "storageversionmigrations": true,
	// kubectl's category of everything a namespace runs
	"all": true,
}

// builtinShortNames are the short names of the built-in resources: the
// ShortNames() of k8s.io/kubernetes v1.37.2's pkg/registry, and
// apiextensions' crd and crds.
var builtinShortNames = map[string]bool{
	"cm": true, "cs": true, "ep": true, "ev": true, "limits": true, "no": true, "ns": true, "po": true,
	"pv": true, "pvc": true, "quota": true, "rc": true, "sa": true, "svc": true,
	"deploy": true, "ds": true, "rs": true, "sts": true, "cj": true, "hpa": true, "csr": true,
	"ing": true, "netpol": true, "ip": true, "pdb": true, "pc": true, "sc": true, "vac": true,
	"crd": true, "crds": true,
}
