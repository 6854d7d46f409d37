#!/usr/bin/env bash
# README's "what reproduces" block from a published report.md (docs/results/report.md): the code revision
# and the summary table, its section links pointing into the page. publish_results writes it into README.md;
# results_page_test checks that README.md still holds it.
# Usage: results_readme_block.sh REPORT_MD
set -euo pipefail
report="$1"
fail() { echo "results_readme_block: $*" >&2; exit 1; }
revision=$(sed -n 's/^Code revision \([^ ]*\) .*/\1/p' "$report")
[[ -n "$revision" ]] || fail "no code revision in $report"
table=$(awk '/^\| experiment \| holds /, /^$/' "$report" | sed 's|](#\([a-z_]*\))|](docs/results/report.md#\1)|g')
(( $(grep -c '^| \[' <<< "$table") > 0 )) || fail "no summary table (| experiment | holds ...) in $report"
echo
echo "Measured by the cpu-scale build of revision ${revision:0:7} ([docs/results/report.md](docs/results/report.md):"
echo "every verdict with its interval and n, the tables, figures and the amendments to each claims file):"
echo
echo "$table"
echo
