#!/usr/bin/env bash
# The action behind experiment_report's <name>_section: runs an experiment's report.sh into OUT_DIR, keeps its
# printout as section.md (paths into the build tree shown as <name>_report/, where `bazel run` puts them) and
# writes manifest.textproto: what went in (SHA-256 of every input file, and of a pretrained base model's source
# files), build identity, scale, wall time.
# Usage: build_section.sh OUT_DIR NAME SCALE IDENTITY REPORT_SH N_TOOLS TOOL... RESULT...
set -euo pipefail
out=$1 name=$2 scale=$3 identity=$4 script=$5 n_tools=$6
shift 6
tools=("${@:1:n_tools}")
results=("${@:n_tools+1}")
start=$(date +%s.%N)
mkdir -p "$out"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$script" "$out" "${tools[@]}" "${results[@]}" >"$out/section.md.tmp" 2>"$log"; then
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
  # A pretrained base model (datasets/pretrained, --repo_env=HF_MODEL): the SHA-256 of each of its source files.
  for path in "${results[@]}"; do
    if [[ "$path" == */datasets/pretrained/*.manifest.textproto ]]; then
      echo "pretrained_model {"
      grep -v '^#' "$path" | sed 's/^/  /'
      echo "}"
    fi
  done
  while IFS= read -r line; do printf 'build_identity: "%s"\n' "${line//\"/\\\"}"; done <"$identity"
  awk -v start="$start" -v end="$(date +%s.%N)" 'BEGIN { printf "threads: 1\nwall_seconds: %.2f\n", end - start }'
} >"$out/manifest.textproto"
