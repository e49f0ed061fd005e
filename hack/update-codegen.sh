#!/usr/bin/env bash
# Regenerates everything derived from the hand-written types in pkg/apis:
# zz_generated.deepcopy.go and pkg/generated (clientset and its fake, listers,
# informers, apply configurations). The code-generator runs from the module
# cache at the version pinned in go.mod (see hack/tools.go), so everyone
# generates byte-identical output.
set -o errexit -o nounset -o pipefail

SCRIPT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${SCRIPT_ROOT}"

MODULE="$(go list -m)"
CODEGEN_PKG="$(go list -m -f '{{.Dir}}' k8s.io/code-generator)"
if [[ -z "${CODEGEN_PKG}" ]]; then
	go mod download k8s.io/code-generator
	CODEGEN_PKG="$(go list -m -f '{{.Dir}}' k8s.io/code-generator)"
fi

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
	--boilerplate "${SCRIPT_ROOT}/hack/boilerplate.go.txt" \
	"${SCRIPT_ROOT}/pkg/apis"

kube::codegen::gen_client \
	--with-watch \
	--with-applyconfig \
	--output-dir "${SCRIPT_ROOT}/pkg/generated" \
	--output-pkg "${MODULE}/pkg/generated" \
	--boilerplate "${SCRIPT_ROOT}/hack/boilerplate.go.txt" \
	"${SCRIPT_ROOT}/pkg/apis"
