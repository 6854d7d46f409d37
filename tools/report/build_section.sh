#!/usr/bin/env bash
# The action behind experiment_report's <name>_section: runs an experiment's report.sh into OUT_DIR, keeps its
# printout as section.md (paths into the build tree shown as <name>_report/, where `bazel run` puts them) and
# writes manifest.textproto: what went in (SHA-256 of every input file, and of a pretrained model's source
# files), build identity, scale, wall time. With a pretrained model's import manifest among the results,
# section.md opens with PRETRAINED_LINE (printf format, %s its model_type) naming the model.
# Usage: build_section.sh OUT_DIR NAME SCALE IDENTITY REPORT_SH PRETRAINED_LINE N_TOOLS TOOL... RESULT...
set -euo pipefail
out=$1 name=$2 scale=$3 identity=$4 script=$5 pretrained_line=$6 n_tools=$7
shift 7
tools=("${@:1:n_tools}")
results=("${@:n_tools+1}")
start=$(date +%s.%N)
mkdir -p "$out"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The import manifests of pretrained models among the results (datasets/pretrained: HF_MODEL, CHESS_MODEL).
pretrained_manifests=()
for path in "${results[@]}"; do
  [[ "$path" == */datasets/pretrained/*.manifest.textproto ]] && pretrained_manifests+=("$path")
done
for manifest in "${pretrained_manifests[@]}"; do
  if [[ -z "$pretrained_line" ]]; then
    echo "build_section: $name has a pretrained model among its results ($manifest) but no pretrained_line" >&2
    exit 1
  fi
  # shellcheck disable=SC2059 # the format is the experiment's pretrained_line
  printf "$pretrained_line (manifest.textproto: the SHA-256 of each of its files).\n\n" \
    "$(sed -n 's/^model_type: "\(.*\)"/\1/p' "$manifest")"
done >"$out/section.md.tmp"
if ! "$script" "$out" "${tools[@]}" "${results[@]}" >>"$out/section.md.tmp" 2>"$log"; then
  cat "$log" >&2
  echo "build_section: $script failed for $name" >&2
  exit 1
fi
sed "s|$out|${name}_report|g" "$out/section.md.tmp" >"$out/section.md"
rm -f "$out/section.md.tmp"

# Every input file once, in a stable order; a directory input counts each file under it.
input_digests() {
  for path in "${tools[@]}" "${results[@]}"; do
    if [[ -d "$path" ]]; then find -L "$path" -type f; else echo "$path"; fi
  done | LC_ALL=C sort -u | while read -r file; do
    printf 'input { path: "%s" sha256: "%s" }\n' "${file#bazel-out/*/bin/}" "$(sha256sum "$file" | cut -d' ' -f1)"
  done
}
{
  echo "# Written by tools/report/build_section.sh: what this report was made from."
  printf 'experiment: "%s"\nscale: "%s"\nreport_script_sha256: "%s"\n' "$name" "$scale" "$(sha256sum "$script" | cut -d' ' -f1)"
  input_digests
  # Each pretrained model (HF_MODEL, CHESS_MODEL): the SHA-256 of each of its source files.
  for path in "${pretrained_manifests[@]}"; do
    echo "pretrained_model {"
    grep -v '^#' "$path" | sed 's/^/  /'
    echo "}"
  done
  while IFS= read -r line; do printf 'build_identity: "%s"\n' "${line//\"/\\\"}"; done <"$identity"
  awk -v start="$start" -v end="$(date +%s.%N)" 'BEGIN { printf "threads: 1\nwall_seconds: %.2f\n", end - start }'
} >"$out/manifest.textproto"
