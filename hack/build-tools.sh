#!/usr/bin/env bash
# Builds the local control plane into _output/bin from the separate Go module
# in hack/tools, which pins their versions: kwokctl, and the binaries it runs
# (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok).
#
# go build relinks only what changed (about 2 s when nothing did), so callers
# (make tools, the test framework) run it every time. Needs only the Go
# toolchain (and the module proxy the first time; a cold build takes 10+
# minutes).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
TOOLS="${ROOT}/hack/tools"
BIN_DIR="${ROOT}/_output/bin"

mkdir -p "${BIN_DIR}"
# One build at a time (parallel test runs) into the same files.
exec 8>"${BIN_DIR}/.build-tools.lock"
flock 8

export GOWORK=off
# etcd's main package is its module's root, which go build would name "v3".
go -C "${TOOLS}" build -o "${BIN_DIR}/etcd" go.etcd.io/etcd/server/v3
go -C "${TOOLS}" build -o "${BIN_DIR}/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  sigs.k8s.io/kwok/cmd/kwok \
  sigs.k8s.io/kwok/cmd/kwokctl
