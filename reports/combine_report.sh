#!/usr/bin/env bash
# Writes the combined report: OUT_DIR/report.md (summary of agreements with the papers, then every
# experiment's section) and OUT_DIR/<name>/ (that experiment's CSVs, figures and manifest).
# Usage: combine_report.sh OUT_DIR STABLE_STATUS IDENTITY [SECTION_DIR TITLE]...
set -euo pipefail
out=$1 status=$2 identity=$3
shift 3
mkdir -p "$out"
report="$out/report.md"
status_value() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print; found = 1 } END { if (!found) print "unknown" }' "$status"; }

names=() titles=()
while (($# >= 2)); do
  section=$1 title=$2
  shift 2
  name=$(sed -n 's/^experiment: "\(.*\)"$/\1/p' "$section/manifest.textproto")
  scale=$(sed -n 's/^scale: "\(.*\)"$/\1/p' "$section/manifest.textproto")
  mkdir -p "$out/$name"
  cp "$section"/* "$out/$name/"
  chmod -R u+w "$out/$name"
  names+=("$name") titles+=("$title")
done

# Verdict lines: the claims checks every report prints ("... HOLDS", "DOES NOT HOLD", and "NOT TESTABLE" or
# "UNRESOLVED" where our data cannot decide).
verdicts() { grep -E 'HOLDS|DOES NOT HOLD|NOT TESTABLE|UNRESOLVED' "$out/$1/section.md" || true; }
count() { verdicts "$1" | grep -cE "$2" || true; }

{
  echo "# Sparse layers: what reproduces"
  echo
  echo "Code revision $(status_value STABLE_GIT_REVISION) ($(status_value STABLE_GIT_STATE)), scale \`${scale:-unknown}\`."
  echo "Every number below was measured by this build; the papers' numbers are quoted beside ours with their"
  echo "table or figure. Each experiment's CSVs, figures and manifest (input digests, build identity, wall time)"
  echo "are in the folder named after it. Regenerate with \`./tools/bazel build //reports\`."
  echo
  echo "Build identity (what the training actions' cache keys include beyond the workspace):"
  echo
  sed 's/^/- /' "$identity"
  echo
  echo "## Summary: the papers' claims on our rows"
  echo
  echo "| experiment | regenerates | holds | does not hold | not testable or unresolved |"
  echo "|---|---|---|---|---|"
  for i in "${!names[@]}"; do
    n=${names[$i]}
    printf '| [%s](#%s) | %s | %d | %d | %d |\n' "$n" "$n" "${titles[$i]}" \
      "$(count "$n" HOLDS)" "$(count "$n" 'DOES NOT HOLD')" "$(count "$n" 'NOT TESTABLE|UNRESOLVED')"
  done
  echo
  echo "A claim that does not hold at our scale is a result, not an error: the sections say what we ran."
  for i in "${!names[@]}"; do
    n=${names[$i]}
    echo
    echo "<a id=\"$n\"></a>"
    echo "## $n: ${titles[$i]}"
    echo
    # Demote the section's headings one level; its paths point at its folder here.
    sed -e 's/^## /### /' -e "s|${n}_report/|$n/|g" "$out/$n/section.md"
    figures=$(cd "$out/$n" && ls -- *.svg *.png 2>/dev/null || true)
    if [[ -n "$figures" ]]; then
      echo
      for f in $figures; do echo "![$n: ${f%.*}]($n/$f)"; done
    fi
  done
} >"$report"
