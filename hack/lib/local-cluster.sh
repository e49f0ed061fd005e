# shellcheck shell=bash
# Shared by hack/local-up.sh and hack/local-down.sh (sourced, not run).

# is_ours NAME PID: PID is alive and is the component NAME started for the
# cluster in ${DIR} (or, right after local-up.sh forked it, still the
# setsid/env wrapper exec'ing into it). Recorded pids are only ever signalled
# after this check, so a recycled pid is never touched.
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
