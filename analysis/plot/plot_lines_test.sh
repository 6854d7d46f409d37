#!/bin/bash
# plot_lines.sh draws one line per group from named columns, honours --where, and fails on unknown columns;
# draws error bars (--ylow/--yhigh), shows text verbatim, keeps an index axis integer (--integer_x) and splits
# more than --max_series groups over stacked panels.
set -euo pipefail
plot="$(dirname "$0")/plot_lines.sh"
[[ -x "$plot" ]] || plot="$TEST_SRCDIR/$TEST_WORKSPACE/analysis/plot/plot_lines.sh"
dir="$TEST_TMPDIR"
fail() { echo "FAIL: $*"; exit 1; }
printf 'method,k,ce,split\nmxd,8,3.1,test\nmxd,2,3.3,test\ntc,8,3.4,test\ntc,2,4.0,test\ntc,4,9.9,train\n' > "$dir/a.csv"
"$plot" --csv="$dir/a.csv" --x=k --y=ce --group=method --where=split=test --out="$dir/a.svg" --logx --hline=3.0:base
grep -q "<svg" "$dir/a.svg"
# Rows: grouped, sorted by x, the train row filtered out.
diff <(cat "$dir/a.dat") <(printf 'mxd 2 3.3\nmxd 8 3.1\ntc 2 4.0\ntc 8 3.4\n')
grep -q "title 'mxd'" "$dir/a.gp"
grep -q "h1 = 3.0" "$dir/a.gp"
grep -q "h1 with lines dashtype 2 linecolor rgb '#505050' title 'base'" "$dir/a.gp" || fail "hline not grey and dashed"
grep -q "with linespoints" "$dir/a.gp"
# A paper's number at its scale: far above the data, it leaves the y range to the curves; the key gives its value.
"$plot" --csv="$dir/a.csv" --x=k --y=ce --group=method --where=split=test --out="$dir/p.svg" \
  --paper_hline="40:paper (its scale)"
grep -q "h1 with lines noautoscale dashtype 2 linecolor rgb '#505050' title 'paper (its scale): 40'" "$dir/p.gp" ||
  fail "a paper line must not autoscale and must show its value"
grep -q "<text>paper (its scale): 40</text>" "$dir/p.svg" || fail "the paper line's value is not in the key"
if grep -q "<text> 40</text>" "$dir/p.svg"; then fail "the paper line stretched the y range to 40"; fi
if grep -q "yerrorlines\|multiplot" "$dir/a.gp"; then fail "no bars and one panel unless asked"; fi
if "$plot" --csv="$dir/a.csv" --x=nope --y=ce --group=method --out="$dir/b.svg" 2>/dev/null; then
  fail "an unknown column must fail"
fi

# Error bars; a row with empty or nan bar ends keeps its point (nan in the .dat, the y value in the plot).
printf 'model,block,fvu,lo,hi\nmoe_x,0,0.5,0.45,0.55\nmoe_x,1,0.4,0.35,0.45\nmoe_x,2,0.3,,\n' > "$dir/e.csv"
printf 'moe_x,3,0.35,0.3,0.4\ndense,0,0.6,nan,nan\ndense,1,0.62,0.6,0.64\ndense,2,0.61,0.6,0.62\n' >> "$dir/e.csv"
printf 'dense,3,0.65,0.6,0.7\n' >> "$dir/e.csv"
"$plot" --csv="$dir/e.csv" --x=block --y=fvu --group=model --ylow=lo --yhigh=hi --out="$dir/e.svg" \
  --title="moe_x, agreement@10" --hline=0.5:base_line
grep -q "<svg" "$dir/e.svg"
diff <(cat "$dir/e.dat") <(printf '%s\n' 'dense 0 0.6 nan nan' 'dense 1 0.62 0.6 0.64' 'dense 2 0.61 0.6 0.62' \
  'dense 3 0.65 0.6 0.7' 'moe_x 0 0.5 0.45 0.55' 'moe_x 1 0.4 0.35 0.45' 'moe_x 2 0.3 nan nan' \
  'moe_x 3 0.35 0.3 0.4') || fail "the .dat must carry the bars"
[[ $(grep -c "with yerrorlines title" "$dir/e.gp") == 1 ]] || fail "one plot command"
[[ $(grep -o "with yerrorlines title" "$dir/e.gp" | wc -l) == 2 ]] || fail "both series with error bars"
grep -q 'using 2:(strcol(1) eq .moe_x. ? $3 : 1/0):($4 == $4 ? $4 : $3):($5 == $5 ? $5 : $3)' "$dir/e.gp" ||
  fail "x:y:ylow:yhigh, a nan bar end falling back to y"
# The bars are drawn: the SVG has more paths than the same plot without them.
"$plot" --csv="$dir/e.csv" --x=block --y=fvu --group=model --out="$dir/e0.svg" --title="moe_x, agreement@10" \
  --hline=0.5:base_line
(($(grep -c "<path" "$dir/e.svg") > $(grep -c "<path" "$dir/e0.svg"))) || fail "no error-bar paths in the SVG"
# Verbatim text: underscores and @ as written (enhanced text would draw moe with a subscript x).
grep -q "<text>moe_x</text>" "$dir/e.svg" || fail "legend entry moe_x is not verbatim"
grep -q "<text>base_line</text>" "$dir/e.svg" || fail "hline label is not verbatim"
grep -q "<text>moe_x, agreement@10</text>" "$dir/e.svg" || fail "title is not verbatim"
# A missing bar column: one line on stderr naming it, non-zero exit.
for bad in "--ylow=nope --yhigh=hi" "--ylow=lo --yhigh=nope"; do
  # shellcheck disable=SC2086
  if "$plot" --csv="$dir/e.csv" --x=block --y=fvu --group=model $bad --out="$dir/bad.svg" 2> "$dir/err"; then
    fail "a missing bar column must fail"
  fi
  [[ $(wc -l < "$dir/err") == 1 ]] && grep -q "column nope is not in the header" "$dir/err" ||
    fail "want one clear line, got: $(cat "$dir/err")"
done
if "$plot" --csv="$dir/e.csv" --x=block --y=fvu --group=model --ylow=lo --out="$dir/bad.svg" 2> "$dir/err"; then
  fail "--ylow without --yhigh must fail"
fi
grep -q "go together" "$dir/err" || fail "want --ylow and --yhigh go together, got: $(cat "$dir/err")"

# --integer_x: every x tic label is a distinct integer (gnuplot would put tics at 0, 0.5, 1, ... here).
xtics() { awk '/text-anchor="middle"/ { getline; if (match($0, /<text> *-?[0-9.]+<\/text>/)) {
  t = substr($0, RSTART, RLENGTH); gsub(/<\/?text>| /, "", t); print t } }' "$1"; }
"$plot" --csv="$dir/e.csv" --x=block --y=fvu --group=model --integer_x --out="$dir/i.svg"
[[ $(xtics "$dir/i.svg" | wc -l) -ge 4 ]] || fail "no x tic labels found: $(xtics "$dir/i.svg" | tr '\n' ' ')"
if xtics "$dir/i.svg" | grep -qv '^-\?[0-9]\+$'; then
  fail "fractional x tics: $(xtics "$dir/i.svg" | tr '\n' ' ')"
fi
[[ -z $(xtics "$dir/i.svg" | sort | uniq -d) ]] || fail "repeated x tics: $(xtics "$dir/i.svg" | tr '\n' ' ')"
# (The check can fail: without --integer_x this plot has fractional tics.)
xtics "$dir/e0.svg" | grep -q '^0\.5$' || fail "the integer tic check would not see fractional tics"

# 12 groups, --max_series=8: two stacked panels of 6 series, each with its own key, in one SVG.
{
  echo "series,block,v"
  for s in $(seq 1 12); do for b in 0 1 2; do echo "s_$s,$b,$((s + b))"; done; done
} > "$dir/m.csv"
"$plot" --csv="$dir/m.csv" --x=block --y=v --group=series --max_series=8 --out="$dir/m.svg" --hline=3:base
grep -q "<svg" "$dir/m.svg"
grep -q "^set multiplot layout 2,1" "$dir/m.gp" || fail "want set multiplot layout 2,1"
panels=$(sed -n '/^set multiplot/,/^unset multiplot/p' "$dir/m.gp" | grep '^plot ')
[[ $(wc -l <<< "$panels") == 2 ]] || fail "want two plot commands in the multiplot"
for p in 1 2; do
  [[ $(sed -n "${p}p" <<< "$panels" | grep -o "title 's_[0-9]*'" | wc -l) == 6 ]] || fail "panel $p: want 6 series"
done
# Series in natural order: s_1 .. s_6, then s_7 .. s_12.
diff <(grep -o "title 's_[0-9]*'" <<< "$panels" | tr -dc '0-9\n') <(seq 1 12) || fail "series order"
for s in $(seq 1 12); do
  grep -q "<text>s_$s</text>" "$dir/m.svg" || fail "legend entry s_$s missing"
done
[[ $(grep -c "<text>base</text>" "$dir/m.svg") == 2 ]] || fail "the hline in every panel's key"
# Up to --max_series groups: one panel.
"$plot" --csv="$dir/m.csv" --x=block --y=v --group=series --max_series=12 --out="$dir/m1.svg"
if grep -q multiplot "$dir/m1.gp"; then fail "12 groups fit one panel with --max_series=12"; fi

# A scatter (--points): every row a point, no lines, no bars allowed.
printf 'expert,tsne_x,tsne_y\n0,1.5,2.0\n0,-0.5,1.0\n1,3.0,-2.0\n' > "$dir/s.csv"
"$plot" --csv="$dir/s.csv" --x=tsne_x --y=tsne_y --group=expert --out="$dir/s.svg" --points
grep -q "<svg" "$dir/s.svg"
[[ $(grep -o "with points pointtype 7" "$dir/s.gp" | wc -l) == 2 ]] || fail "both groups as points"
if grep -q "linespoints" "$dir/s.gp"; then fail "a scatter draws no lines"; fi
if "$plot" --csv="$dir/e.csv" --x=block --y=fvu --group=model --ylow=lo --yhigh=hi --out="$dir/s2.svg" \
  --points 2>/dev/null; then
  fail "--points with error bars must fail"
fi
echo PASS
