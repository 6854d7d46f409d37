#!/bin/bash
# Prints our MoE-X Table 1 / Table 3 analogue beside the paper's (headline layer: block 3 of 4, the 6-of-8
# depth of seed-moex.md 3.3; masked-blank BSPs; coverage and reconstruction in the evaluation code's
# variant, the paper's formula in brackets) and writes the merged CSV and a per-layer figure (gnuplot).
# Usage: report.sh <out_dir> <plot_lines.sh> <paper_table1.csv> <summary and .bsp.csv files...>
set -euo pipefail
out_dir=$1 plot=$2 paper=$3
shift 3
mkdir -p "$out_dir"
summaries=() csvs=()
for f in "$@"; do
  case "$f" in *.summary.textproto) summaries+=("$f") ;; *.bsp.csv) csvs+=("$f") ;; esac
done
merged="$out_dir/chess_bsp_coverage.csv"
head -n1 "${csvs[0]}" > "$merged"
for f in "${csvs[@]}"; do tail -n +2 "$f" >> "$merged"; done
losses="$out_dir/validation_loss.csv"
for f in "${summaries[@]}"; do
  name=$(basename "$f" .summary.textproto)
  awk -v n="$name" '/^validation_loss:/ {print n "," $2}' "$f"
done > "$losses"
layers=$(awk -F, 'NR > 1 {print $3}' "$merged" | sort -n | tail -n1)
headline=$(( (3 * (layers + 1) + 3) / 4 - 1 ))
table="$out_dir/table.md"
awk -F, -v layer="$headline" '
  FILENAME == ARGV[1] { loss[$1] = $2; next }
  FILENAME == ARGV[2] { if ($0 !~ /^#/ && $1 != "model") { pl[$1] = $2; pc[$1] = $3; pr[$1] = $4; src[$1] = $5 } next }
  FNR > 1 && $3 == layer && $4 == "masked_blank" {
    order[++n] = $1
    row[$1] = sprintf("| %s | %s | %.3f (%.3f) | %.3f (%.3f) | %.0f | %s | %s | %s | %s |", $1,
      ($1 in loss) ? sprintf("%.3f", loss[$1]) : "-", $5, $6, $7, $8, $13,
      ($14 == "nan") ? "-" : sprintf("%.3f", $14),
      ($1 in pl && pl[$1] != "") ? pl[$1] : "-", ($1 in pc) ? pc[$1] : "-", ($1 in pr) ? pr[$1] : "-")
  }
  END {
    print "| model | val loss | coverage code (paper) | reconstruction code (paper) | l0 | router r | paper val loss | paper coverage | paper reconstruction |"
    print "|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= n; ++i) print row[order[i]]
  }' "$losses" "$paper" "$merged" > "$table"
echo "Chess BSP coverage (MoE-X Tables 1, 3, 4 analogue), block $headline, masked-blank BSPs:"
cat "$table"
# The paper's claims (seed-moex.md 9) checked on our rows at the headline block (code variant).
echo
echo "The paper's claims on our rows (block $headline):"
awk -F, -v layer="$headline" '
  FILENAME == ARGV[1] { loss[$1] = $2; next }
  FNR > 1 && $3 == layer && $4 == "masked_blank" { cov[$1] = $5; rec[$1] = $7; r[$1] = $14; seen[$1] = 1 }
  END {
    best_rec = ""; best_cov = ""
    for (m in seen) if (m !~ /^random_/ && m !~ /^parent_/) {
      if (best_rec == "" || rec[m] > rec[best_rec]) best_rec = m
      if (best_cov == "" || cov[m] > cov[best_cov]) best_cov = m
    }
    printf "- Fig. 9, the parameter-free router predicts expert sparsity (Pearson r < -0.95): %s (MoE-X r = %.3f; Switch %.3f).\n",
      (r["moe_x"] != "nan" && r["moe_x"] < -0.95) ? "HOLDS" : "DOES NOT HOLD", r["moe_x"], r["switch"]
    printf "- Table 1, MoE-X has the best board reconstruction: %s (MoE-X %.3f; best %s %.3f).\n",
      (best_rec == "moe_x") ? "HOLDS" : "DOES NOT HOLD", rec["moe_x"], best_rec, rec[best_rec]
    printf "- Table 1, MoE-X has the best BSP coverage: %s (MoE-X %.3f; best %s %.3f).\n",
      (best_cov == "moe_x") ? "HOLDS" : "DOES NOT HOLD", cov["moe_x"], best_cov, cov[best_cov]
    printf "- Table 1, MoE-X loses no language-model quality against the compute-matched dense model: %s (validation loss %.3f vs %.3f for gelu_continued).\n",
      (loss["moe_x"] <= loss["gelu_continued"] + 0.01) ? "HOLDS" : "DOES NOT HOLD", loss["moe_x"], loss["gelu_continued"]
    printf "- Control, trained units cover more than random-initialisation units: %s (MoE-X %.3f vs random MoE-X %.3f; GELU %.3f vs random GELU %.3f).\n",
      (cov["moe_x"] > cov["random_moe_x"] && cov["gelu"] > cov["random_gelu"]) ? "HOLDS" : "DOES NOT HOLD",
      cov["moe_x"], cov["random_moe_x"], cov["gelu"], cov["random_gelu"]
  }' "$losses" "$merged"
echo
# Figure: reconstruction (code variant) per layer and model, through the project's one plotting path.
"$plot" --csv="$merged" --x=layer --y=reconstruction_code --group=model --where=bsp_set=masked_blank \
  --out="$out_dir/reconstruction_by_layer.svg" --xlabel=block --ylabel='board reconstruction (micro-F1)' \
  --title='Chess GPTs: board reconstruction from FFN units (masked-blank BSPs)'
echo "CSV: $merged  figure: $out_dir/reconstruction_by_layer.svg"
