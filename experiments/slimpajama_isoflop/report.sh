#!/bin/bash
# Prints our sgatlin isoflop study (Figures 1 and 3, Table 1 analogues): validation loss against model size
# per FLOP budget and FFN type, the best size per budget, and the ablations beside the paper's Table 1;
# checks the paper's claims (seed-sgatlin.md 9) on our rows and writes the CSV and figures (analysis/plot).
# Figures 1 and 3 are images without numbers in the paper's text, so its claims stand beside ours.
# Usage: report.sh <out_dir> <plot_lines.sh> <paper_table1.csv> <run configs and outputs...>
set -euo pipefail
out_dir=$1 plot=$2 paper=$3
shift 3
mkdir -p "$out_dir"
csv="$out_dir/isoflop.csv"
echo "name,type,ffn,budget,parameters,forward_flops_per_token,compute_sparsity,steps,tokens,flops,validation_loss,validation_perplexity,tokens_per_second,wall_seconds" > "$csv"
for f in "$@"; do
  case "$f" in *_config.textproto) configs+=("$f") ;; *.summary.textproto) summaries+=("$f") ;; esac
done
for s in "${summaries[@]}"; do
  name=$(basename "$s" .summary.textproto)
  config=$(printf '%s\n' "${configs[@]}" | grep "/${name}_config.textproto$")
  awk -v name="$name" '
    FNR == NR { if ($1 == "max_flops:") budget = $2; if ($1 == "ffn:" && !ffn) { ffn = $2; gsub(/"/, "", ffn) } next }
    { v[substr($1, 1, length($1) - 1)] = $2 }
    END {
      type = name; sub(/_b[0-9]+_s[0-9]+$/, "", type)  # The ladder type, e.g. swiglu for gpt_oss_glu.
      printf "%s,%s,%s,%s,%d,%d,%.4f,%d,%d,%.4g,%.4f,%.2f,%.0f,%.1f\n", name, type, ffn, budget, v["parameters"],
        v["forward_flops_per_token"], v["parameters"] / (3 * v["forward_flops_per_token"]), v["steps"], v["tokens"],
        v["flops"], v["validation_loss"], v["validation_perplexity"], v["tokens_per_second"], v["wall_seconds"]
    }' "$config" "$s" >> "$csv"
done
sort -t, -k1,1 -o "$csv.body" <(tail -n +2 "$csv"); { head -n1 "$csv"; cat "$csv.body"; } > "$csv.tmp"
mv "$csv.tmp" "$csv"; rm "$csv.body"

echo "## Isoflop curves (Figure 3 analogue): validation loss by model size, per budget and FFN type"
echo "Held-out validation split of the pinned corpus. FLOPs are counted as the paper's code counts them (matrix"
echo "multiplies inside the blocks, training = 3 x forward); the unembedding is not counted. Parameters include"
echo "the tied embedding."
echo
awk -F, '
  NR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
  $c["type"] == "sgatlin" || $c["type"] == "swiglu" || $c["type"] == "moe" {
    t = $c["type"]
    b = $c["budget"] + 0; budgets[b] = 1; types[t] = 1; n[t, b]++
    p[t, b, n[t, b]] = $c["parameters"]; l[t, b, n[t, b]] = $c["validation_loss"]; st[t, b, n[t, b]] = $c["steps"]
    sp[t] += $c["compute_sparsity"]; ns[t]++
    if (!((t, b) in best) || $c["validation_loss"] < best[t, b]) { best[t, b] = $c["validation_loss"]; bestp[t, b] = $c["parameters"]; bestn[t, b] = n[t, b] }
  }
  END {
    nb = 0; for (b in budgets) order[++nb] = b + 0
    for (i = 2; i <= nb; ++i) for (j = i; j > 1 && order[j - 1] > order[j]; --j) { x = order[j]; order[j] = order[j - 1]; order[j - 1] = x }
    split("swiglu moe sgatlin", tn, " ")
    print "| budget | FFN | size 1: params / steps / loss | size 2 | size 3 | best loss (perplexity) |"
    print "|---|---|---|---|---|---|"
    for (i = 1; i <= nb; ++i) for (j = 1; j <= 3; ++j) {
      t = tn[j]; b = order[i]; row = sprintf("| %.0e | %s |", b, t)
      for (k = 1; k <= 3; ++k) row = row sprintf(" %.2fM / %d / %.4f |", p[t, b, k] / 1e6, st[t, b, k], l[t, b, k])
      print row sprintf(" %.4f (%.1f) |", best[t, b], exp(best[t, b]))
    }
    print ""
    print "## Best size per budget (Figure 1 analogue)"
    print "| budget | swiglu | moe | sgatlin | best FFN | sgatlin minus best |"
    print "|---|---|---|---|---|---|"
    sg_best = 0; sparse_beats_dense = 0
    for (i = 1; i <= nb; ++i) {
      b = order[i]; win = ""; wl = 1e9
      for (j = 1; j <= 3; ++j) if (best[tn[j], b] < wl) { wl = best[tn[j], b]; win = tn[j] }
      if (win == "sgatlin") ++sg_best
      if (best["moe", b] < best["swiglu", b] && best["sgatlin", b] < best["swiglu", b]) ++sparse_beats_dense
      if (bestp["sgatlin", b] > bestp["moe", b] && bestp["moe", b] > bestp["swiglu", b]) ++size_grows
      printf "| %.0e | %.4f (%.2fM) | %.4f (%.2fM) | %.4f (%.2fM) | %s | %+.4f |\n", b, best["swiglu", b], bestp["swiglu", b] / 1e6,
        best["moe", b], bestp["moe", b] / 1e6, best["sgatlin", b], bestp["sgatlin", b] / 1e6, win, best["sgatlin", b] - wl
    }
    print ""
    printf "Mean compute sparsity (parameters per training FLOP per token): swiglu %.3f, moe %.3f, sgatlin %.3f\n\n",
      sp["swiglu"] / ns["swiglu"], sp["moe"] / ns["moe"], sp["sgatlin"] / ns["sgatlin"]
    print "## The paper claims on our rows (seed-sgatlin.md 9)"
    printf "- Claim 1 (sgatlin has the most parameters per FLOP, then MoE, then dense): %s (%.3f > %.3f > %.3f).\n",
      (sp["sgatlin"] / ns["sgatlin"] > sp["moe"] / ns["moe"] && sp["moe"] / ns["moe"] > sp["swiglu"] / ns["swiglu"]) ? "HOLDS" : "DOES NOT HOLD",
      sp["sgatlin"] / ns["sgatlin"], sp["moe"] / ns["moe"], sp["swiglu"] / ns["swiglu"]
    printf "- Claim 2a (the sparse FFNs beat the dense one at every budget): %s (%d of %d budgets).\n",
      sparse_beats_dense == nb ? "HOLDS" : "DOES NOT HOLD", sparse_beats_dense, nb
    printf "- Claim 2b (sgatlin is best at every budget; the paper says competitive or better): %s (best at %d of %d budgets).\n",
      sg_best == nb ? "HOLDS" : "DOES NOT HOLD", sg_best, nb
    edge = 0; for (i = 1; i <= nb; ++i) for (j = 1; j <= 3; ++j) edge += (bestn[tn[j], order[i]] == 1 || bestn[tn[j], order[i]] == n[tn[j], order[i]])
    printf "- Claim 3 (the best model is larger for sparser FFNs: sgatlin > moe > swiglu): %s (%d of %d budgets).\n",
      size_grows == nb ? "HOLDS" : "DOES NOT HOLD", size_grows + 0, nb
    printf "  The best size is at the edge of the swept sizes for %d of %d (FFN, budget) pairs: %s\n", edge, 3 * nb,
      (edge > 0) ? "those curves do not bracket their optimum, so the best-size comparison there only orders the ladders." : "every optimum is bracketed."
  }' "$csv"
echo
echo "## Ablations (Table 1 analogue): sgatlin with a nonlinearity or PEER's router"
awk -F, '
  FNR == NR { if (FNR > 1) { paper[$1] = $2 } next }
  FNR == 1 { for (i = 1; i <= NF; ++i) c[$i] = i; next }
  { name[$c["ffn"], $c["budget"], $c["name"]] = 1 }
  $c["ffn"] ~ /^sgatlin_/ { point = $c["name"]; sub(/^sgatlin_[a-z_]*_b/, "_b", point); abl[$c["ffn"]] = $c["validation_perplexity"]; lossa[$c["ffn"]] = $c["validation_loss"]; at = point }
  { row[$c["name"]] = $c["validation_perplexity"]; rl[$c["name"]] = $c["validation_loss"] }
  END {
    base = row["sgatlin" at]; bl = rl["sgatlin" at]
    printf "Ours at run point %s (sgatlin%s); the paper at 6e18 FLOPs, 1.2B parameters (test perplexity).\n\n", at, at
    print "| variant | our perplexity | vs sgatlin | paper perplexity | paper vs sgatlin |"
    print "|---|---|---|---|---|"
    printf "| sgatlin (linear neurons) | %.2f | - | %.4f | - |\n", base, paper["sgatlin"]
    split("sgatlin_relu sgatlin_gelu sgatlin_swish sgatlin_peer_router", v, " ")
    worse = 0
    for (i = 1; i <= 4; ++i) {
      printf "| %s | %.2f | %+.2f%% | %.4f | %+.2f%% |\n", v[i], abl[v[i]], 100 * (abl[v[i]] / base - 1), paper[v[i]], 100 * (paper[v[i]] / paper["sgatlin"] - 1)
      if (i <= 3 && lossa[v[i]] > bl) ++worse
    }
    print ""
    printf "- Claim 4 (a nonlinearity on the neurons hurts): %s (%d of 3 nonlinear variants worse).\n", worse == 3 ? "HOLDS" : "DOES NOT HOLD", worse
    d = 100 * (abl["sgatlin_peer_router"] / base - 1)
    printf "- Claim 5 (the cheap shared-query router is about as good as PEER'"'"'s, paper +0.58%%): ours %+.2f%% (%s within 2%%).\n",
      d, (d < 2 && d > -2) ? "HOLDS:" : "DOES NOT HOLD: not"
  }' "$paper" "$csv"
echo
wall=$(awk -F, 'NR > 1 {s += $NF} END {printf "%.0f", s}' "$csv")
echo "Training wall time of the $(($(wc -l < "$csv") - 1)) runs: ${wall} s."

awk -F, 'NR == 1 { print "curve,parameters,validation_loss"; for (i = 1; i <= NF; ++i) c[$i] = i; next }
  $c["type"] == "sgatlin" || $c["type"] == "swiglu" || $c["type"] == "moe" {
    t = $c["type"]
    printf "%s@%.0e,%d,%s\n", t, $c["budget"], $c["parameters"], $c["validation_loss"] }' "$csv" > "$out_dir/curves.csv"
"$plot" --csv="$out_dir/curves.csv" --x=parameters --y=validation_loss --group=curve --logx \
  --out="$out_dir/isoflop_curves.svg" --title="Isoflop curves: validation loss by model size (FFN@budget)" \
  --xlabel="parameters" --ylabel="validation loss (nats/token)"
awk -F, 'NR == 1 { print "ffn,budget,best_validation_loss"; for (i = 1; i <= NF; ++i) c[$i] = i; next }
  $c["type"] == "sgatlin" || $c["type"] == "swiglu" || $c["type"] == "moe" {
    t = $c["type"]
    k = t "," $c["budget"]; if (!(k in b) || $c["validation_loss"] < b[k]) b[k] = $c["validation_loss"] }
  END { for (k in b) print k "," b[k] }' "$csv" > "$out_dir/frontier.csv"
"$plot" --csv="$out_dir/frontier.csv" --x=budget --y=best_validation_loss --group=ffn --logx \
  --out="$out_dir/isoflop_frontier.svg" --title="Best validation loss per FLOP budget (Figure 1 analogue)" \
  --xlabel="training FLOPs (counted)" --ylabel="best validation loss"
echo "CSV and figures: $out_dir/{isoflop.csv,isoflop_curves.svg,isoflop_frontier.svg}"
