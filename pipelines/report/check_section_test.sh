#!/usr/bin/env bash
# Every experiment's smoke test: prints the section built at the test's scale, then the claims engine checks it
# against its claims file (analysis/claims/section_checks.h: the declared tables complete and finite, titles,
# figures and files present, one verdict per claim). Nothing experiment-specific lives here.
# Usage: check_section_test.sh SECTION_DIR JUDGE_CLAIMS CLAIMS [--min_n=N] [--seeds=S,...]
set -euo pipefail
section=$1 judge=$2 claims=$3
shift 3
cat "$section/section.md"
"$judge" --verify --claims="$claims" "$@" "$section"
echo "1 passed, 0 failed"
