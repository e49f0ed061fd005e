#!/usr/bin/env bash
# Copyright The Sample Controller Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# make test's steps, and what it prints at its end of those that failed.
#
#   hack/step.sh STEP COMMAND...   runs COMMAND, its output passed through
#                                  and kept in _output/steps/STEP.log, which
#                                  becomes STEP.failed if COMMAND fails
#   hack/step.sh -report           prints the last lines of each failed step
#
# make test runs two lanes of steps side by side. A step's reason to fail
# is printed when it fails, maybe thousands of lines before the end of a
# run whose CI log keeps only the tail; the steps end their output with
# what failed (a go test's through hack/summarize-failures.sh), and make
# test prints those ends again after the last step.
set -o nounset -o pipefail

STEPS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)/_output/steps"
# Lines of each failed step: its summary of failed tests, or a linter's
# findings, with room for both lanes' failures in a CI log's tail.
REPORT_LINES=20

if [[ "${1:-}" == -report ]]; then
	shopt -s nullglob
	failed=("${STEPS}"/*.failed)
	if ((${#failed[@]} == 0)); then
		echo "make test failed outside its steps (the builds): its first error is above"
	fi
	for log in "${failed[@]}"; do
		step="$(basename "${log}" .failed)"
		echo "make test: ${step} failed; its last lines (all of them: _output/steps/${step}.failed):"
		tail -n "${REPORT_LINES}" "${log}" | cut -c 1-300
	done
	exit 0
fi

step="$1"
shift
mkdir -p "${STEPS}"
rm -f "${STEPS}/${step}.failed"
"$@" 2>&1 | tee "${STEPS}/${step}.log"
status=$?
if ((status != 0)); then
	mv "${STEPS}/${step}.log" "${STEPS}/${step}.failed"
fi
exit "${status}"
