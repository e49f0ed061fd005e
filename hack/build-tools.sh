#!/usr/bin/env bash
# Usage: [K8S_MINOR=1.36] [BUILD_REAL_NODE=true] hack/build-tools.sh
#
# Builds the local control plane into _output/bin:
# - kwokctl, kwok and etcd, pinned by the module hack/tools;
# - kube-apiserver, kube-controller-manager and kube-scheduler of Kubernetes
#   K8S_MINOR (default: the newest hack/tools has a module for),
#   pinned by the module hack/tools/k8s-<minor>, into _output/bin/k8s-<minor>;
# - with BUILD_REAL_NODE=true, and for the newest minor only, kubelet and
#   kube-proxy from the same module: the real node of the end-to-end tests
#   (test/framework/node.go), which runs one minor, the newest. Only what
#   starts a real node asks for them (make e2e, StartRealNode): make run,
#   make tools and every other control plane never start them, and their
#   first build is minutes of CPU (docs/performance.md, make test).
#
# Each Kubernetes binary is stamped with its release (-X
# k8s.io/component-base/version.gitVersion=...), as the release builds are:
# kwokctl runs `<binary> --version` to choose each component's flags, and an
# unstamped module build says v0.0.0, which kwokctl takes for the newest.
# Like the release builds, they are linked without the symbol table and DWARF
# (-s -w; stack traces keep their function names): less link time and disk
# (docs/performance.md, make test).
#
# go build relinks only what changed (little when nothing did), so callers
# (make tools, the test framework) run it every time. Needs only the Go
# toolchain (and the module proxy the first time; a cold build of one minor
# takes minutes: docs/performance.md, make test).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
TOOLS="${ROOT}/hack/tools"
BIN_DIR="${ROOT}/_output/bin"
# The supported minors, newest first: those hack/tools has a module for
# (the Kubernetes project maintains its three most recent releases).
K8S_MINORS=($(cd "${TOOLS}" && ls -d k8s-1.* | sed 's/^k8s-//' | sort -t. -k2,2nr))
MINOR="${K8S_MINOR:-${K8S_MINORS[0]}}"
K8S_MODULE="${TOOLS}/k8s-${MINOR}"
if [[ ! -f "${K8S_MODULE}/go.mod" ]]; then
	echo "K8S_MINOR=${MINOR} is not supported; the supported minors are ${K8S_MINORS[*]}" >&2
	exit 2
fi
# The release pinned for the minor, e.g. v1.37.2.
VERSION="$(sed -n 's|^[[:space:]]*k8s.io/kubernetes \(v1\.[0-9.]*\)\( // indirect\)\{0,1\}$|\1|p' "${K8S_MODULE}/go.mod")"
[[ "${VERSION}" =~ ^v1\.([0-9]+)\.[0-9]+$ ]] || { echo "no k8s.io/kubernetes release in ${K8S_MODULE}/go.mod" >&2; exit 1; }

mkdir -p "${BIN_DIR}/k8s-${MINOR}"
export GOWORK=off

# One build at a time into the same files (parallel test runs): a lock for
# the tools every minor shares, one for each minor's, so that the build of
# one minor does not hold up a run on another.
(
	flock 8
	# etcd's main package is its module's root, which go build would name "v3".
	go -C "${TOOLS}" build -o "${BIN_DIR}/etcd" go.etcd.io/etcd/server/v3
	go -C "${TOOLS}" build -o "${BIN_DIR}/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl
) 8>"${BIN_DIR}/.build-tools.lock"

stamp=k8s.io/component-base/version
minor_number="${BASH_REMATCH[1]}"
node_binaries=()
if [[ "${BUILD_REAL_NODE:-}" == true && "${MINOR}" == "${K8S_MINORS[0]}" ]]; then
	node_binaries=(k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy)
fi
(
	flock 8
	go -C "${K8S_MODULE}" build -o "${BIN_DIR}/k8s-${MINOR}/" \
		-ldflags "-s -w -X ${stamp}.gitVersion=${VERSION} -X ${stamp}.gitMajor=1 -X ${stamp}.gitMinor=${minor_number} -X ${stamp}.gitTreeState=clean" \
		k8s.io/kubernetes/cmd/kube-apiserver \
		k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler \
		"${node_binaries[@]}"
) 8>"${BIN_DIR}/k8s-${MINOR}/.build.lock"
