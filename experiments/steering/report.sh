#!/bin/bash
# Prints our MxD Fig. 5 analogue: per base model and method, the mean concept strength (share of generated
# tokens among the steered unit's top-activating tokens, steered minus unsteered) and fluency (the base
# model's NLL of the generations, lower is more fluent) over the steered units, plus example generations.
# The paper scored with LLM judges (unavailable offline), so only its qualitative claim is compared.
# Usage: report.sh <out_dir> <*_steering.csv and *_steering.txt ...>
set -euo pipefail
out_dir=$1
shift
mkdir -p "$out_dir"
merged="$out_dir/steering.csv"
first=1
: > "$out_dir/examples.txt"
for f in "$@"; do
  case "$f" in
    *_steering.csv) if ((first)); then head -n1 "$f" > "$merged"; first=0; fi; tail -n +2 "$f" >> "$merged" ;;
    *_steering.txt) cat "$f" >> "$out_dir/examples.txt"; echo >> "$out_dir/examples.txt" ;;
  esac
done
echo "## Steering: mean over units (concept strength: higher = more on-concept; NLL: lower = more fluent)"
awk -F, '
  NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
  { key = $c["base"] SUBSEP $c["layer_kind"]; keys[key] = 1; n[key]++
    strength[key] += $c["concept_strength"]; steered[key] += $c["concept_steered"]
    nll[key] += $c["nll_steered"]; base_nll[key] += $c["nll_unsteered"]
    if ($c["concept_strength"] > 0) up[key]++ }
  END {
    print "| base | method | units | concept strength | concept share steered | units moved toward concept | NLL steered | NLL unsteered |"
    print "|---|---|---|---|---|---|---|---|"
    for (key in keys) line[++m] = key
    for (i = 2; i <= m; ++i) for (j = i; j > 1 && line[j - 1] > line[j]; --j) { t = line[j]; line[j] = line[j - 1]; line[j - 1] = t }
    for (r = 1; r <= m; ++r) {
      k = line[r]; split(k, p, SUBSEP)
      printf "| %s | %s | %d | %+.3f | %.3f | %d/%d | %.3f | %.3f |\n", p[1], p[2], n[k], strength[k] / n[k],
        steered[k] / n[k], up[k], n[k], nll[k] / n[k], base_nll[k] / n[k]
      kind = p[2]; sub(/_gelu|_swiglu/, "", kind); s[p[1], kind] = strength[k] / n[k]; f[p[1], kind] = nll[k] / n[k]; bases[p[1]] = 1
    }
    for (b in bases) {
      lo = 1e9; hi = -1e9
      split("transcoder skip_transcoder topk_sae", kinds, " ")
      for (i = 1; i <= 3; ++i) { if (s[b, kinds[i]] < lo) lo = s[b, kinds[i]]; if (s[b, kinds[i]] > hi) hi = s[b, kinds[i]] }
      printf "\n- %s: MxD concept strength %+.3f (baselines %+.3f to %+.3f), NLL %.3f: claim \"MxD steers comparably\" -> %s.\n",
        b, s[b, "mxd"], lo, hi, f[b, "mxd"], (s[b, "mxd"] >= lo - 0.02) ? "HOLDS" : "DOES NOT HOLD"
    }
  }' "$merged"
echo
echo "Examples (first units of each layer): $out_dir/examples.txt"
head -n 12 "$out_dir/examples.txt"
echo "CSV: $merged"
