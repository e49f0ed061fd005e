#!/usr/bin/env bash
# Usage: hack/verify-tracked-files.sh [DIR]   (make verify runs it on the repository)
#
# Fails when a file git tracks in DIR (default: this repository) is a
# compiled executable (ELF, Mach-O or PE/COFF, by its first bytes) or larger
# than MAX_TRACKED_BYTES. Every clone carries every tracked file's history
# for good: a binary built in the work tree and committed by accident (a
# `go build ./hack/owned-policy` at the root writes ./owned-policy) is tens
# of MiB no one can remove short of rewriting history. Build output belongs
# in _output, which .gitignore ignores.
set -o errexit -o nounset -o pipefail

ROOT="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)}"
# The largest file the repository holds is a go.sum or generated schema, a
# tenth of this.
MAX_TRACKED_BYTES=$((1024 * 1024))

# A copy made by hack/new-controller is no git work tree until its owner
# makes it one: nothing is tracked yet.
if ! git -C "${ROOT}" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "${ROOT} is not a git work tree: no tracked files to check."
	exit 0
fi

bad=0
while IFS= read -r -d '' path; do
	file="${ROOT}/${path}"
	# A file deleted in the work tree and not yet from the index: nothing to read.
	[[ -f "${file}" ]] || continue
	size=$(stat -c %s -- "${file}")
	if ((size > MAX_TRACKED_BYTES)); then
		echo "${path}: ${size} bytes, over the ${MAX_TRACKED_BYTES} a tracked file may have" >&2
		bad=1
	fi
	magic=$(head -c 4 -- "${file}" | od -An -tx1 | tr -d ' \n')
	case "${magic}" in
	7f454c46) kind=ELF ;;
	feedface | feedfacf | cefaedfe | cffaedfe | cafebabe) kind=Mach-O ;;
	4d5a*) kind=PE ;;
	*) continue ;;
	esac
	echo "${path}: a compiled ${kind} executable" >&2
	bad=1
done < <(git -C "${ROOT}" ls-files -z)

if ((bad)); then
	echo "Tracked files above are build output or too large: git rm --cached them, and build into _output (ignored)." >&2
	exit 1
fi
echo "No tracked file is an executable binary or over ${MAX_TRACKED_BYTES} bytes."
