#!/bin/bash
# quiet.sh [--discard_stdout] LOG TOOL [ARGS...]: runs TOOL with its stderr (progress) in LOG, or in a
# temporary file when LOG is "-"; if TOOL fails, the last 5 lines of LOG (its one-line `<program>: error:`
# last) go to stderr and the action fails. The rule form of quiet.bzl's genrule wrapper.
set -u
stdout=/dev/stdout
if [[ "$1" == "--discard_stdout" ]]; then
  stdout=/dev/null
  shift
fi
log=$1
shift
keep=1
if [[ "$log" == "-" ]]; then
  log=$(mktemp)
  keep=0
fi
if ! "$@" 2> "$log" > "$stdout"; then
  tail -n 5 "$log" >&2
  [[ $keep == 1 ]] || rm -f "$log"
  exit 1
fi
[[ $keep == 1 ]] || rm -f "$log"
