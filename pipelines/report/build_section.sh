#!/usr/bin/env bash
# The action behind experiment_report's <name>_section: the claims engine judges the experiment's named tidy
# tables into OUT_DIR (no script sorts files by name: each table is declared in the BUILD file). section.md is
# the engine's printout (paths into the build tree shown as <name>_report/, where `bazel run` puts them), then
# each listing (several files concatenated, each under a "# <file>" line, the first HEAD lines shown); the claims
# file is copied beside; manifest.textproto records what went in (SHA-256 of every input file, and of a
# pretrained model's source files), build identity, scale, wall time. With a pretrained model's import manifest
# among the inputs, section.md opens with PRETRAINED_LINE (printf format, %s its model_type) naming the model.
# Usage: build_section.sh OUT_DIR NAME SCALE IDENTITY PRETRAINED_LINE JUDGE CLAIMS N_PRETRAINED PRETRAINED...
#            N_LISTINGS [LISTING_FILE HEAD TITLE FILES(comma-separated)]... -- JUDGE_FLAG...
set -euo pipefail
out=$1 name=$2 scale=$3 identity=$4 pretrained_line=$5 judge=$6 claims=$7 n_pretrained=$8
shift 8
pretrained_manifests=("${@:1:n_pretrained}")
shift "$n_pretrained"
n_listings=$1
shift
listings=("${@:1:4*n_listings}")
shift $((4 * n_listings))
[[ "${1:-}" == "--" ]] || { echo "build_section: expected -- before the engine's flags" >&2; exit 2; }
shift
judge_flags=("$@")
start=$(date +%s.%N)
mkdir -p "$out"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for manifest in "${pretrained_manifests[@]}"; do
  if [[ -z "$pretrained_line" ]]; then
    echo "build_section: $name has a pretrained model among its inputs ($manifest) but no pretrained_line" >&2
    exit 1
  fi
  # shellcheck disable=SC2059 # the format is the experiment's pretrained_line
  printf "$pretrained_line (manifest.textproto: the SHA-256 of each of its files).\n\n" \
    "$(sed -n 's/^model_type: "\(.*\)"/\1/p' "$manifest")"
done >"$out/section.md.tmp"
if ! "$judge" --claims="$claims" --out_dir="$out" "${judge_flags[@]}" >>"$out/section.md.tmp" 2>"$log"; then
  cat "$log" >&2
  echo "build_section: the claims engine failed for $name" >&2
  exit 1
fi
cp "$claims" "$out/claims.textproto"
inputs=("$claims")
for ((i = 0; i < n_listings; ++i)); do
  file=${listings[4 * i]} head=${listings[4 * i + 1]} title=${listings[4 * i + 2]}
  IFS=, read -r -a parts <<<"${listings[4 * i + 3]}"
  for part in "${parts[@]}"; do
    echo "# ${part#bazel-out/*/bin/}"
    cat "$part"
  done >"$out/$file"
  inputs+=("${parts[@]}")
  printf '\n## %s\n\n%s (every file: %s)\n\n```\n' "$title" "${parts[0]#bazel-out/*/bin/}" "$out/$file"
  head -n "$head" "${parts[0]}"
  echo '```'
done >>"$out/section.md.tmp"
sed "s|$out|${name}_report|g" "$out/section.md.tmp" >"$out/section.md"
rm -f "$out/section.md.tmp"

# Every input file once, in a stable order: the engine and plot scripts, the claims file, the tables' files,
# listings, pretrained manifests.
inputs+=("$judge")
for flag in "${judge_flags[@]}"; do
  case "$flag" in
    --table=*) IFS=, read -r -a parts <<<"${flag#--table=*=}" && inputs+=("${parts[@]}") ;;
    --plot=* | --plot_heatmap=*) inputs+=("${flag#*=}") ;;
  esac
done
inputs+=("${pretrained_manifests[@]}")
input_digests() {
  printf '%s\n' "${inputs[@]}" | LC_ALL=C sort -u | while read -r file; do
    printf 'input { path: "%s" sha256: "%s" }\n' "${file#bazel-out/*/bin/}" "$(sha256sum "$file" | cut -d' ' -f1)"
  done
}
{
  echo "# Written by pipelines/report/build_section.sh: what this report was made from."
  printf 'experiment: "%s"\nscale: "%s"\n' "$name" "$scale"
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
