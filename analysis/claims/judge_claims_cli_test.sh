#!/usr/bin/env bash
# judge_claims as a user meets it: a section, verdicts.csv, merged tables and a figure with error bars from
# hand-made tables; a control that is not beaten; a design statement apart; simultaneous intervals over levels;
# the seed plan from the run as a pilot; one-line errors and a non-zero exit for bad input.
set -euo pipefail
judge=$1 plot=$2 plan=$3
dir="$TEST_TMPDIR/cli"
mkdir -p "$dir/out"
fail() { echo "judge_claims_cli_test: $*"; exit 1; }

# Two files of one tidy table (as two evaluation actions write them), three seeds per arm.
printf 'method,k,seed,ce,ce_zero\n' >"$dir/a.csv"
printf 'method,k,seed,ce,ce_zero\n' >"$dir/b.csv"
for s in 1 2 3; do
  for k in 2 8; do
    echo "mxd,$k,$s,4.0$s,4.5" >>"$dir/a.csv"
    echo "transcoder,$k,$s,4.2$((s * s)),4.5" >>"$dir/b.csv"
    echo "random,$k,$s,4.6$s,4.5" >>"$dir/b.csv"
  done
done
cat >"$dir/claims.textproto" <<'CLAIMS'
experiment: "toy"
preamble: "A toy section."
tables { title: "CE" table: "frontier.csv" rows: "method" columns: "k" metrics: "ce" }
figures { file: "ce.svg" table: "frontier.csv" x: "k" y: "ce" group: "method" title: "CE vs K" logx: true
  reference_lines { label: "zero ablation" column: "ce_zero" } reference_lines { label: "paper (Toy Fig. 1)" value: 4.1 } }
controls { id: "beats_zero" statement: "the fit beats zero ablation" table: "frontier.csv"
  arm_column: "method" a: "mxd" metric: "ce" b_metric: "ce_zero" better: LOWER_IS_BETTER comparison: BETTER average_over: "k" }
controls { id: "random_beats_zero" statement: "a random layer beats zero ablation" table: "frontier.csv"
  arm_column: "method" a: "random" metric: "ce" b_metric: "ce_zero" better: LOWER_IS_BETTER comparison: BETTER average_over: "k" }
claims { id: "C1" source: "Toy Fig. 1" statement: "MxD has lower CE than the Transcoder at every K"
  table: "frontier.csv" arm_column: "method" a: "mxd" b: "transcoder" metric: "ce" better: LOWER_IS_BETTER
  comparison: BETTER over: "k" quantifier: EVERY controls: "beats_zero"
  smallest_effect: 0.05 smallest_effect_reason: "toy" }
claims { id: "C2" statement: "gated on a control that fails" table: "frontier.csv" arm_column: "method"
  a: "mxd" b: "transcoder" metric: "ce" better: LOWER_IS_BETTER comparison: BETTER quantifier: POOLED
  over: "k" controls: "random_beats_zero" smallest_effect: 0.05 smallest_effect_reason: "toy" }
claims { id: "D1" statement: "zero ablation costs 4.5 nats by construction" table: "frontier.csv"
  arm_column: "method" a: "mxd" metric: "ce_zero" reference_value: 5 better: LOWER_IS_BETTER comparison: BETTER
  average_over: "k" basis: BY_DESIGN design_reason: "the toy table fixes ce_zero" }
CLAIMS
"$judge" --claims="$dir/claims.textproto" --out_dir="$dir/out" --plot="$plot" \
  --table=frontier.csv="$dir/a.csv,$dir/b.csv" >"$dir/section.md"
cat "$dir/section.md"
grep -q '^- C1 (Toy Fig. 1): MxD has lower CE than the Transcoder at every K → \*\*HOLDS\*\*' "$dir/section.md" ||
  fail "C1 line"
# Differences -0.20, -0.22, -0.26 at each K: mean -0.2267, s 0.03055, simultaneous over the 2 levels (each at
# 97.5%: t_{0.9875, 2} = 6.2053): -0.2267 +- 0.1094.
grep -q '  - k = 2: -0.2267, 97.5% CI \[-0.3361, -0.1172\], n = 3 seeds (paired t) → \*\*HOLDS\*\*' "$dir/section.md" ||
  fail "C1 level line"
grep -q 'simultaneous 95% intervals over its 2 levels (Bonferroni: each at 97.5%)' "$dir/section.md" ||
  fail "C1 family"
# The design statement apart, never counted; the error rate stated.
awk '/^## Checked by construction/ {d = NR} /^- D1/ {x = NR} /^## The papers/ {p = NR} END {exit !(d < x && x < p)}' \
  "$dir/section.md" || fail "design statement not apart"
grep -q '^Error rate: 1 empirical claims judged' "$dir/section.md" || fail "error rate line"
grep -q '^- C2: .*\*\*NOT TESTABLE\*\*.*Not testable: control random_beats_zero is DOES NOT HOLD' "$dir/section.md" ||
  fail "C2 not gated"
grep -q '^| mxd | 4.02 ± 0.025 | 4.02 ± 0.025 | 3 |$' "$dir/section.md" || fail "table row"
# Controls are listed apart from the claims.
awk '/^## Controls/ {c = NR} /^## The papers/ {p = NR} /^- beats_zero/ {b = NR} END {exit !(c < b && b < p)}' \
  "$dir/section.md" || fail "controls not apart"
[[ $(wc -l <"$dir/out/frontier.csv") -eq 19 ]] || fail "merged table rows"
head -1 "$dir/out/verdicts.csv" | grep -qx 'experiment,kind,id,source,statement,level,verdict,effect,ci_low,ci_high,n,paper_effect,reason,confidence' ||
  fail "verdicts header"
grep -q '^toy,design,D1,' "$dir/out/verdicts.csv" || fail "D1 is not a design row"
grep -q '^toy,claim,C1,Toy Fig. 1,MxD has lower CE than the Transcoder at every K,,HOLDS,' "$dir/out/verdicts.csv" ||
  fail "C1 verdict row"
grep -q '^toy,claim,C1,.*,2,HOLDS,-0.22666667,.*,0.975$' "$dir/out/verdicts.csv" || fail "C1 level row"
test -s "$dir/out/ce.svg" || fail "no figure"
grep -q 'mxd,2,4.02,' "$dir/out/ce.points.csv" || fail "figure points"
# Reference lines in the figure's script: a column's seed mean and a fixed value, each labelled.
grep -qx 'h1 = 4.5' "$dir/out/ce.gp" && grep -q "h1 with lines dashtype 2 linecolor rgb '#505050' title 'zero ablation'" "$dir/out/ce.gp" ||
  fail "zero-ablation reference line"
grep -qx 'h2 = 4.1' "$dir/out/ce.gp" && grep -q "h2 with lines dashtype 3 linecolor rgb '#505050' title 'paper (Toy Fig. 1)'" "$dir/out/ce.gp" ||
  fail "paper reference line"
"$judge" --summarize "$dir/out/verdicts.csv" | grep -qxF '| [toy](#toy) | 1 | 0 | 0 | 1 | 1 / 2 | 1 | 0.05 | 1 |' ||
  fail "summary"

# The seed plan from this run as the pilot: C1's sd 0.03055 at each of its 2 levels, for 0.05 at 2.5% each and
# 0.8^(1/2) = 89% power each (7 seeds give 88.9%).
"$plan" --claims="$dir/claims.textproto" --pilot="$dir/out/verdicts.csv" --max_seeds=3 >"$dir/plan.md"
cat "$dir/plan.md"
grep -q '^| C1 | 0.05 | 2 | 3 | 0.03055 | 8 | underpowered (needs 8) |$' "$dir/plan.md" || fail "seed plan of C1"
grep -q '^| D1 | .*not planned: design statement' "$dir/plan.md" || fail "seed plan of D1"

# --verify: the section's verdicts against its claims file (what every experiment's smoke test runs).
"$judge" --verify --claims="$dir/claims.textproto" --min_n=3 "$dir/out/verdicts.csv" | grep -q '5 controls and claims' ||
  fail "verify"
grep -v ',C2,' "$dir/out/verdicts.csv" >"$dir/dropped.csv"
sed 's/,DOES NOT HOLD,/,FAILS,/' "$dir/out/verdicts.csv" >"$dir/unknown.csv"

# A filter value not run (a base model a user's pretrained model replaced): its figure is listed as not drawn,
# its claim reads NOT TESTABLE.
mkdir -p "$dir/absent"
cat >"$dir/absent.textproto" <<'CLAIMS'
experiment: "toy"
figures { file: "other.svg" table: "frontier.csv" x: "k" y: "ce" group: "method" title: "CE vs K, other"
  where { column: "method" value: "other" } }
claims { id: "C3" statement: "on a method not run" table: "frontier.csv" arm_column: "k" a: "2" b: "8"
  metric: "ce" better: LOWER_IS_BETTER comparison: BETTER where { column: "method" value: "other" }
  smallest_effect: 0.05 smallest_effect_reason: "toy" no_control_reason: "toy" }
CLAIMS
"$judge" --claims="$dir/absent.textproto" --out_dir="$dir/absent" --plot="$plot" --arms_not_run=method=other \
  --table=frontier.csv="$dir/a.csv,$dir/b.csv" >"$dir/absent.md"
grep -qx 'Not drawn (no rows): CE vs K, other.' "$dir/absent.md" || fail "empty figure not listed"
test ! -e "$dir/absent/other.svg" || fail "empty figure drawn"
grep -q '^- C3: .*\*\*NOT TESTABLE\*\*.*method=other is not run in this build' "$dir/absent.md" || fail "C3"

# Bad input: one line on stderr, exit 1, for each.
expect_error() {
  local want=$1
  shift
  if "$judge" "$@" >"$dir/stdout" 2>"$dir/stderr"; then fail "exit 0 for $*"; fi
  [[ $(wc -l <"$dir/stderr") -eq 1 ]] || { cat "$dir/stderr"; fail "not one line for $*"; }
  grep -q "^judge_claims: error: .*$want" "$dir/stderr" || { cat "$dir/stderr"; fail "no '$want' for $*"; }
}
expect_error "no column 'nope'" --claims=<(sed 's/metric: "ce" better/metric: "nope" better/' "$dir/claims.textproto") \
  --out_dir="$dir/out" --plot="$plot" --table=frontier.csv="$dir/a.csv,$dir/b.csv"
expect_error "reference line 'per k' reads column ce, which has several values for seed 1" \
  --claims=<(sed 's/column: "ce_zero"/column: "ce"/; s/label: "zero ablation"/label: "per k"/' "$dir/claims.textproto") \
  --out_dir="$dir/out" --plot="$plot" --table=frontier.csv="$dir/a.csv,$dir/b.csv"
expect_error ":1:[0-9]*: Unknown enumeration value" --claims=<(echo 'experiment: "x" claims { id: "c" comparison: SIDEWAYS }') \
  --out_dir="$dir/out" --table=frontier.csv="$dir/a.csv"
expect_error "cannot be read" --claims="$dir/claims.textproto" --out_dir="$dir/out" --plot="$plot" \
  --table=frontier.csv="$dir/missing.csv"
printf 'method,k,seed,ce\n' >"$dir/other.csv"
expect_error "differs from" --claims="$dir/claims.textproto" --out_dir="$dir/out" --plot="$plot" \
  --table=frontier.csv="$dir/a.csv,$dir/other.csv"
expect_error "unknown flag" --bogus
expect_error "claim C2 has 0 summary rows" --verify --claims="$dir/claims.textproto" "$dir/dropped.csv"
expect_error "verdict 'FAILS' is not in the vocabulary" --verify --claims="$dir/claims.textproto" "$dir/unknown.csv"
expect_error "rests on n = 3, fewer than 4" --verify --claims="$dir/claims.textproto" --min_n=4 "$dir/out/verdicts.csv"
# A claim NOT TESTABLE on one seed without an interval states its n as the reason; any other verdict on n = 1,
# or NOT TESTABLE with an interval, fails.
awk -F, -v OFS=, '$3 == "C1" && $6 == "" {$7 = "NOT TESTABLE"; $9 = ""; $10 = ""; $11 = "1"} 1' \
  "$dir/out/verdicts.csv" >"$dir/one_seed.csv"
"$judge" --verify --claims="$dir/claims.textproto" --min_n=2 "$dir/one_seed.csv" | grep -q '5 controls and claims' ||
  fail "NOT TESTABLE on one seed without an interval"
awk -F, -v OFS=, '$3 == "C1" && $6 == "" {$7 = "NOT TESTABLE"; $9 = "0"; $10 = "0"; $11 = "1"} 1' \
  "$dir/out/verdicts.csv" >"$dir/one_seed_interval.csv"
expect_error "rests on n = 1, fewer than 2" --verify --claims="$dir/claims.textproto" --min_n=2 \
  "$dir/one_seed_interval.csv"
awk -F, -v OFS=, '$3 == "C1" && $6 == "" {$7 = "UNRESOLVED"; $9 = ""; $10 = ""; $11 = "1"} 1' \
  "$dir/out/verdicts.csv" >"$dir/one_seed_unresolved.csv"
expect_error "rests on n = 1, fewer than 2" --verify --claims="$dir/claims.textproto" --min_n=2 \
  "$dir/one_seed_unresolved.csv"
echo "judge_claims_cli_test: passed"
