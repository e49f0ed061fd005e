#!/usr/bin/env bash
# Regenerates everything derived from the hand-written types in pkg/apis:
# zz_generated.deepcopy.go and pkg/generated (clientset and its fake, listers,
# informers, apply configurations), and the Foo CRD, artifacts/examples/crd.yaml,
# from the types' kubebuilder markers. It also cuts the owned kinds'
# server-side apply schema out of client-go's schema of every built-in type
# (hack/owned-schema writes pkg/generated/ownedschema/zz_generated.owned_schema.go).
# The code-generator and client-go come from the module cache at the versions
# pinned in go.mod (see hack/tools.go), controller-gen at the version pinned
# in hack/tools/controller-gen/go.mod, so everyone generates byte-identical
# output.
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

# The server-side apply schema of the kinds a Foo owns alone (a -kind for
# each kind desired.Registrations registers), which pkg/owned walks their objects
# with: client-go has it only within the schema of every built-in type,
# whose parse costs the controller more memory and start time
# (hack/owned-schema says why).
mkdir -p "${SCRIPT_ROOT}/pkg/generated/ownedschema"
go run ./hack/owned-schema \
	-boilerplate "${SCRIPT_ROOT}/hack/boilerplate.go.txt" \
	-kind apps/v1/Deployment \
	-o "${SCRIPT_ROOT}/pkg/generated/ownedschema/zz_generated.owned_schema.go"

kube::codegen::gen_client \
	--with-watch \
	--with-applyconfig \
	--output-dir "${SCRIPT_ROOT}/pkg/generated" \
	--output-pkg "${MODULE}/pkg/generated" \
	--boilerplate "${SCRIPT_ROOT}/hack/boilerplate.go.txt" \
	"${SCRIPT_ROOT}/pkg/apis"

# controller-gen comes from its own module (see the comment in its go.mod);
# GOWORK=off keeps any go.work out of that build. go build is cached, so this
# costs a second once it has been built.
CONTROLLER_GEN="${SCRIPT_ROOT}/_output/bin/controller-gen"
GOWORK=off go build -C "${SCRIPT_ROOT}/hack/tools/controller-gen" -o "${CONTROLLER_GEN}" \
	sigs.k8s.io/controller-tools/cmd/controller-gen

# controller-gen names its output <group>_<plural>.yaml; users apply one file
# under a fixed name, so generate into a scratch directory and move it there.
CRD_OUT="$(mktemp -d)"
trap 'rm -rf "${CRD_OUT}"' EXIT
"${CONTROLLER_GEN}" \
	crd:headerFile=hack/crd-header.yaml.txt \
	paths=./pkg/apis/... \
	output:crd:dir="${CRD_OUT}"
CRD_FILE="${CRD_OUT}/samplecontroller.k8s.io_foos.yaml"
if [[ "$(ls -A "${CRD_OUT}")" != "$(basename "${CRD_FILE}")" ]]; then
	echo "controller-gen wrote $(ls -A "${CRD_OUT}" | tr '\n' ' '), expected only $(basename "${CRD_FILE}")" >&2
	exit 1
fi

# The Foo is served in more than one version, converted by the controller's
# conversion webhook (pkg/conversion), which every replica serves behind the
# Service of artifacts/deploy/webhook-service.yaml. controller-gen writes no
# spec.conversion (kubebuilder adds it with a kustomize patch); this inserts
# it, in the order controller-gen sorts keys (conversion before group). The
# caBundle is the controller's to set (pkg/certauthority); a local run points
# clientConfig at its address instead (hack/run.sh, test/framework).
sed -i '0,/^spec:$/{/^spec:$/r hack/crd-conversion.yaml.txt
}' "${CRD_FILE}"
mv -f "${CRD_FILE}" "${SCRIPT_ROOT}/artifacts/examples/crd.yaml"

# The admission policies that confine the controller's ServiceAccount to
# the objects a Foo owns, as pkg/desired builds them (hack/owned-policy says
# how): a field or a kind the controller comes to write moves them with it,
# and so do the bounds of the Foo's fields in the CRD just generated.
go run ./hack/owned-policy -crd "${SCRIPT_ROOT}/artifacts/examples/crd.yaml" \
	-o "${SCRIPT_ROOT}/artifacts/deploy/owned-policy.yaml"

# The Helm chart's templates, from the manifests above and the rest of
# artifacts/deploy and artifacts/monitoring (hack/helm-chart says what it
# templates); its Chart.yaml, values.yaml and helpers are written by hand.
# Paths relative to the root: each template names its manifest.
go run ./hack/helm-chart -manifests artifacts/deploy -monitoring artifacts/monitoring \
	-chart artifacts/charts/sample-controller
