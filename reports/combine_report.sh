#!/usr/bin/env bash
# Writes the combined report: OUT_DIR/report.md (the summary of the papers' claims on our rows, then every
# experiment's section), OUT_DIR/<name>/ (that experiment's section folder: CSVs, figures, verdicts.csv,
# manifest) and OUT_DIR/report.html (the same report as one self-contained page: Debian's pandoc, figures
# embedded, verdicts coloured by verdicts.lua and report.css).
# The summary table is the claims engine's (`judge_claims --summarize` on every section's verdicts.csv): it
# counts the papers' claims only, and the controls apart.
# Usage: combine_report.sh OUT_DIR STABLE_STATUS IDENTITY SCALE JUDGE_CLAIMS LUA_FILTER CSS REPORT_BODY
#          [NAME SECTION_DIR TITLE]...
set -euo pipefail
out=$1 status=$2 identity=$3 scale=$4 judge_claims=$5 filter=$6 css=$7 report_body=$8
shift 8
[[ "$css" == /* ]] || css="$PWD/$css"  # pandoc reads --css as a URL: from here, not from --resource-path
mkdir -p "$out"
report="$out/report.md"
# A key of Bazel's stable workspace status ("KEY value" lines).
status_value() { sed -n "s/^$1 //p" "$status" | grep . || echo unknown; }

sections=()
while (($# >= 3)); do
  name=$1 section=$2 title=$3
  shift 3
  [[ -s "$section/verdicts.csv" ]] || { echo "combine_report: $section has no verdicts.csv" >&2; exit 1; }
  mkdir -p "$out/$name"
  cp "$section"/* "$out/$name/"
  chmod -R u+w "$out/$name"
  sections+=("$name" "$out/$name" "$title")
done

{
  echo "# Sparse layers: what reproduces"
  echo
  echo "Code revision $(status_value STABLE_GIT_REVISION) ($(status_value STABLE_GIT_STATE)), scale \`$scale\`."
  echo "Every number below was measured by this build; the papers' numbers are quoted beside ours with their"
  echo "table or figure. Each experiment's CSVs, figures, verdicts and manifest (input digests, build identity,"
  echo "wall time) are in the folder named after it. Regenerate with \`./tools/bazel build //reports\`."
  echo
  echo "Build identity (what the training actions' cache keys include beyond the workspace):"
  echo
  sed 's/^/- /' "$identity"
  echo
  bash "$report_body" "$judge_claims" "${sections[@]}"
} >"$report"

# One page, nothing outside it: --self-contained embeds every figure (as a data URI) and the stylesheet, and
# fails on a figure it cannot find.
pandoc --from=markdown-auto_identifiers --to=html5 --standalone --self-contained \
  --metadata=pagetitle="Sparse layers: what reproduces" \
  --lua-filter="$filter" --css="$css" --resource-path="$out" \
  --output="$out/report.html" "$report"
