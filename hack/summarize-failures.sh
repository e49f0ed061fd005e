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

# Passes the output of go test through, each line after PREFIX (the
# first argument, if any), and ends it with the tests that failed, each
# with its last log lines, and the packages that failed: the reason a test
# failed is printed when it fails, maybe an hour and thousands of lines
# before the end of a run that a CI log shows the tail of. With -v, a
# test's log lines come before its --- FAIL line; without, after it.
#
#   go test -v ./test/e2e/ 2>&1 | hack/summarize-failures.sh '[1.35] '
#   go test ./... 2>&1 | hack/summarize-failures.sh
#
# It exits 0: the status is go test's (make's shells run with pipefail).
set -o errexit -o nounset -o pipefail

exec awk -v prefix="${1:-}" -v keep=8 -v more=3 '
{ print prefix $0; fflush() }
# Whose output follows: go test -v names the test (or subtest) before its
# lines whenever the output switches to another.
/^=== (RUN|CONT|NAME) / { test = $3 }
# The further lines of the last log line'"'"'s message, indented deeper than
# its first (the findings after "want none:"): the first few kept with it.
{ continues = logging && index($0, indent "    ") == 1 && !/^ *--- / && !/^ +[A-Za-z0-9_]+_test\.go:[0-9]+: / }
continues && ++lines <= more { further[test, n] = further[test, n] prefix "  " substr($0, 1, 300) "\n" }
!continues { logging = 0 }
# A test log line, "    file_test.go:12: ...": the last few of each test kept.
/^ +[A-Za-z0-9_]+_test\.go:[0-9]+: / {
	n = ++count[test]; logged[test, n] = $0; further[test, n] = ""
	delete logged[test, n - keep]; delete further[test, n - keep]
	indent = substr($0, 1, match($0, /[^ ]/) - 1); lines = 0; logging = 1
}
# Without -v, the indented lines after a --- FAIL line are what it logged.
after_fail && /^[ \t]/ && !/^ *--- / {
	if (++after_fail <= keep) { summary = summary prefix "  " substr($0, 1, 300) "\n" }
	next
}
{ after_fail = 0 }
/^ *--- FAIL: / {
	summary = summary prefix $0 "\n"
	name = $3
	for (i = count[name] - keep + 1; i <= count[name]; i++) {
		if ((name, i) in logged) { summary = summary prefix "  " substr(logged[name, i], 1, 300) "\n" further[name, i] }
	}
	after_fail = 1
}
# A package or build that failed, and a panic (as a test binary times out).
/^FAIL\t|^panic: / { summary = summary prefix substr($0, 1, 300) "\n" }
END { if (summary != "") { printf "%sFailed:\n%s", prefix, summary } }
'
