#!/usr/bin/env bash
# Publishes the combined cpu report into the repository: `./tools/bazel run //reports:publish_results` builds
# //reports at the default (cpu) scale and copies into docs/results/ what a visitor reads without building:
# report.md (code revision, build identity, summary and every section), each experiment's figures,
# verdicts.csv and manifest.textproto, and the report's summary table into README.md between the
# <!-- results:begin --> and <!-- results:end --> lines. The tables' CSVs stay in the build output
# (bazel-bin/reports/reports).
# //reports:results_page_test then keeps the page honest against the current claims files.
# Usage (bazel run sets BUILD_WORKSPACE_DIRECTORY): publish_results.sh REPORT_DIR README_BLOCK_SCRIPT
set -euo pipefail
report=$(readlink -f "$1")
readme_block=$(readlink -f "$2")
fail() { echo "publish_results: error: $*" >&2; exit 1; }
[[ -n "${BUILD_WORKSPACE_DIRECTORY:-}" ]] || fail "run me with ./tools/bazel run //reports:publish_results"
[[ -s "$report/report.md" ]] || fail "$report has no report.md"
scale=$(sed -n 's/^Code revision .*, scale `\([a-z]*\)`\.$/\1/p' "$report/report.md")
[[ "$scale" == cpu ]] || fail "the report is at scale '${scale:-unknown}'; publish a cpu build (the default of bazel run)"
revision=$(sed -n 's/^Code revision \([^ ]*\) .*/\1/p' "$report/report.md")
out="$BUILD_WORKSPACE_DIRECTORY/docs/results"
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cp "$report/report.md" "$out.tmp/"
for section in "$report"/*/; do
  name=$(basename "$section")
  mkdir -p "$out.tmp/$name"
  cp "$section"/verdicts.csv "$section"/manifest.textproto "$out.tmp/$name/"
  for figure in "$section"/*.svg; do [[ -e "$figure" ]] && cp "$figure" "$out.tmp/$name/"; done
done
chmod -R u+w "$out.tmp"
# README's "what reproduces" block: the page's summary table, linked into the page; made and checked before
# anything in the repository is replaced.
readme="$BUILD_WORKSPACE_DIRECTORY/README.md"
block="$(mktemp)"; trap 'rm -f "$block"' EXIT
"$readme_block" "$out.tmp/report.md" > "$block"
if ! grep -q '^<!-- results:begin -->$' "$readme" || ! grep -q '^<!-- results:end -->$' "$readme"; then
  fail "README.md has no <!-- results:begin --> / <!-- results:end --> lines to fill"
fi
rm -rf "$out"
mv "$out.tmp" "$out"
awk -v block="$block" '
  /^<!-- results:begin -->$/ { print; while ((getline line < block) > 0) print line; skip = 1; next }
  /^<!-- results:end -->$/ { skip = 0 }
  !skip' "$readme" > "$readme.tmp"
mv "$readme.tmp" "$readme"
echo "published the cpu report of revision $revision to docs/results ($(du -sh "$out" | cut -f1)) and its summary to README.md; commit both"
