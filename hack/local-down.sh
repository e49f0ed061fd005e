#!/usr/bin/env bash
# Usage: hack/local-down.sh [--purge] [CLUSTER_DIR]
#
# Stops a control plane started by hack/local-up.sh in CLUSTER_DIR (default:
# <repo>/_output/local/default). Only the processes listed in CLUSTER_DIR/pids
# are signalled, and only while the pid still belongs to the expected binary
# (/proc/<pid>/exe) started for this directory (its command line mentions
# CLUSTER_DIR), so a recycled pid is never hit. Controllers and kwok stop
# first, then kube-apiserver, then etcd: SIGTERM (and SIGCONT, for a
# component paused with hack/local-component.sh), up to 10 s (apiserver:
# 20 s) to exit, then SIGKILL. A component restarted by
# hack/local-component.sh is stopped too: its new pid replaced the old one in
# CLUSTER_DIR/pids.
#
# Afterwards the cluster state is removed: etcd data, PKI, kubeconfig,
# cluster.env, pids and kwok's work dir. logs/ is kept for post-mortems.
# With --purge the whole CLUSTER_DIR is deleted instead (only if it carries
# local-up.sh's marker file, so a mistyped path is never wiped).
#
# Idempotent: running it on a stopped, cleaned or missing cluster succeeds.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

log() { echo "local-down: $*" >&2; }

purge=0
args=()
for a in "$@"; do
  case "${a}" in
    --purge) purge=1 ;;
    -h | --help)
      sed -n '2,/^set -o/{/^set -o/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
      exit 0
      ;;
    -*)
      log "unknown flag ${a}"
      exit 2
      ;;
    *) args+=("${a}") ;;
  esac
done
((${#args[@]} <= 1)) || { log "usage: $0 [--purge] [CLUSTER_DIR]"; exit 2; }

DIR="${args[0]:-${ROOT}/_output/local/default}"
if [[ ! -d "${DIR}" ]]; then
  log "${DIR} does not exist; nothing to do"
  exit 0
fi
DIR="$(cd "${DIR}" && pwd -P)"

# shellcheck source=hack/lib/local-cluster.sh
source "${ROOT}/hack/lib/local-cluster.sh"

declare -A PID_OF=()
if [[ -f "${PIDS}" ]]; then
  while read -r name pid _; do
    [[ -n "${name:-}" && -n "${pid:-}" ]] || continue
    PID_OF[${name}]=${pid}
  done <"${PIDS}"
fi

# stop GRACE NAME...: SIGTERM the named components, wait up to GRACE seconds,
# then SIGKILL whatever is left.
stop() {
  local grace=$1 name pid deadline
  shift
  local -a live=()
  for name in "$@"; do
    pid="${PID_OF[${name}]:-}"
    [[ -n "${pid}" ]] || continue
    if is_ours "${name}" "${pid}"; then
      log "stopping ${name} (pid ${pid})"
      kill -TERM "${pid}" 2>/dev/null || true
      # A component paused by hack/local-component.sh stop would hold the
      # SIGTERM pending until continued.
      kill -CONT "${pid}" 2>/dev/null || true
      live+=("${name}")
    fi
  done
  ((${#live[@]} > 0)) || return 0
  deadline=$((SECONDS + grace))
  while ((SECONDS < deadline)); do
    local -a still=()
    for name in "${live[@]}"; do
      if is_ours "${name}" "${PID_OF[${name}]}"; then still+=("${name}"); fi
    done
    ((${#still[@]} > 0)) || return 0
    live=("${still[@]}")
    sleep 0.1
  done
  for name in "${live[@]}"; do
    pid="${PID_OF[${name}]}"
    if is_ours "${name}" "${pid}"; then
      log "${name} (pid ${pid}) did not exit within ${grace}s; sending SIGKILL"
      kill -KILL "${pid}" 2>/dev/null || true
    fi
  done
  # SIGKILL is not instantaneous; give the kernel a moment to reap.
  for _ in $(seq 1 50); do
    local any=0
    for name in "${live[@]}"; do
      if is_ours "${name}" "${PID_OF[${name}]}"; then any=1; fi
    done
    ((any == 1)) || return 0
    sleep 0.1
  done
  log "warning: some processes survived SIGKILL: ${live[*]}"
  return 1
}

rc=0
stop 10 kwok kube-scheduler kube-controller-manager || rc=1
stop 20 kube-apiserver || rc=1
stop 10 etcd || rc=1
# Anything else someone added to the pids file.
others=()
for name in "${!PID_OF[@]}"; do
  case "${name}" in
    etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kwok) ;;
    *) others+=("${name}") ;;
  esac
done
if ((${#others[@]} > 0)); then stop 10 "${others[@]}" || rc=1; fi

if ((rc != 0)); then
  log "some processes could not be stopped; leaving ${DIR} in place"
  exit 1
fi

if [[ ! -e "${DIR}/.local-cluster" ]]; then
  # Not (or no longer) a local-up.sh directory: do not delete anything.
  log "stopped; ${DIR} has no local-up.sh marker, leaving its files alone"
  exit 0
fi

if ((purge == 1)); then
  rm -rf "${DIR}"
  log "stopped and removed ${DIR}"
else
  rm -rf "${DIR}/etcd" "${DIR}/pki" "${DIR}/kwok" "${DIR}/.kube-cache" "${CMDLINES}" \
    "${DIR}/kubeconfig" "${DIR}/cluster.env" "${PIDS}"
  log "stopped; state removed, logs kept in ${DIR}/logs"
fi
