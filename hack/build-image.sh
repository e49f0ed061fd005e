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
# with the credentials of ~/.docker/config.json (IMAGE_CA_FILE: a PEM file
# of more CAs to trust for it), prints REPO@sha256:..., and writes what
# deploys exactly that image, by digest, whatever REF's tag comes to name:
#   _output/image/pushed/kustomization.yaml  artifacts/deploy with an
#                                            images: entry of the digest
#                                            (kubectl apply -k that dir)
#   _output/image/pushed/values.yaml         the chart's image.repository
#                                            and image.digest (helm -f)
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
	pushed="$("${OUT}/image-tool" -binary "${bindir}/${NAME}" -push "${2:?usage: $0 -push REGISTRY/REPO:TAG}" \
		${IMAGE_CA_FILE:+-ca-file "${IMAGE_CA_FILE}"})"
	echo "${pushed}"
	# The manifests of this tree only: another's (IMAGE_SOURCE) are its own.
	if [[ -z "${IMAGE_SOURCE:-}" ]]; then
		repo="${pushed%@*}" digest="${pushed##*@}"
		mkdir -p "${OUT}/pushed"
		cat >"${OUT}/pushed/kustomization.yaml" <<-EOF
			# Written by hack/build-image.sh -push: artifacts/deploy running the image
			# it pushed, by digest (kubectl apply -k _output/image/pushed).
			apiVersion: kustomize.config.k8s.io/v1beta1
			kind: Kustomization
			resources:
			  - ../../../artifacts/deploy
			images:
			  - name: ${NAME}
			    newName: ${repo}
			    digest: ${digest}
		EOF
		cat >"${OUT}/pushed/values.yaml" <<-EOF
			# Written by hack/build-image.sh -push: the chart's values for the image it
			# pushed, by digest (helm install ... -f _output/image/pushed/values.yaml).
			image:
			  repository: ${repo}
			  digest: ${digest}
		EOF
	fi
	exit 0
fi
"${OUT}/image-tool" -binary "${bindir}/${NAME}" -tag "${TAG}" -o "${IMAGE_OUT:-${OUT}/${NAME}.tar}"
if [[ -z "${IMAGE_SOURCE:-}" ]]; then
	CGO_ENABLED=0 go -C "${ROOT}/hack/tools" build -trimpath -ldflags '-s -w' -o "${bindir}/pause" ./pause
	"${OUT}/image-tool" -binary "${bindir}/pause" -tag localhost/pause:dev -o "${OUT}/pause.tar"
fi
