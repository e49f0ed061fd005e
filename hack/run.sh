#!/usr/bin/env bash
# Usage: hack/run.sh [controller flags...]   (what "make run" runs)
#
# Runs the controller in the foreground.
# - KUBECONFIG set: against that cluster; nothing is started or installed
#   (install the CRD yourself: kubectl apply -f artifacts/examples/crd.yaml).
# - KUBECONFIG unset: creates a local control plane with kwokctl (cluster
#   "sample-controller", KWOK_WORKDIR=_output/local/run, configured by
#   hack/kwokctl.yaml, Kubernetes K8S_MINOR or the newest supported) with
#   one fake node (hack/kwok-node.yaml), installs
#   artifacts/examples/crd.yaml, prints how to use it, and runs the
#   controller against it. Ctrl-C stops the controller and deletes the
#   control plane, leaving nothing running.
# Extra arguments go to the controller, after the defaults.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BIN="${ROOT}/_output/bin/sample-controller"
[[ -x "${BIN}" ]] || go build -C "${ROOT}" -o "${BIN}" .

# Metrics and probes on loopback only, unless flags given override them.
# Metrics in plain HTTP without authentication (curl
# http://127.0.0.1:8080/metrics), fine on loopback for a local run; in a
# cluster the controller serves them over HTTPS to authorized callers only.
# The conversion webhook too, on loopback, where the local control plane's
# API server calls it (below).
WEBHOOK_ADDRESS=127.0.0.1:9443
DEFAULT_FLAGS=(-metrics-bind-address=127.0.0.1:8080 -metrics-secure=false -health-probe-bind-address=127.0.0.1:8081
	-webhook-bind-address="${WEBHOOK_ADDRESS}")

# Against a cluster of your own, without the conversion webhook: that
# cluster's API server cannot reach this machine's loopback, and a
# controller deployed there keeps the webhook's CA Secret and the CRD's
# caBundle, which this one would otherwise write too.
if [[ -n "${KUBECONFIG:-}" ]]; then
	echo "Running against the cluster of KUBECONFIG=${KUBECONFIG}, without the conversion webhook" >&2
	exec "${BIN}" -kubeconfig="${KUBECONFIG}" "${DEFAULT_FLAGS[@]}" -webhook-bind-address=0 "$@"
fi

# The local control plane, brought up as the end-to-end tests do
# (test/framework): hack/local-cluster builds it if needed (K8S_MINOR picks
# the Kubernetes release), starts again a component that exits while it
# comes up, and returns once every component serves and the fake node is
# Ready and untainted; or it says which component failed, with its log.
BIN_DIR="${ROOT}/_output/bin"
export KWOK_WORKDIR="${ROOT}/_output/local/run"
export KUBECONFIG="${KWOK_WORKDIR}/kubeconfig"
KWOKCTL=("${BIN_DIR}/kwokctl" --name=sample-controller)
LOCAL_CLUSTER="${BIN_DIR}/local-cluster"
go build -C "${ROOT}" -o "${LOCAL_CLUSTER}" ./hack/local-cluster

controller_pid=""
cleanup() {
	trap - EXIT INT TERM
	if [[ -n "${controller_pid}" ]] && kill -0 "${controller_pid}" 2>/dev/null; then
		kill -TERM "${controller_pid}" 2>/dev/null || true
		wait "${controller_pid}" 2>/dev/null || true
	fi
	"${LOCAL_CLUSTER}" -dir="${KWOK_WORKDIR}" down || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A control plane left behind by a killed run is deleted first.
"${LOCAL_CLUSTER}" -dir="${KWOK_WORKDIR}" up >/dev/null
kubectl apply -f "${ROOT}/artifacts/examples/crd.yaml" >&2
# The CRD names the webhook's in-cluster Service (artifacts/deploy); here the
# API server runs on this machine and calls the controller directly. The
# controller sets the caBundle itself, as in a cluster.
kubectl patch crd/foos.samplecontroller.k8s.io --type=json -p='[{"op": "replace",
  "path": "/spec/conversion/webhook/clientConfig", "value": {"url": "https://'"${WEBHOOK_ADDRESS}"'/convert"}}]' >&2
kubectl wait --for=condition=Established --timeout=60s crd/foos.samplecontroller.k8s.io >/dev/null

cat >&2 <<MSG

A local control plane is running (kwokctl: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, and kwok with one fake node), with
the Foo CRD installed. In another terminal:

  export KUBECONFIG=${KUBECONFIG}
  kubectl create -f artifacts/examples/example-foo.yaml
  kubectl get foo,deploy,pods

kwokctl manages the control plane; for it, in that terminal:

  export KWOK_WORKDIR=${KWOK_WORKDIR}
  ${KWOKCTL[*]} get kubeconfig     # the admin kubeconfig, certificates inline
  ${KWOKCTL[*]} logs kube-apiserver  # or etcd, kube-controller-manager, ...
  ${KWOKCTL[*]} delete cluster     # what Ctrl-C here does

Ctrl-C here stops the controller and deletes the control plane.

MSG

# In the background so that the traps run as soon as a signal arrives.
"${BIN}" -kubeconfig="${KUBECONFIG}" "${DEFAULT_FLAGS[@]}" "$@" &
controller_pid=$!
wait "${controller_pid}"
