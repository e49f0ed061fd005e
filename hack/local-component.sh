#!/usr/bin/env bash
# Usage: hack/local-component.sh CLUSTER_DIR COMMAND COMPONENT
#
# Injects a fault into one component of a control plane started by
# hack/local-up.sh in CLUSTER_DIR, or repairs it. COMPONENT is one of etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kwok. COMMAND:
#   status  print "running", "paused" or "down"
#   kill    SIGKILL it and wait until it is gone (its data, e.g. etcd's, stays)
#   pause   SIGSTOP it and wait until it is stopped: it keeps its sockets open
#           but answers nothing, like a hung or partitioned process
#   resume  SIGCONT a paused component
#   start   start a component that is down again, with the command line
#           local-up.sh started it with (CLUSTER_DIR/cmdline/COMPONENT), its
#           output appended to logs/COMPONENT.log, and wait until it serves
#           (at most LOCAL_UP_TIMEOUT seconds, default 60). The new pid
#           replaces the old one in CLUSTER_DIR/pids, so hack/local-down.sh
#           stops it.
#   ensure  whatever makes it run again: resume if paused, start if down
#           (for clean-ups after a failed test)
#
# As in local-down.sh, a recorded pid is signalled only while it still is
# the component started for CLUSTER_DIR (checked in /proc), never a recycled
# one. Exit status is non-zero if the command could not be done.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
TIMEOUT="${LOCAL_UP_TIMEOUT:-60}"

log() { echo "local-component: $*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

case "${1:-}" in
  -h | --help)
    sed -n '2,/^set -o/{/^set -o/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
esac
(($# == 3)) || { log "usage: $0 CLUSTER_DIR status|kill|pause|resume|start|ensure COMPONENT"; exit 2; }
[[ -d "$1" ]] || die "$1 does not exist"
DIR="$(cd "$1" && pwd -P)"
COMMAND=$2
NAME=$3
case "${NAME}" in
  etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kwok) ;;
  *) die "unknown component ${NAME}" ;;
esac

# shellcheck source=hack/lib/local-cluster.sh
source "${ROOT}/hack/lib/local-cluster.sh"
[[ -f "${DIR}/cluster.env" ]] || die "no cluster.env in ${DIR}: not a running local-up.sh cluster"
# shellcheck source=/dev/null
source "${DIR}/cluster.env"

# One change at a time per cluster directory, and none while local-up.sh
# runs there (it holds the same lock).
exec 7>"${DIR}/.local-up.lock"
flock -w 60 7 || die "could not take ${DIR}/.local-up.lock"

PID="$(recorded_pid "${NAME}")"

state() {
  if ! is_ours "${NAME}" "${PID}"; then
    echo down
  elif is_paused "${PID}"; then
    echo paused
  else
    echo running
  fi
}

# wait_until DESCRIPTION CMD...: polls CMD every 0.1 s for TIMEOUT seconds.
wait_until() {
  local what=$1 deadline=$((SECONDS + TIMEOUT))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "timed out after ${TIMEOUT}s waiting for ${what}"
    sleep 0.1
  done
}

in_state() { [[ "$(state)" == "$1" ]]; }

# serving: the component answers its health endpoint (ports from cluster.env).
serving() {
  case "${NAME}" in
    etcd) etcd_healthy "${ETCD_PORT}" ;;
    kube-apiserver) apiserver_ready "${KUBE_APISERVER_PORT}" ;;
    kube-controller-manager) https_healthy "${KUBE_CONTROLLER_MANAGER_PORT}" ;;
    kube-scheduler) https_healthy "${KUBE_SCHEDULER_PORT}" ;;
    kwok) http_healthy "${KWOK_PORT}" ;;
  esac
}

do_kill() {
  in_state down && die "${NAME} is not running"
  log "killing ${NAME} (pid ${PID})"
  kill -KILL "${PID}"
  wait_until "${NAME} (pid ${PID}) to be gone" in_state down
}

do_pause() {
  in_state running || die "${NAME} is $(state), not running"
  log "pausing ${NAME} (pid ${PID})"
  kill -STOP "${PID}"
  wait_until "${NAME} (pid ${PID}) to stop" in_state paused
}

do_resume() {
  in_state paused || die "${NAME} is $(state), not paused"
  log "resuming ${NAME} (pid ${PID})"
  kill -CONT "${PID}"
  wait_until "${NAME} (pid ${PID}) to continue" in_state running
}

do_start() {
  in_state down || die "${NAME} is $(state) (pid ${PID}); kill it first"
  local -a argv=()
  [[ -s "${CMDLINES}/${NAME}" ]] || die "no recorded command line ${CMDLINES}/${NAME}"
  mapfile -d '' argv <"${CMDLINES}/${NAME}"
  echo "----- local-component.sh: starting ${NAME} again at $(date -u +%FT%T.%NZ) -----" >>"${LOGS}/${NAME}.log"
  launch "${NAME}" "${argv[@]}"
  PID="$(recorded_pid "${NAME}")"
  log "started ${NAME} again (pid ${PID}); waiting until it serves"
  local deadline=$((SECONDS + TIMEOUT))
  until serving >/dev/null 2>&1; do
    if in_state down; then
      tail -n 25 "${LOGS}/${NAME}.log" >&2
      die "${NAME} (pid ${PID}) exited during start-up"
    fi
    ((SECONDS < deadline)) || die "timed out after ${TIMEOUT}s waiting for ${NAME} to serve"
    sleep 0.1
  done
  log "${NAME} is serving"
}

case "${COMMAND}" in
  status) state ;;
  kill) do_kill ;;
  pause) do_pause ;;
  resume) do_resume ;;
  start) do_start ;;
  ensure)
    case "$(state)" in
      paused) do_resume ;;
      down) do_start ;;
    esac
    ;;
  *) log "unknown command ${COMMAND}"; exit 2 ;;
esac
