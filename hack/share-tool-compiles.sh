#!/usr/bin/env bash
# Usage: hack/share-tool-compiles.sh
#
# Makes the tool modules the local control plane is built from select the
# controller's version of every module they share with it, so that Go's
# build cache compiles each shared package once on a fresh machine:
# - hack/tools (kwok, kwokctl, etcd), which build against client-go and the
#   API types as the controller does;
# - hack/tools/k8s-<minor> of the controller's own minor (the minor of its
#   client-go), whose control plane compiles every package the controller's
#   builds do, client-go and all below it.
# A package is compiled once for all only if everything below it is the same
# version in each module: one differing golang.org/x/sys compiles nearly all
# of them again, silently. A shared module the controller selects a newer
# version of is raised in the tool module, so the tools build with that
# newer release (when this was written: etcd 3.6.8 -> 3.7.0, kwok against
# client-go v0.37.2 instead of v0.36.1, both run by the e2e suites); one a
# tool needs newer than the controller is printed, for the controller's
# go.mod to be raised.
# hack/pin-kubernetes.sh runs it; run it after moving a pin of hack/tools or
# go.mod. test/modules fails until the modules agree.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
export GOWORK=off GOFLAGS=-mod=mod

# A tidy go.mod requires every module its build needs, at the version it
# selects: "<path> <version>" lines, sorted.
requirements() {
	go mod edit -print "$1" | awk '/^require \($/ { block = 1; next } block && /^\)$/ { block = 0 }
		block { print $1, $2 } /^require [^(]/ { print $2, $3 }' | sort
}

client_go="$(requirements "${ROOT}/go.mod" | awk '$1 == "k8s.io/client-go" { print $2 }')"
[[ "${client_go}" =~ ^v0\.([0-9]+)\.[0-9]+$ ]] || { echo "go.mod: k8s.io/client-go ${client_go} is no release" >&2; exit 1; }
modules=("${ROOT}/hack/tools")
[[ -f "${ROOT}/hack/tools/k8s-1.${BASH_REMATCH[1]}/go.mod" ]] && modules+=("${ROOT}/hack/tools/k8s-1.${BASH_REMATCH[1]}")

for dir in "${modules[@]}"; do
	raise=() behind=()
	while read -r path ours theirs; do
		[[ "${ours}" == "${theirs}" ]] && continue
		if [[ "$(printf '%s\n%s\n' "${ours}" "${theirs}" | sort -V | tail -n 1)" == "${ours}" ]]; then
			raise+=("${path}@${ours}")
		else
			behind+=("${path}@${theirs}")
		fi
	done < <(join <(requirements "${ROOT}/go.mod") <(requirements "${dir}/go.mod"))
	if ((${#raise[@]})); then
		go -C "${dir}" get "${raise[@]}"
		go -C "${dir}" mod tidy
	fi
	if ((${#behind[@]})); then
		echo "${dir#"${ROOT}"/} needs newer modules than go.mod selects; to share their compiles: go get ${behind[*]}" >&2
	fi
done
