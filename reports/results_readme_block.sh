#!/usr/bin/env bash
# README's "what reproduces" block from the published page (docs/results/report.md): the summary table, its
# section links pointing into the page, each experiment's code revision, and the experiments not yet
# published. publish_results writes it into README.md; results_page_test checks that README.md still holds it.
# Usage: results_readme_block.sh REPORT_MD
set -euo pipefail
report="$1"
fail() { echo "results_readme_block: $*" >&2; exit 1; }
grep -q '^Scale `cpu`\.' "$report" || fail "$report is not a cpu results page"
table=$(awk '/^\| experiment \| holds /, /^$/' "$report" | sed 's|](#\([a-z0-9_]*\))|](docs/results/report.md#\1)|g')
(( $(grep -c '^| \[' <<< "$table") > 0 )) || fail "no summary table (| experiment | holds ...) in $report"
revisions=$(sed -n 's/^| \[\([a-z0-9_]*\)\](#[a-z0-9_]*) | `\([0-9a-f]*\)` | .*/\1 \2/p' "$report")
[[ -n "$revisions" ]] || fail "no experiment revisions (| experiment | code revision | published |) in $report"
echo
echo "Measured by cpu-scale builds ([docs/results/report.md](docs/results/report.md): every verdict with its"
echo "interval and n, the tables, figures and the amendments to each claims file). Code revision of each:"
echo "$(awk '{ printf "%s%s `%s`", (NR > 1 ? ", " : ""), $1, substr($2, 1, 7) }' <<< "$revisions")."
grep '^Not yet published at cpu scale' "$report" || true
echo
echo "$table"
echo
