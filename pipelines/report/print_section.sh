#!/usr/bin/env bash
# `bazel run //experiments/<name>`: prints the experiment's report section and copies its CSVs, figures and
# manifest to <name>_report/ in the directory bazel was run from.
# Usage: print_section.sh SECTION_DIR NAME
set -euo pipefail
section=$1 name=$2
dest="${BUILD_WORKING_DIRECTORY:-.}/${name}_report"
mkdir -p "$dest"
cp -f "$section"/* "$dest/"
chmod -R u+w "$dest"
cat "$section/section.md"
