#!/usr/bin/env bash
# Usage: hack/local-up.sh [CLUSTER_DIR]
#
# Starts a throw-away Kubernetes control plane for local runs and e2e tests:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (one
# fake node, "kwok-node-0", on which pods become Running/Ready without any
# container runtime). Every component listens on 127.0.0.1 only, on free
# ports picked at start, so several clusters can run side by side. Binaries
# come from _output/bin (hack/build-tools.sh is run first).
#
# CLUSTER_DIR (default: <repo>/_output/local/default) receives everything:
#   kubeconfig        admin kubeconfig (system:masters client cert, CA pinned)
#   cluster.env       KEY=value lines: KUBECONFIG, KUBE_APISERVER_URL, ETCD_URL,
#                     the chosen ports, NODE_NAME, ... (sourceable by bash)
#   pids              one "<component> <pid>" line per daemon
#   cmdline/<component> the daemon's command line (NUL-separated), so that
#                     hack/local-component.sh can start it again as it was
#   logs/<component>.log
#   pki/              CA, serving/client certs, service-account key pair
#   etcd/             etcd data dir
#   kwok/             kwok work dir and Stage config
#
# The daemons run in their own sessions (setsid) and keep running after this
# script exits; stop them with hack/local-down.sh [CLUSTER_DIR]; kill, pause or
# restart one of them with hack/local-component.sh. Progress goes
# to stderr; the only thing written to stdout is the final line
#   export KUBECONFIG=<CLUSTER_DIR>/kubeconfig
# so `eval "$(hack/local-up.sh DIR)"` works. Exit status is non-zero (and
# anything started is stopped again) if a component does not come up in time.
#
# Tunables (environment): LOCAL_UP_TIMEOUT (seconds per wait, default 60),
# LOCAL_UP_NODE_PODS (pod capacity of the fake node, default 110).
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BIN_DIR="${ROOT}/_output/bin"
STAGES_SRC="${ROOT}/_output/share/kwok-stages.yaml"
TIMEOUT="${LOCAL_UP_TIMEOUT:-60}"
NODE_PODS="${LOCAL_UP_NODE_PODS:-110}"
NODE_NAME=kwok-node-0
SERVICE_CIDR=10.96.0.0/16
SERVICE_FIRST_IP=10.96.0.1
POD_CIDR=10.244.0.0/16
SA_ISSUER=https://kubernetes.default.svc.cluster.local
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

T0=${EPOCHREALTIME/[.,]/}
# log MSG: progress line on stderr, prefixed with the elapsed time.
log() {
  local us=$((${EPOCHREALTIME/[.,]/} - T0))
  printf 'local-up [%d.%01ds]: %s\n' $((us / 1000000)) $((us % 1000000 / 100000)) "$*" >&2
}

case "${1:-}" in
  -h | --help)
    sed -n '2,/^set -o/{/^set -o/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  -*)
    log "unknown flag $1 (usage: $0 [CLUSTER_DIR])"
    exit 2
    ;;
esac
(($# <= 1)) || { log "usage: $0 [CLUSTER_DIR]"; exit 2; }

"${ROOT}/hack/build-tools.sh" >&2

for c in "${COMPONENTS[@]}"; do
  [[ -x "${BIN_DIR}/${c}" ]] || { log "missing ${BIN_DIR}/${c}"; exit 1; }
done
for t in kubectl openssl curl ss flock setsid; do
  command -v "${t}" >/dev/null || { log "required tool not found: ${t}"; exit 1; }
done

DIR="${1:-${ROOT}/_output/local/default}"
mkdir -p "${DIR}"
DIR="$(cd "${DIR}" && pwd -P)"
KUBECONFIG_FILE="${DIR}/kubeconfig"

# shellcheck source=hack/lib/local-cluster.sh
source "${ROOT}/hack/lib/local-cluster.sh" # PKI, PIDS, LOGS, CMDLINES, launch, probes

# One local-up per directory at a time. fd 7 (and fd 9 below) are closed in
# every daemon so the locks die with this script.
exec 7>"${DIR}/.local-up.lock"
flock -n 7 || { log "another local-up.sh is already running for ${DIR}"; exit 1; }

if [[ -f "${PIDS}" ]]; then
  while read -r name pid _; do
    [[ -n "${name:-}" ]] || continue
    if is_ours "${name}" "${pid}"; then
      log "a cluster is already running in ${DIR} (${name} pid ${pid}); run hack/local-down.sh ${DIR} first"
      exit 1
    fi
  done <"${PIDS}"
fi

# Fresh state: remove only what this script creates.
rm -rf "${DIR}/etcd" "${PKI}" "${DIR}/kwok" "${DIR}/.kube-cache" "${CMDLINES}" \
  "${KUBECONFIG_FILE}" "${DIR}/cluster.env" "${PIDS}"
mkdir -p "${PKI}" "${LOGS}" "${DIR}/kwok"
: >"${DIR}/.local-cluster" # marker: local-down.sh only deletes files where it exists
: >"${PIDS}"

started=0
ready=0
cleanup() {
  local rc=$?
  if ((ready == 0 && started == 1)); then
    log "start-up failed; stopping what was started (logs kept in ${LOGS})"
    "${ROOT}/hack/local-down.sh" "${DIR}" >&2 || true
  fi
  exit "${rc}"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

die() {
  log "ERROR: $*"
  exit 1
}

show_log() {
  local f="${LOGS}/$1.log"
  if [[ -s "${f}" ]]; then
    echo "----- last lines of ${f} -----" >&2
    tail -n 25 "${f}" >&2
    echo "-----" >&2
  fi
}

# start NAME CMD...: runs CMD detached with a fresh log (see launch) and
# records its pid and command line.
start() {
  : >"${LOGS}/$1.log"
  launch "$@"
  started=1
}

# check_alive: fails if any recorded daemon has exited.
check_alive() {
  local name pid
  while read -r name pid; do
    if ! is_ours "${name}" "${pid}"; then
      show_log "${name}"
      die "${name} (pid ${pid}) exited during start-up"
    fi
  done <"${PIDS}"
}

# wait_for COMPONENT DESCRIPTION CMD...: polls CMD until it succeeds, at most
# TIMEOUT seconds; on timeout shows the component's log and fails.
wait_for() {
  local component=$1 what=$2 deadline=$((SECONDS + TIMEOUT))
  shift 2
  until "$@" >/dev/null 2>&1; do
    check_alive
    if ((SECONDS >= deadline)); then
      show_log "${component}"
      die "timed out after ${TIMEOUT}s waiting for ${what}"
    fi
    sleep 0.2
  done
}

# ---------------------------------------------------------------- ports
# Ports are drawn at random below the kernel's ephemeral range (so outgoing
# connections cannot grab them) and checked against every TCP socket in use.
# A per-user lock serialises the pick-and-bind window between concurrent
# local-up.sh runs; it is released once every daemon is listening.
exec 9>"${TMPDIR:-/tmp}/local-up-ports.$(id -u).lock"
flock -w 120 9 || die "could not take the port allocation lock"

read -r eph_lo eph_hi </proc/sys/net/ipv4/ip_local_port_range
if ((eph_lo > 12000)); then
  port_lo=10000 port_hi=$((eph_lo - 1))
elif ((eph_hi < 64000)); then
  port_lo=$((eph_hi + 1)) port_hi=65535
else # no room outside the ephemeral range; the in-use check still applies
  port_lo=10000 port_hi=65535
fi
declare -A taken=()
while read -r p; do
  [[ -n "${p}" ]] && taken[${p}]=1
done < <(ss -Htan | awk '{ n = split($4, a, ":"); print a[n] }' | sort -u)

# pick_port VAR: stores a free, not yet handed out port in VAR.
pick_port() {
  local p i
  for ((i = 0; i < 1000; i++)); do
    p=$((port_lo + (RANDOM * 32768 + RANDOM) % (port_hi - port_lo + 1)))
    if [[ -z "${taken[${p}]:-}" ]]; then
      taken[${p}]=1
      printf -v "$1" '%s' "${p}"
      return 0
    fi
  done
  die "no free port found in ${port_lo}-${port_hi}"
}
pick_port ETCD_PORT
pick_port ETCD_PEER_PORT
pick_port API_PORT
pick_port KCM_PORT
pick_port SCHED_PORT
pick_port KWOK_PORT

is_listening() {
  [[ -n "$(ss -Hltn "sport = :$1")" ]]
}

# ---------------------------------------------------------------- PKI
# ECDSA P-256 everywhere: key generation is instantaneous.
cat >"${PKI}/openssl.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, IP:${SERVICE_FIRST_IP}, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
EOF

new_key() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
  chmod 600 "$1"
}

# new_ca NAME CN: self-signed CA NAME.key + NAME.crt.
new_ca() {
  new_key "${PKI}/$1.key"
  openssl req -x509 -new -config "${PKI}/openssl.cnf" -key "${PKI}/$1.key" \
    -subj "/CN=$2" -days 3650 -sha256 -extensions ca -out "${PKI}/$1.crt"
}

# sign NAME SUBJECT PROFILE [CA]: NAME.key + NAME.crt signed by CA (default:
# the cluster CA "ca").
sign() {
  local name=$1 subj=$2 profile=$3 ca=${4:-ca}
  new_key "${PKI}/${name}.key"
  openssl req -new -config "${PKI}/openssl.cnf" -key "${PKI}/${name}.key" \
    -subj "${subj}" -out "${PKI}/${name}.csr"
  openssl x509 -req -in "${PKI}/${name}.csr" -CA "${PKI}/${ca}.crt" -CAkey "${PKI}/${ca}.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 365 -sha256 \
    -extfile "${PKI}/openssl.cnf" -extensions "${profile}" -out "${PKI}/${name}.crt" 2>/dev/null
  rm -f "${PKI}/${name}.csr"
}

new_ca ca local-up-ca
sign apiserver "/CN=kube-apiserver" server
sign admin "/O=system:masters/CN=local-up-admin" client
sign kube-controller-manager "/CN=system:kube-controller-manager" client
sign kube-scheduler "/CN=system:kube-scheduler" client
# Front proxy (request-header authentication): used by the aggregator, and its
# CA is published in kube-system/extension-apiserver-authentication, where the
# controller-manager and scheduler look it up for their own serving endpoints.
new_ca front-proxy-ca local-up-front-proxy-ca
sign front-proxy-client "/CN=front-proxy-client" client front-proxy-ca
# Service-account token signing key pair.
new_key "${PKI}/sa.key"
openssl pkey -in "${PKI}/sa.key" -pubout -out "${PKI}/sa.pub"

b64() { base64 <"$1" | tr -d '\n'; }

# write_kubeconfig FILE CERT_NAME USER
write_kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:${API_PORT}
    certificate-authority-data: $(b64 "${PKI}/ca.crt")
users:
- name: $3
  user:
    client-certificate-data: $(b64 "${PKI}/$2.crt")
    client-key-data: $(b64 "${PKI}/$2.key")
contexts:
- name: local
  context:
    cluster: local
    user: $3
    namespace: default
current-context: local
EOF
  chmod 600 "$1"
}
write_kubeconfig "${KUBECONFIG_FILE}" admin local-up-admin
write_kubeconfig "${PKI}/kube-controller-manager.kubeconfig" kube-controller-manager system:kube-controller-manager
write_kubeconfig "${PKI}/kube-scheduler.kubeconfig" kube-scheduler system:kube-scheduler

kc() { kubectl --kubeconfig="${KUBECONFIG_FILE}" --cache-dir="${DIR}/.kube-cache" "$@"; }

# ---------------------------------------------------------------- etcd
log "starting etcd on 127.0.0.1:${ETCD_PORT} (peer ${ETCD_PEER_PORT})"
start etcd "${BIN_DIR}/etcd" \
  --name=local \
  --data-dir="${DIR}/etcd" \
  --listen-client-urls="http://127.0.0.1:${ETCD_PORT}" \
  --advertise-client-urls="http://127.0.0.1:${ETCD_PORT}" \
  --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster="local=http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster-state=new \
  --unsafe-no-fsync=true \
  --quota-backend-bytes=$((4 * 1024 * 1024 * 1024)) \
  --log-level=warn

wait_for etcd "etcd health" etcd_healthy "${ETCD_PORT}"
log "etcd is healthy"

# ---------------------------------------------------------------- kube-apiserver
# Admin access is a client cert in system:masters; KCM and the scheduler use
# their own identities (bootstrap RBAC roles). --endpoint-reconciler-type=none:
# the advertised address is loopback, which Endpoints validation rejects, and
# no pod could reach it anyway, so the "kubernetes" Service has no endpoints.
# Default admission plugins are kept.
log "starting kube-apiserver on https://127.0.0.1:${API_PORT}"
start kube-apiserver "${BIN_DIR}/kube-apiserver" \
  --bind-address=127.0.0.1 \
  --advertise-address=127.0.0.1 \
  --secure-port="${API_PORT}" \
  --etcd-servers="http://127.0.0.1:${ETCD_PORT}" \
  --cert-dir="${PKI}/apiserver" \
  --tls-cert-file="${PKI}/apiserver.crt" \
  --tls-private-key-file="${PKI}/apiserver.key" \
  --client-ca-file="${PKI}/ca.crt" \
  --authorization-mode=Node,RBAC \
  --service-account-issuer="${SA_ISSUER}" \
  --api-audiences="${SA_ISSUER}" \
  --service-account-key-file="${PKI}/sa.pub" \
  --service-account-signing-key-file="${PKI}/sa.key" \
  --service-cluster-ip-range="${SERVICE_CIDR}" \
  --endpoint-reconciler-type=none \
  --requestheader-client-ca-file="${PKI}/front-proxy-ca.crt" \
  --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User \
  --requestheader-uid-headers=X-Remote-Uid \
  --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="${PKI}/front-proxy-client.crt" \
  --proxy-client-key-file="${PKI}/front-proxy-client.key" \
  --allow-privileged=true \
  --profiling=false

wait_for kube-apiserver "kube-apiserver /readyz" apiserver_ready "${API_PORT}"
log "kube-apiserver is ready"

# ---------------------------------------------------------------- controllers
log "starting kube-controller-manager (:${KCM_PORT}), kube-scheduler (:${SCHED_PORT}), kwok (:${KWOK_PORT})"
KCM_KUBECONFIG="${PKI}/kube-controller-manager.kubeconfig"
start kube-controller-manager "${BIN_DIR}/kube-controller-manager" \
  --kubeconfig="${KCM_KUBECONFIG}" \
  --authentication-kubeconfig="${KCM_KUBECONFIG}" \
  --authorization-kubeconfig="${KCM_KUBECONFIG}" \
  --bind-address=127.0.0.1 \
  --secure-port="${KCM_PORT}" \
  --cert-dir="${PKI}/kube-controller-manager-serving" \
  --controllers='*' \
  --leader-elect=false \
  --use-service-account-credentials=true \
  --root-ca-file="${PKI}/ca.crt" \
  --service-account-private-key-file="${PKI}/sa.key" \
  --cluster-signing-cert-file="${PKI}/ca.crt" \
  --cluster-signing-key-file="${PKI}/ca.key" \
  --service-cluster-ip-range="${SERVICE_CIDR}" \
  --kube-api-qps=500 \
  --kube-api-burst=1000 \
  --profiling=false

SCHED_KUBECONFIG="${PKI}/kube-scheduler.kubeconfig"
start kube-scheduler "${BIN_DIR}/kube-scheduler" \
  --kubeconfig="${SCHED_KUBECONFIG}" \
  --authentication-kubeconfig="${SCHED_KUBECONFIG}" \
  --authorization-kubeconfig="${SCHED_KUBECONFIG}" \
  --bind-address=127.0.0.1 \
  --secure-port="${SCHED_PORT}" \
  --cert-dir="${PKI}/kube-scheduler-serving" \
  --leader-elect=false \
  --kube-api-qps=500 \
  --kube-api-burst=1000 \
  --profiling=false

# kwok reads ~/.kwok/kwok.yaml unless KWOK_WORKDIR points elsewhere; keep it
# inside the cluster dir so nothing outside influences the cluster.
cp "${STAGES_SRC}" "${DIR}/kwok/stages.yaml"
start kwok env KWOK_WORKDIR="${DIR}/kwok" "${BIN_DIR}/kwok" \
  --kubeconfig="${KUBECONFIG_FILE}" \
  --config="${DIR}/kwok/stages.yaml" \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --node-lease-duration-seconds=40 \
  --cidr="${POD_CIDR}" \
  --node-ip=127.0.0.1 \
  --server-address="127.0.0.1:${KWOK_PORT}"

wait_for kube-controller-manager "kube-controller-manager /healthz" https_healthy "${KCM_PORT}"
wait_for kube-scheduler "kube-scheduler /healthz" https_healthy "${SCHED_PORT}"
wait_for kwok "kwok /healthz" http_healthy "${KWOK_PORT}"
wait_for etcd "etcd peer port" is_listening "${ETCD_PEER_PORT}"
log "all components are serving"
# Every port is bound now; let other local-up.sh runs pick theirs.
exec 9>&-

# ---------------------------------------------------------------- node
log "registering fake node ${NODE_NAME}"
kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: ${NODE_NAME}
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: ${NODE_NAME}
    kubernetes.io/role: agent
    node-role.kubernetes.io/agent: ""
spec: {}
status:
  capacity:
    cpu: "32"
    memory: 256Gi
    pods: "${NODE_PODS}"
  allocatable:
    cpu: "32"
    memory: 256Gi
    pods: "${NODE_PODS}"
EOF

node_ready() {
  local out
  out="$(kc get node "${NODE_NAME}" \
    -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.spec.taints}')"
  # Ready, and the node controller's not-ready taint (if any) is gone.
  [[ "${out}" == True/ ]]
}
wait_for kwok "node ${NODE_NAME} Ready" node_ready
log "node ${NODE_NAME} is Ready"
# Pods cannot be created before the namespace's default ServiceAccount exists.
wait_for kube-controller-manager "default ServiceAccount" kc get serviceaccount default --namespace=default

cat >"${DIR}/cluster.env" <<EOF
CLUSTER_DIR=${DIR}
KUBECONFIG=${KUBECONFIG_FILE}
KUBE_APISERVER_URL=https://127.0.0.1:${API_PORT}
KUBE_APISERVER_PORT=${API_PORT}
ETCD_URL=http://127.0.0.1:${ETCD_PORT}
ETCD_PORT=${ETCD_PORT}
ETCD_PEER_PORT=${ETCD_PEER_PORT}
KUBE_CONTROLLER_MANAGER_PORT=${KCM_PORT}
KUBE_SCHEDULER_PORT=${SCHED_PORT}
KWOK_PORT=${KWOK_PORT}
NODE_NAME=${NODE_NAME}
EOF

ready=1
log "cluster up: ${DIR} (stop it with hack/local-down.sh ${DIR})"
echo "export KUBECONFIG=${KUBECONFIG_FILE}"
