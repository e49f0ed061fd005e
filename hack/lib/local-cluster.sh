# shellcheck shell=bash
# Shared by hack/local-up.sh, hack/local-down.sh and hack/local-component.sh
# (sourced, not run). The caller sets DIR (the cluster directory); PIDS, LOGS
# and PKI are derived from it here.

PIDS="${DIR}/pids"
LOGS="${DIR}/logs"
PKI="${DIR}/pki"
# cmdline/<component>: the command line a component was started with, one
# NUL-terminated argument after another, so that hack/local-component.sh can
# start it again exactly as local-up.sh did.
CMDLINES="${DIR}/cmdline"

# is_ours NAME PID: PID is alive and is the component NAME started for the
# cluster in ${DIR} (or, right after it was forked, still the setsid/env
# wrapper exec'ing into it). Recorded pids are only ever signalled after this
# check, so a recycled pid is never touched. A stopped (SIGSTOP) process is
# still ours; a zombie is not (its exe link is gone).
is_ours() {
  local name=$1 pid=$2 exe cmdline
  [[ "${pid}" =~ ^[0-9]+$ ]] || return 1
  exe="$(readlink "/proc/${pid}/exe" 2>/dev/null)" || return 1
  exe="${exe% (deleted)}"
  case "${exe##*/}" in
    "${name}" | setsid | env) ;;
    *) return 1 ;;
  esac
  cmdline="$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" || return 1
  [[ "${cmdline}" == *"${DIR}/"* ]]
}

# is_paused PID: the process is stopped by a signal (state T in /proc).
is_paused() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  # The state is the first field after the parenthesised command name.
  stat="${stat##*) }"
  [[ "${stat%% *}" == T ]]
}

# recorded_pid NAME: prints the pid recorded for NAME in ${PIDS} (the last
# line for it wins), nothing if there is none.
recorded_pid() {
  [[ -f "${PIDS}" ]] || return 0
  awk -v name="$1" '$1 == name { pid = $2 } END { if (pid != "") print pid }' "${PIDS}"
}

# launch NAME CMD...: runs CMD detached (a new session, stdio appended to
# logs/NAME.log, the scripts' lock fds 7 and 9 closed so locks die with the
# script), records its command line in cmdline/NAME and its pid in ${PIDS},
# replacing an earlier pid of NAME. Prints nothing.
launch() {
  local name=$1
  shift
  mkdir -p "${CMDLINES}" "${LOGS}"
  printf '%s\0' "$@" >"${CMDLINES}/${name}"
  setsid "$@" </dev/null >>"${LOGS}/${name}.log" 2>&1 7>&- 9>&- &
  local pid=$!
  local tmp="${PIDS}.tmp"
  { [[ -f "${PIDS}" ]] && awk -v name="${name}" '$1 != name' "${PIDS}"; echo "${name} ${pid}"; } >"${tmp}"
  mv -f "${tmp}" "${PIDS}"
}

# Readiness probes, by port.
etcd_healthy() {
  curl -fsS --max-time 2 "http://127.0.0.1:$1/health" | grep -q '"health":"true"'
}
apiserver_ready() {
  [[ "$(curl -fsS --max-time 2 --cacert "${PKI}/ca.crt" \
    --cert "${PKI}/admin.crt" --key "${PKI}/admin.key" \
    "https://127.0.0.1:$1/readyz")" == ok ]]
}
https_healthy() {
  [[ "$(curl -fsSk --max-time 2 "https://127.0.0.1:$1/healthz")" == ok ]]
}
http_healthy() {
  [[ "$(curl -fsS --max-time 2 "http://127.0.0.1:$1/healthz")" == ok ]]
}
