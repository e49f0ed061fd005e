#!/usr/bin/env bash
# Usage: hack/build-image.sh [-push REGISTRY/REPO:TAG]
#
# Builds the controller's container image the way ko does, with no daemon,
# no registry and no Dockerfile: the controller built static (CGO_ENABLED=0)
# into _output/image/<name>, wrapped by
# hack/tools/image in one layer, entrypoint the binary, user 65532, nothing
# else in it (no shell). <name> is the last element of the module path
# (sample-controller; a copy made by hack/new-controller gets its own).
#
# Without -push it writes two docker-style tarballs, for a node that imports
# images instead of pulling them (ctr -n k8s.io images import, kind load
# image-archive, docker load):
#   _output/image/<name>.tar   localhost/<name>:dev
#   _output/image/pause.tar    localhost/pause:dev, the pod sandbox of the
#                              end-to-end tests' real node (hack/tools/pause)
# With -push REF it pushes the controller's image to a registry instead,
# with the credentials of ~/.docker/config.json, and prints REF's digest.
#
# IMAGE_SOURCE (default: the repository root) builds another tree's
# controller, e.g. a release checked out by the upgrade test, with
# IMAGE_TAG (default localhost/<name>:dev) and IMAGE_OUT its tarball.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SOURCE="${IMAGE_SOURCE:-${ROOT}}"
OUT="${ROOT}/_output/image"
NAME="$(basename "$(cd "${ROOT}" && GOWORK=off go list -m)")"
TAG="${IMAGE_TAG:-localhost/${NAME}:dev}"
mkdir -p "${OUT}"
# One build at a time writes the tarballs (two suites side by side).
exec 9>"${OUT}/.build.lock"
flock 9

# The tool, per worktree (not in the shared _output/bin).
go -C "${ROOT}/hack/tools" build -o "${OUT}/image-tool" ./image

# Static (no cgo, so it runs with no libc in the image), with reproducible
# paths (-trimpath) and without symbol table and DWARF (-s -w), to keep the
# image small.
bindir="$(mktemp -d "${OUT}/build.XXXXXX")"
trap 'rm -rf "${bindir}"' EXIT
(cd "${SOURCE}" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "${bindir}/${NAME}" .)

if [[ "${1:-}" == "-push" ]]; then
	"${OUT}/image-tool" -binary "${bindir}/${NAME}" -push "${2:?usage: $0 -push REGISTRY/REPO:TAG}"
	exit 0
fi
"${OUT}/image-tool" -binary "${bindir}/${NAME}" -tag "${TAG}" -o "${IMAGE_OUT:-${OUT}/${NAME}.tar}"
if [[ -z "${IMAGE_SOURCE:-}" ]]; then
	CGO_ENABLED=0 go -C "${ROOT}/hack/tools" build -trimpath -ldflags '-s -w' -o "${bindir}/pause" ./pause
	"${OUT}/image-tool" -binary "${bindir}/pause" -tag localhost/pause:dev -o "${OUT}/pause.tar"
fi
