#!/bin/bash
# Prints our MxD Fig. 4 / 13 analogue: per base model and task, the mean over one-vs-all classes of the best
# single-unit probe F1, for FFN neurons, Transcoder, Skip Transcoder, MxD, TopK SAE and a random projection;
# the paper's protocol (unit chosen on test, as its script) and the leakage-free one (chosen on validation).
# The paper's bar heights were lost from its text dump (seed-mxd.md 6): its claim is checked instead.
# Usage: report.sh <out_dir> <*_probe.csv ...>
set -euo pipefail
out_dir=$1
shift
mkdir -p "$out_dir"
merged="$out_dir/sparse_probing.csv"
first=1
for f in "$@"; do
  case "$f" in *_probe.csv) ;; *) continue ;; esac
  if ((first)); then head -n1 "$f" > "$merged"; first=0; fi
  tail -n +2 "$f" >> "$merged"
done
for variant in best_f1 selected_f1; do
  case $variant in
    best_f1) echo "## Mean best F1 per task (paper protocol: unit chosen on the test split)" ;;
    selected_f1) echo "## Mean F1 per task (leakage-free: unit chosen on a validation split, scored on test)" ;;
  esac
  awk -F, -v v="$variant" '
    NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
    { key = $c["base"] SUBSEP $c["task"]; kind = $c["layer_kind"]; sub(/_gelu|_swiglu/, "", kind)
      rows[key] = 1; kinds[kind] = 1; sum[key, kind] += $c[v]; n[key, kind]++
      all[$c["base"], kind] += $c[v]; alln[$c["base"], kind]++; bases[$c["base"]] = 1 }
    END {
      split("mlp_neurons transcoder skip_transcoder mxd topk_sae random", order, " ")
      printf "| base | task |"; for (i = 1; i <= 6; ++i) printf " %s |", order[i]; print ""
      printf "|---|---|"; for (i = 1; i <= 6; ++i) printf "---|"; print ""
      for (key in rows) line[++m] = key
      for (i = 2; i <= m; ++i) for (j = i; j > 1 && line[j - 1] > line[j]; --j) { t = line[j]; line[j] = line[j - 1]; line[j - 1] = t }
      for (r = 1; r <= m; ++r) {
        split(line[r], p, SUBSEP); printf "| %s | %s |", p[1], p[2]
        for (i = 1; i <= 6; ++i) printf " %s |", n[line[r], order[i]] ? sprintf("%.3f", sum[line[r], order[i]] / n[line[r], order[i]]) : "-"
        print ""
      }
      for (b in bases) {
        mxd = all[b, "mxd"] / alln[b, "mxd"]; best = 0; who = ""
        split("transcoder skip_transcoder topk_sae", base_kinds, " ")
        for (i = 1; i <= 3; ++i) { x = all[b, base_kinds[i]] / alln[b, base_kinds[i]]; if (x > best) { best = x; who = base_kinds[i] } }
        rnd = all[b, "random"] / alln[b, "random"]
        printf "\n- %s: MxD mean F1 %.3f vs best baseline %s %.3f (random projection %.3f): claim \"MxD competitive\" (within 0.05) -> %s.\n",
          b, mxd, who, best, rnd, (mxd >= best - 0.05) ? "HOLDS" : "DOES NOT HOLD"
      }
    }' "$merged"
  echo
done
echo "CSV: $merged (one row per base, task, class and method)"
