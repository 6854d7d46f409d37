#!/usr/bin/env bash
# The body of a combined page, the same for the combined report (combine_report.sh) and the results page
# (publish_results.sh): the claims engine's summary of the sections' verdicts (`judge_claims --summarize`: the
# papers' claims only, controls and design statements apart), what each section regenerates, then every section:
# its section.md with every heading one level down and its paths pointing at NAME/, then the figures it does not
# show as images itself. A published section (its folder has provenance.txt) opens with the revision that built it.
# Usage: report_body.sh JUDGE_CLAIMS [NAME FOLDER TITLE]...   (FOLDER: the section's folder, NAME/ on the page)
set -euo pipefail
judge_claims=$1
shift
names=() folders=() titles=() verdicts=()
while (($# >= 3)); do
  names+=("$1") folders+=("$2") titles+=("$3") verdicts+=("$2/verdicts.csv")
  shift 3
done
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
  n=${names[$i]} folder=${folders[$i]}
  echo
  # The summary's link target (headings get no automatic ids in the HTML, so ids stay unique).
  echo "<a id=\"$n\"></a>"
  echo
  echo "## $n: ${titles[$i]}"
  echo
  if [[ -s "$folder/provenance.txt" ]]; then
    echo "Built at revision \`$(sed -n 's/^revision //p' "$folder/provenance.txt")\`," \
      "published $(sed -n 's/^published //p' "$folder/provenance.txt")."
    echo
  fi
  text=$(sed -e 's/^## /### /' -e "s|${n}_report/|$n/|g" "$folder/section.md")
  printf '%s\n' "$text"
  # Figures the section does not show as images itself (the engine names them in a line of text), after it.
  shown=$(grep -oE '!\[[^]]*\]\([^)]*\)' <<<"$text" || true)
  figures=()
  for f in $(cd "$folder" && ls -- *.svg *.png 2>/dev/null || true); do
    [[ "$shown" == *"($n/$f)"* ]] || figures+=("$f")
  done
  if ((${#figures[@]} > 0)); then
    echo
    for f in "${figures[@]}"; do echo "![$n: ${f%.*}]($n/$f)"; done
  fi
done
