#!/usr/bin/env bash
# Usage: hack/run.sh [controller flags...]   (what "make run" runs)
#
# Runs the controller in the foreground.
# - KUBECONFIG set: against that cluster; nothing is started or installed
#   (install the CRD yourself: kubectl apply -f artifacts/examples/crd.yaml).
# - KUBECONFIG unset: brings up a local control plane in _output/local/run
#   (hack/local-up.sh), installs artifacts/examples/crd.yaml, prints how to use
#   it, and runs the controller against it. Ctrl-C stops the controller and
#   the control plane, leaving nothing running.
# Extra arguments go to the controller, after the defaults.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BIN="${ROOT}/_output/bin/sample-controller"
[[ -x "${BIN}" ]] || go build -C "${ROOT}" -o "${BIN}" .

# Metrics and probes on loopback only, unless flags given override them.
# Metrics in plain HTTP without authentication (curl
# http://127.0.0.1:8080/metrics), fine on loopback for a local run; in a
# cluster the controller serves them over HTTPS to authorized callers only.
DEFAULT_FLAGS=(-metrics-bind-address=127.0.0.1:8080 -metrics-secure=false -health-probe-bind-address=127.0.0.1:8081)

if [[ -n "${KUBECONFIG:-}" ]]; then
	echo "Running against the cluster of KUBECONFIG=${KUBECONFIG}" >&2
	exec "${BIN}" -kubeconfig="${KUBECONFIG}" "${DEFAULT_FLAGS[@]}" "$@"
fi

CLUSTER_DIR="${ROOT}/_output/local/run"
controller_pid=""
cleanup() {
	trap - EXIT INT TERM
	if [[ -n "${controller_pid}" ]] && kill -0 "${controller_pid}" 2>/dev/null; then
		kill -TERM "${controller_pid}" 2>/dev/null || true
		wait "${controller_pid}" 2>/dev/null || true
	fi
	"${ROOT}/hack/local-down.sh" "${CLUSTER_DIR}" >&2 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A control plane left behind by a killed run is stopped first.
"${ROOT}/hack/local-down.sh" "${CLUSTER_DIR}" >/dev/null 2>&1 || true
"${ROOT}/hack/local-up.sh" "${CLUSTER_DIR}" >/dev/null
export KUBECONFIG="${CLUSTER_DIR}/kubeconfig"

kubectl apply -f "${ROOT}/artifacts/examples/crd.yaml" >&2
kubectl wait --for=condition=Established --timeout=60s crd/foos.samplecontroller.k8s.io >/dev/null

cat >&2 <<MSG

A local control plane is running (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, and kwok with one fake node), with the Foo CRD installed.
In another terminal:

  export KUBECONFIG=${KUBECONFIG}
  kubectl create -f artifacts/examples/example-foo.yaml
  kubectl get foo,deploy,pods

Ctrl-C here stops the controller and the control plane.

MSG

# In the background so that the traps run as soon as a signal arrives.
"${BIN}" -kubeconfig="${KUBECONFIG}" "${DEFAULT_FLAGS[@]}" "$@" &
controller_pid=$!
wait "${controller_pid}"
