#!/usr/bin/env bash
# Publishes cpu report sections into the repository's results page, docs/results/, one experiment or all:
#   ./tools/bazel run //reports:publish_<experiment>   # builds that experiment's cpu report, replaces its folder
#   ./tools/bazel run //reports:publish_results        # every experiment (the whole cpu report)
# Each experiment's folder holds what a visitor reads without building: section.md, its figures, verdicts.csv,
# manifest.textproto and provenance.txt (the code revision and build identity that built it, the date). Then
# report.md is reassembled from every published folder: each experiment's revision, the claims engine's summary
# of the published verdicts, the experiments not yet published, and every section; README.md's block between
# <!-- results:begin --> and <!-- results:end --> becomes the page's summary. An experiment at a time fits a
# session (each is under 90 min cold at cpu) on a machine whose Bazel cache may not last to the next.
# Only a committed, unmodified tree is published, so the revision a section names is the one that built it, and
# only a build on our own models (a user's HF_MODEL or CHESS_MODEL stays in the user's own report).
# //reports:results_page_test then keeps the page honest against the current claims files.
# Usage (bazel run sets BUILD_WORKSPACE_DIRECTORY):
#   publish_results.sh REPORT_DIR README_BLOCK_SCRIPT REPORT_BODY JUDGE_CLAIMS EXPERIMENT...
# REPORT_DIR: a combined report (one section or all); EXPERIMENT...: every experiment of //reports, in order.
set -euo pipefail
report=$(readlink -f "$1")
readme_block=$(readlink -f "$2")
report_body=$(readlink -f "$3")
judge_claims=$(readlink -f "$4")
shift 4
experiments=("$@")
fail() { echo "publish_results: error: $*" >&2; exit 1; }
[[ -n "${BUILD_WORKSPACE_DIRECTORY:-}" ]] || fail "run me with ./tools/bazel run //reports:publish_results"
[[ -s "$report/report.md" ]] || fail "$report has no report.md"
scale=$(sed -n 's/^Code revision .*, scale `\([a-z]*\)`\.$/\1/p' "$report/report.md")
[[ "$scale" == cpu ]] || fail "the report is at scale '${scale:-unknown}'; publish a cpu build (the default of bazel run)"
revision=$(sed -n 's/^Code revision \([^ ]*\) (\([a-z]*\)).*/\1/p' "$report/report.md")
state=$(sed -n 's/^Code revision \([^ ]*\) (\([a-z]*\)).*/\2/p' "$report/report.md")
[[ "$state" == clean ]] || fail "revision $revision was built with uncommitted changes ($state): commit, then publish"
[[ "$(git -C "$BUILD_WORKSPACE_DIRECTORY" rev-parse HEAD)" == "$revision" ]] ||
  fail "the report names revision $revision, the tree is at $(git -C "$BUILD_WORKSPACE_DIRECTORY" rev-parse HEAD)"
identity=$(awk '/^Build identity/ { inside = 1; next } inside && /^- / { print } inside && /^$/ && seen++ { exit }' \
  "$report/report.md")
published=$(date -u +%Y-%m-%d)

page="$BUILD_WORKSPACE_DIRECTORY/docs/results"
new="$page.tmp"
block="$(mktemp)"
trap 'rm -rf "$new" "$block"' EXIT
rm -rf "$new"
mkdir -p "$new"
# The folders already published, minus experiments //reports no longer has.
if [[ -d "$page" ]]; then
  for folder in "$page"/*/; do
    [[ -d "$folder" ]] || continue
    name=$(basename "$folder")
    if [[ " ${experiments[*]} " == *" $name "* ]]; then
      cp -r "$folder" "$new/$name"
    else
      echo "publish_results: dropping $name from the page (not an experiment of //reports)" >&2
    fi
  done
fi
# This report's sections replace theirs.
replaced=()
for section in "$report"/*/; do
  name=$(basename "$section")
  # The page shows our pinned models' results; a user's model (HF_MODEL, CHESS_MODEL) is the user's own report.
  ! grep -q '^pretrained_model {' "$section/manifest.textproto" ||
    fail "$name was built on a pretrained model (HF_MODEL or CHESS_MODEL); publish a build without --repo_env"
  title=$(sed -n "s/^- \[$name\](#$name): //p" "$report/report.md")
  [[ -n "$title" ]] || fail "no title for $name in $report/report.md"
  rm -rf "${new:?}/$name"
  mkdir -p "$new/$name"
  cp "$section"/section.md "$section"/verdicts.csv "$section"/manifest.textproto "$new/$name/"
  for figure in "$section"/*.svg; do [[ -e "$figure" ]] && cp "$figure" "$new/$name/"; done
  {
    echo "experiment $name"
    echo "title $title"
    echo "revision $revision"
    echo "state $state"
    echo "scale $scale"
    echo "published $published"
    sed 's/^- /identity /' <<<"$identity"
  } >"$new/$name/provenance.txt"
  replaced+=("$name")
done
# Bazel's outputs are read-only and executable; the page's files are plain files.
find "$new" -type d -exec chmod 755 {} + && find "$new" -type f -exec chmod 644 {} +

# A provenance field of a published folder.
field() { sed -n "s/^$2 //p" "$new/$1/provenance.txt"; }
names=() missing=() sections=()
for name in "${experiments[@]}"; do
  if [[ -s "$new/$name/provenance.txt" ]]; then
    names+=("$name") sections+=("$name" "$new/$name" "$(field "$name" title)")
  else
    missing+=("$name")
  fi
done
{
  echo "# Sparse layers: what reproduces"
  echo
  echo "Scale \`cpu\`. Each experiment's section was built and published on its own, at the code revision its row"
  echo "names (\`./tools/bazel run //reports:publish_<experiment>\`; \`//reports:publish_results\` does all of them),"
  echo "and its folder holds its figures, verdicts.csv, manifest (input digests, wall time) and provenance.txt"
  echo "(the build identity: what the training actions' cache keys include beyond the workspace)."
  echo
  echo "| experiment | code revision | published |"
  echo "|---|---|---|"
  for name in "${names[@]}"; do
    echo "| [$name](#$name) | \`$(field "$name" revision | cut -c1-12)\` | $(field "$name" published) |"
  done
  echo
  if ((${#missing[@]} > 0)); then
    echo "Not yet published at cpu scale (no verdict of theirs is on this page): $(sed 's/ /, /g' <<<"${missing[*]}")."
    echo
  fi
  bash "$report_body" "$judge_claims" "${sections[@]}"
} >"$new/report.md"

# README's "what reproduces" block: the page's summary, linked into the page; made and checked before anything
# in the repository is replaced.
readme="$BUILD_WORKSPACE_DIRECTORY/README.md"
"$readme_block" "$new/report.md" > "$block"
if ! grep -q '^<!-- results:begin -->$' "$readme" || ! grep -q '^<!-- results:end -->$' "$readme"; then
  fail "README.md has no <!-- results:begin --> / <!-- results:end --> lines to fill"
fi
rm -rf "$page"
mv "$new" "$page"
awk -v block="$block" '
  /^<!-- results:begin -->$/ { print; while ((getline line < block) > 0) print line; skip = 1; next }
  /^<!-- results:end -->$/ { skip = 0 }
  !skip' "$readme" > "$readme.tmp"
mv "$readme.tmp" "$readme"
echo "published ${replaced[*]} (cpu, revision ${revision:0:12}) to docs/results ($(du -sh "$page" | cut -f1));" \
  "${#names[@]} of ${#experiments[@]} experiments are on the page; commit docs/results and README.md"
