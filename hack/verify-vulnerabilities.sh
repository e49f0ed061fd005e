#!/usr/bin/env bash
# Usage: hack/verify-vulnerabilities.sh   (make verify runs it)
#
# Checks the controller's module graph for known vulnerabilities with
# govulncheck, offline: the Go vulnerability database (vuln.go.dev) is built
# locally from the module golang.org/x/vulndb, pinned with govulncheck in
# hack/tools/govulncheck, which the Go module proxy serves. Moving that pin
# to a newer pseudo-version brings newer reports.
#
# hack/vulncheck-gate reads govulncheck's findings: a vulnerability the
# code calls fails the check, in a module (require the fixed version in
# go.mod) or in the Go standard library (move go.mod's toolchain line to the
# Go release that fixes it, which the go command then builds with; see
# docs/testing.md); one it imports but does not call is counted. The
# standard library scanned is that of the go command running this, which
# go.mod's toolchain line selects.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
TOOLS="${ROOT}/hack/tools/govulncheck"
BIN_DIR="${ROOT}/_output/bin"
export GOWORK=off

go -C "${TOOLS}" build -o "${BIN_DIR}/" golang.org/x/vuln/cmd/govulncheck golang.org/x/vulndb/cmd/indexdb

# The database, indexed once per pinned version of golang.org/x/vulndb.
vulndb="$(go -C "${TOOLS}" list -m -f '{{.Version}} {{.Dir}}' golang.org/x/vulndb)"
version="${vulndb%% *}" src="${vulndb#* }"
DB="${ROOT}/_output/vulndb"
if [[ "$(cat "${DB}/.version" 2>/dev/null)" != "${version}" ]]; then
	echo "indexing the Go vulnerability database golang.org/x/vulndb@${version} into ${DB#"${ROOT}"/}" >&2
	rm -rf "${DB}"
	"${BIN_DIR}/indexdb" -vulns "${src}/data/osv" -out "${DB}"
	echo "${version}" >"${DB}/.version"
fi

# The product (every package of the controller's module) and the test
# support it ships with: what builds into a binary or runs in CI.
cd "${ROOT}"
go build -o "${BIN_DIR}/vulncheck-gate" ./hack/vulncheck-gate
"${BIN_DIR}/govulncheck" -db "file://${DB}" -format json ./... | "${BIN_DIR}/vulncheck-gate"
