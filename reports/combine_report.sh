#!/usr/bin/env bash
# Writes the combined report: OUT_DIR/report.md (the summary of the papers' claims on our rows, then every
# experiment's section), OUT_DIR/<name>/ (that experiment's section folder: CSVs, figures, verdicts.csv,
# manifest) and OUT_DIR/report.html (the same report as one self-contained page: Debian's pandoc, figures
# embedded, verdicts coloured by verdicts.lua and report.css).
# The summary table is the claims engine's (`judge_claims --summarize` on every section's verdicts.csv): it
# counts the papers' claims only, and the controls apart.
# Usage: combine_report.sh OUT_DIR STABLE_STATUS IDENTITY SCALE JUDGE_CLAIMS LUA_FILTER CSS [NAME SECTION_DIR TITLE]...
set -euo pipefail
out=$1 status=$2 identity=$3 scale=$4 judge_claims=$5 filter=$6 css=$7
shift 7
[[ "$css" == /* ]] || css="$PWD/$css"  # pandoc reads --css as a URL: from here, not from --resource-path
mkdir -p "$out"
report="$out/report.md"
# A key of Bazel's stable workspace status ("KEY value" lines).
status_value() { sed -n "s/^$1 //p" "$status" | grep . || echo unknown; }

names=() titles=() verdicts=()
while (($# >= 3)); do
  name=$1 section=$2 title=$3
  shift 3
  [[ -s "$section/verdicts.csv" ]] || { echo "combine_report: $section has no verdicts.csv" >&2; exit 1; }
  mkdir -p "$out/$name"
  cp "$section"/* "$out/$name/"
  chmod -R u+w "$out/$name"
  names+=("$name") titles+=("$title") verdicts+=("$out/$name/verdicts.csv")
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
  echo "## Summary: the papers' claims on our rows"
  echo
  echo "Verdicts of the papers' claims (each experiment's verdicts.csv); controls and sanity checks are counted"
  echo "apart, never as claims."
  echo
  "$judge_claims" --summarize "${verdicts[@]}"
  echo
  echo "What each section regenerates:"
  echo
  for i in "${!names[@]}"; do echo "- [${names[$i]}](#${names[$i]}): ${titles[$i]}"; done
  echo
  echo "A claim that does not hold at our scale is a result, not an error: the sections say what we ran."
  for i in "${!names[@]}"; do
    n=${names[$i]}
    echo
    # The summary's link target (headings get no automatic ids in the HTML, so ids stay unique).
    echo "<a id=\"$n\"></a>"
    echo
    echo "## $n: ${titles[$i]}"
    echo
    # Demote the section's headings one level; its paths point at its folder here.
    text=$(sed -e 's/^## /### /' -e "s|${n}_report/|$n/|g" "$out/$n/section.md")
    printf '%s\n' "$text"
    # Figures the section does not show as images itself (the engine names them in a line of text), after it.
    shown=$(grep -oE '!\[[^]]*\]\([^)]*\)' <<<"$text" || true)
    figures=()
    for f in $(cd "$out/$n" && ls -- *.svg *.png 2>/dev/null || true); do
      [[ "$shown" == *"($n/$f)"* ]] || figures+=("$f")
    done
    if ((${#figures[@]} > 0)); then
      echo
      for f in "${figures[@]}"; do echo "![$n: ${f%.*}]($n/$f)"; done
    fi
  done
} >"$report"

# One page, nothing outside it: --self-contained embeds every figure (as a data URI) and the stylesheet, and
# fails on a figure it cannot find.
pandoc --from=markdown-auto_identifiers --to=html5 --standalone --self-contained \
  --metadata=pagetitle="Sparse layers: what reproduces" \
  --lua-filter="$filter" --css="$css" --resource-path="$out" \
  --output="$out/report.html" "$report"
