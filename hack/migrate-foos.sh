#!/usr/bin/env bash
# Usage: hack/migrate-foos.sh   (against the cluster of $KUBECONFIG)
#
# Rewrites every stored Foo in the Foo CRD's storage version, then records
# that no other version is stored (the CRD's status.storedVersions), so that
# an older version can be removed from the CRD (docs/api-versions.md).
#
# For a cluster without StorageVersionMigration: before Kubernetes 1.37,
# where storagemigration.k8s.io is beta and off by default. On 1.37 and
# later, create a StorageVersionMigration instead; kube-controller-manager
# rewrites the Foos and trims storedVersions itself.
#
# A replica of the controller must be running: the API server reads each Foo
# stored in an older version through the conversion webhook.
set -o errexit -o nounset -o pipefail

CRD=foos.samplecontroller.k8s.io
storage="$(kubectl get crd "${CRD}" -o jsonpath='{.spec.versions[?(@.storage==true)].name}')"

# A replace of each Foo as read is written back in the storage version,
# even though nothing in it changed: the API server compares what it would
# store with what etcd holds, and these differ in version. A Foo written by
# someone else in between fails with a conflict, and was stored in the
# storage version by that write: the next round finds it unchanged.
for attempt in 1 2 3 4 5; do
	if kubectl get "${CRD}" --all-namespaces -o json | kubectl replace -f - >/dev/null; then
		break
	fi
	if ((attempt == 5)); then
		echo "hack/migrate-foos.sh: some Foos could not be rewritten; storedVersions left as it is" >&2
		exit 1
	fi
	sleep 1
done

kubectl patch crd "${CRD}" --subresource=status --type=merge \
	-p '{"status":{"storedVersions":["'"${storage}"'"]}}' >/dev/null
echo "Every Foo is stored in ${storage}; status.storedVersions of ${CRD}: ${storage}"
