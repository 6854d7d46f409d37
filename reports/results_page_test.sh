#!/usr/bin/env bash
# The committed results page (docs/results, written by //reports:publish_results from a cpu build) against
# the current claims files: every experiment of the report has a page folder, and every claim, control and
# design statement of every claims file (the smoke report's verdicts.csv rows: the engine writes one per
# claim) is on the page with the same statement, and none is on the page that no claims file has. A claim
# reworded, added or removed after publishing fails here, naming the revision the page came from.
# Reads the real source tree (tagged external: never cached).
# README.md's block between <!-- results:begin --> and <!-- results:end --> must be the page's summary
# (results_readme_block.sh), so the README never shows numbers the page does not.
# Usage: results_page_test.sh WORKSPACE_FILE SMOKE_REPORT_DIR README_BLOCK_SCRIPT
set -euo pipefail
workspace="$(dirname "$(readlink -f "$1")")"
smoke=$(readlink -f "$2")
readme_block=$(readlink -f "$3")
page="$workspace/docs/results"
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -s "$page/report.md" ]] || fail "no docs/results/report.md: ./tools/bazel run //reports:publish_results"
revision=$(sed -n 's/^Code revision \([^ ]*\) .*/\1/p' "$page/report.md")
grep -q '^Code revision .*, scale `cpu`\.$' "$page/report.md" || fail "docs/results is not a cpu report"

# kind,id,statement of a verdicts.csv (RFC 4180 quoting: the statement may hold commas and quotes).
claims() {
  python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1], newline="")):
    print("\t".join((r["kind"], r["id"], r["statement"])))' "$1" | sort -u
}
stale=0
for section in "$smoke"/*/; do
  name=$(basename "$section")
  [[ -s "$section/verdicts.csv" ]] || continue
  if [[ ! -s "$page/$name/verdicts.csv" ]]; then
    echo "$name: not on the page" >&2
    stale=1
    continue
  fi
  if ! diff <(claims "$section/verdicts.csv") <(claims "$page/$name/verdicts.csv") >"$TEST_TMPDIR/$name.diff"; then
    echo "$name: claims file (<) and page (>) differ:" >&2
    sed 's/^/  /' "$TEST_TMPDIR/$name.diff" | cut -c1-200 >&2
    stale=1
  fi
  for figure in "$page/$name"/*.svg; do
    [[ ! -e "$figure" ]] || grep -q '<svg' "$figure" || fail "$name: $(basename "$figure") on the page is not SVG"
  done
done
((stale == 0)) || fail "docs/results (revision $revision) is stale: rebuild with ./tools/bazel run //reports:publish_results"
"$readme_block" "$page/report.md" > "$TEST_TMPDIR/expected_block"
awk '/^<!-- results:begin -->$/ { inside = 1; next } /^<!-- results:end -->$/ { inside = 0 } inside' \
  "$workspace/README.md" > "$TEST_TMPDIR/readme_block"
if ! diff "$TEST_TMPDIR/expected_block" "$TEST_TMPDIR/readme_block" > "$TEST_TMPDIR/readme.diff"; then
  sed 's/^/  /' "$TEST_TMPDIR/readme.diff" | cut -c1-200 >&2
  fail "README.md's results block is not docs/results' summary (revision $revision): ./tools/bazel run //reports:publish_results"
fi
echo "docs/results (revision $revision) has every claim of every claims file, none stale"
echo PASS
