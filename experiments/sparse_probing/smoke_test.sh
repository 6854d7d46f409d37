#!/bin/bash
# The probing section at smoke scale, its structure only (verdicts are the engine's, not checked here):
# both seeds probed every task x class with the same methods (7 layer kinds: MxD-GELU and MxD-SwiGLU
# apart), document- and token-level (brown_pos) tasks, F1 in [0, 1]; verdicts.csv gives every control and claim of claims.textproto one verdict of the
# engine's vocabulary, over n = 2 seeds.
set -euo pipefail
# $1: the report section built at the test's scale (tools/report/experiment_report.bzl).
section=$1
fail() { echo "sparse_probing smoke test: $*"; exit 1; }
cat "$section/section.md"
csv="$section/sparse_probing.csv"
column() { awk -F, -v name="$1" 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == name) c = i; next } { print $c }' "$csv"; }
kinds=$(column layer_kind | sort -u | wc -l)
[[ "$kinds" -eq 7 ]] || fail "expected 7 layer kinds, got $kinds"
tasks=$(column task | sort -u | wc -l)
[[ "$tasks" -ge 4 ]] || fail "expected the probing tasks, got $tasks"
granularities=$(column granularity | sort -u | tr '\n' ' ')
[[ "$granularities" == "document token " ]] || fail "expected document- and token-level tasks, got $granularities"
[[ "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next } $c["task"] == "brown_pos" { print $c["granularity"] }' "$csv" | sort -u)" == token ]] ||
  fail "brown_pos is not read at the token level"
per_seed=$(column seed | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }')
read -r first second rest <<<"$per_seed"
[[ -z "${rest:-}" && "${first%%:*}" == 1 && "${second%%:*}" == 2 && "${first#*:}" == "${second#*:}" ]] ||
  fail "expected seeds 1 and 2 with the same number of rows, got $per_seed"
awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
  { if ($c["best_f1"] < 0 || $c["best_f1"] > 1 || $c["selected_f1"] < 0 || $c["selected_f1"] > 1) { print "bad F1: " $0; bad = 1 } }
  END { exit bad }' "$csv" || fail "bad rows"

# The engine checks the verdicts against the claims file: every control and claim once, each verdict in
# its vocabulary, n = 2 seeds or more behind every interval (judge_claims --verify, analysis/claims).
"$2" --verify --claims="$3" --min_n=2 "$section/verdicts.csv" || fail "verdicts.csv"
echo "1 passed, 0 failed"
