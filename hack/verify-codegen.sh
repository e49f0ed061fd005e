#!/usr/bin/env bash
# Fails when the generated code is not exactly what hack/update-codegen.sh
# produces from the current types. It regenerates into a temporary copy of the
# repository, so the working tree is never touched.
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP_ROOT="$(mktemp -d)"
trap 'rm -rf "${TMP_ROOT}"' EXIT

# Copy only what generation reads and writes.
cp -a "${SCRIPT_ROOT}/go.mod" "${SCRIPT_ROOT}/go.sum" "${SCRIPT_ROOT}/hack" "${SCRIPT_ROOT}/pkg" "${TMP_ROOT}/"
rm -rf "${TMP_ROOT}/hack/tools" # a separate module, irrelevant here

"${TMP_ROOT}/hack/update-codegen.sh"

if ! diff -Naupr "${SCRIPT_ROOT}/pkg" "${TMP_ROOT}/pkg"; then
	echo "Generated code is out of date: run hack/update-codegen.sh and commit the result." >&2
	exit 1
fi
echo "Generated code is up to date."
