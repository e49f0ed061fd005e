#!/usr/bin/env bash
# Fails when the generated code, artifacts/examples/crd.yaml,
# artifacts/deploy/owned-policy.yaml or the Helm chart's templates are not exactly
# what hack/update-codegen.sh produces from the current types. It regenerates
# into a temporary copy of the repository, so the working tree is never
# touched.
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TMP_ROOT="$(mktemp -d)"
trap 'rm -rf "${TMP_ROOT}"' EXIT

# Copy only what generation reads and writes. Of hack/tools, only the
# controller-gen module is needed; the control-plane module is large and
# irrelevant here.
cp -a "${SCRIPT_ROOT}/go.mod" "${SCRIPT_ROOT}/go.sum" "${SCRIPT_ROOT}/hack" "${SCRIPT_ROOT}/pkg" "${TMP_ROOT}/"
rm -rf "${TMP_ROOT}/hack/tools"
mkdir -p "${TMP_ROOT}/hack/tools"
cp -a "${SCRIPT_ROOT}/hack/tools/controller-gen" "${TMP_ROOT}/hack/tools/"
# The manifests the chart is made from, the chart itself.
cp -a "${SCRIPT_ROOT}/artifacts" "${TMP_ROOT}/"

"${TMP_ROOT}/hack/update-codegen.sh"

stale=0
if ! diff -Naupr "${SCRIPT_ROOT}/pkg" "${TMP_ROOT}/pkg"; then
	stale=1
fi
for generated in artifacts/examples/crd.yaml artifacts/deploy/owned-policy.yaml; do
	if ! diff -Naup "${SCRIPT_ROOT}/${generated}" "${TMP_ROOT}/${generated}"; then
		stale=1
	fi
done
if ! diff -Naupr "${SCRIPT_ROOT}/artifacts/charts" "${TMP_ROOT}/artifacts/charts"; then
	stale=1
fi
if ((stale)); then
	echo "Generated code, CRD, owned-object policies or chart templates are out of date: run make generate (hack/update-codegen.sh) and commit the result." >&2
	exit 1
fi
echo "Generated code, CRD, owned-object policies and chart templates are up to date."
