#!/usr/bin/env bash
# The committed results page (docs/results, written experiment by experiment by //reports:publish_<experiment>
# or all at once by //reports:publish_results from cpu builds) against the current claims files: every claim,
# control and design statement of a published experiment's claims file (the smoke report's verdicts.csv rows:
# the engine writes one per claim) is on the page with the same statement, and its seed plan and amendments as
# the section printed them (a change of seeds is an amendment), none is on the page that no claims
# file has, every experiment not published is named as such, and each published folder names the clean cpu
# revision that built it. A claim reworded, added or removed after publishing fails here, naming the revision
# the experiment's section came from. Reads the real source tree (tagged external: never cached).
# README.md's block between <!-- results:begin --> and <!-- results:end --> must be the page's summary
# (results_readme_block.sh), so the README never shows numbers the page does not.
# Usage: results_page_test.sh WORKSPACE_FILE SMOKE_REPORT_DIR README_BLOCK_SCRIPT
set -euo pipefail
workspace="$(dirname "$(readlink -f "$1")")"
smoke=$(readlink -f "$2")
readme_block=$(readlink -f "$3")
page="$workspace/docs/results"
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -s "$page/report.md" ]] || fail "no docs/results/report.md: ./tools/bazel run //reports:publish_<experiment>"
grep -q '^Scale `cpu`\.' "$page/report.md" || fail "docs/results is not a cpu results page"
unpublished=" $(sed -n 's/^Not yet published at cpu scale ([^)]*): \(.*\)\.$/\1/p' "$page/report.md" | tr -d ,) "

# kind,id,statement of a verdicts.csv (RFC 4180 quoting: the statement may hold commas and quotes).
claims() {
  python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1], newline="")):
    print("\t".join((r["kind"], r["id"], r["statement"])))' "$1" | sort -u
}
# A section's "Seed plan:" line and its "## Amendments" block (one "- date: what Why: why" line each).
plan_and_amendments() {
  awk '/^Seed plan: / { print } /^## Amendments/ { inside = 1; next } inside && /^## / { inside = 0 }
       inside && /^- / { print }' "$1"
}
# WHAT A B: A (the claims file's) and B (the page's) of experiment $name must be the same; else the page is stale
# and the message names the revision ($revision) to rebuild from.
stale_unless_same() {
  diff "$2" "$3" >"$TEST_TMPDIR/$name.diff" && return
  echo "$name: $1 differ; rebuild from revision ${revision:0:12} or later with" \
    "./tools/bazel run //reports:publish_$name" >&2
  sed 's/^/  /' "$TEST_TMPDIR/$name.diff" | cut -c1-200 >&2
  stale=1
}
stale=0 published=0
for section in "$smoke"/*/; do
  name=$(basename "$section")
  [[ -s "$section/verdicts.csv" ]] || continue
  if [[ ! -s "$page/$name/verdicts.csv" ]]; then
    [[ "$unpublished" == *" $name "* ]] || { echo "$name: neither on the page nor named as not yet published" >&2; stale=1; }
    continue
  fi
  published=$((published + 1))
  provenance="$page/$name/provenance.txt"
  revision=$(sed -n 's/^revision //p' "$provenance" 2>/dev/null || true)
  grep -qx 'state clean' "$provenance" && grep -qx 'scale cpu' "$provenance" && [[ -n "$revision" ]] ||
    fail "$name: $provenance does not name a clean cpu revision"
  stale_unless_same "claims file (<) and page (>)" <(claims "$section/verdicts.csv") \
    <(claims "$page/$name/verdicts.csv")
  # The seed plan and the amendments (a change of seeds, base or claim after the plan is one) as published.
  stale_unless_same "the claims file's seed plan or amendments (<) and the page's (>)" \
    <(plan_and_amendments "$section/section.md") <(plan_and_amendments "$page/$name/section.md")
  for figure in "$page/$name"/*.svg; do
    [[ ! -e "$figure" ]] || grep -q '<svg' "$figure" || fail "$name: $(basename "$figure") on the page is not SVG"
  done
done
for folder in "$page"/*/; do
  [[ -d "$folder" ]] || continue
  [[ -s "$smoke/$(basename "$folder")/verdicts.csv" ]] ||
    { echo "$(basename "$folder"): on the page but not an experiment of //reports" >&2; stale=1; }
done
((stale == 0)) || fail "docs/results is stale (above)"
"$readme_block" "$page/report.md" > "$TEST_TMPDIR/expected_block"
awk '/^<!-- results:begin -->$/ { inside = 1; next } /^<!-- results:end -->$/ { inside = 0 } inside' \
  "$workspace/README.md" > "$TEST_TMPDIR/readme_block"
if ! diff "$TEST_TMPDIR/expected_block" "$TEST_TMPDIR/readme_block" > "$TEST_TMPDIR/readme.diff"; then
  sed 's/^/  /' "$TEST_TMPDIR/readme.diff" | cut -c1-200 >&2
  fail "README.md's results block is not docs/results' summary: ./tools/bazel run //reports:publish_<experiment>"
fi
echo "docs/results: $published experiments published, each with every claim of its claims file, none stale"
echo PASS
