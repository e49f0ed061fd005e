#!/usr/bin/env bash
# Usage: hack/pin-kubernetes.sh VERSION   (e.g. hack/pin-kubernetes.sh v1.37.2)
#
# Pins the control plane of one Kubernetes minor release: writes the Go
# module hack/tools/k8s-<minor> that hack/build-tools.sh builds
# kube-apiserver, kube-controller-manager and kube-scheduler from, at
# VERSION, and the real node's kubelet and kube-proxy (built for the newest
# minor only: test/framework/node.go). Run it to move a minor to a newer patch release, or to add a
# minor (the build script, the test framework and make e2e-minors find it by
# its directory; add it to the table of docs/local-control-plane.md).
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, client-go,
# ...) at v0.0.0 and points them at ./staging, which only works inside its
# own repository: a module that builds it from the proxy replaces each one
# with its published twin, v0.<minor>.<patch>. The list is read from
# k8s.io/kubernetes' own go.mod, so a staging module added in a release is
# pinned too.
set -o errexit -o nounset -o pipefail

VERSION="${1:?usage: $0 VERSION (e.g. v1.37.2)}"
[[ "${VERSION}" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "not a release version: ${VERSION}" >&2; exit 2; }
MINOR="1.${BASH_REMATCH[1]}"
STAGING_VERSION="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
DIR="${ROOT}/hack/tools/k8s-${MINOR}"
export GOWORK=off GOFLAGS=-mod=mod

upstream_mod="$(go mod download -json "k8s.io/kubernetes@${VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[[ -n "${upstream_mod}" ]] || { echo "k8s.io/kubernetes@${VERSION}: no go.mod" >&2; exit 1; }
staging=($(sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*|\1|p' "${upstream_mod}"))

mkdir -p "${DIR}"
{
	echo "// The control plane of Kubernetes ${MINOR}, written by hack/pin-kubernetes.sh ${VERSION}:"
	echo "// hack/build-tools.sh builds these tools into _output/bin/k8s-${MINOR}."
	echo "module github.com/kube-samples/sample-controller/hack/tools/k8s-${MINOR}"
	echo
	echo "go $(sed -n 's/^go //p' "${upstream_mod}")"
	echo
	echo "tool ("
	echo "	k8s.io/kubernetes/cmd/kube-apiserver"
	echo "	k8s.io/kubernetes/cmd/kube-controller-manager"
	echo "	k8s.io/kubernetes/cmd/kube-scheduler"
	# The real node's (test/framework/node.go): built for the newest minor only.
	echo "	k8s.io/kubernetes/cmd/kubelet"
	echo "	k8s.io/kubernetes/cmd/kube-proxy"
	echo ")"
	echo
	echo "require k8s.io/kubernetes ${VERSION}"
	echo
	echo "replace ("
	for m in "${staging[@]}"; do
		echo "	${m} => ${m} ${STAGING_VERSION}"
	done
	echo ")"
} >"${DIR}/go.mod"
rm -f "${DIR}/go.sum"
go -C "${DIR}" mod tidy

# Its compiles shared with the controller's, when it is the controller's minor.
(cd "${ROOT}" && go run ./hack/share-tool-compiles)
echo "pinned Kubernetes ${MINOR} at ${VERSION} in ${DIR#"${ROOT}"/}" >&2
