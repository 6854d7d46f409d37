#!/bin/bash
# plot_heatmap.sh lays cells out in order of first appearance, honours every --where, labels the tics, shows
# text verbatim and fails on unknown columns.
set -euo pipefail
plot="$(dirname "$0")/plot_heatmap.sh"
[[ -x "$plot" ]] || plot="$TEST_SRCDIR/$TEST_WORKSPACE/analysis/plot/plot_heatmap.sh"
dir="$TEST_TMPDIR"
printf 'model,blocks,position,nie\ns,0,0,0.1\ns,0,1,0.5\ns,all,0,0.2\ns,all,1,0.9\nd,0,0,7\n' > "$dir/a.csv"
"$plot" --csv="$dir/a.csv" --x=position --y=blocks --value=nie --where=model=s --out="$dir/a.svg" \
  --title="nie_by_block@s"
grep -q "<svg" "$dir/a.svg"
grep -q "<text>nie_by_block@s</text>" "$dir/a.svg" || { echo "the title must be verbatim"; exit 1; }
diff <(cat "$dir/a.dat") <(printf '0 0 0.1 0 0\n1 0 0.5 1 0\n0 1 0.2 0 all\n1 1 0.9 1 all\n')
grep -q 'set ytics ("0" 0, "all" 1)' "$dir/a.gp"
if "$plot" --csv="$dir/a.csv" --x=nope --y=blocks --value=nie --out="$dir/b.svg" 2>/dev/null; then
  echo "an unknown column must fail"; exit 1
fi
echo PASS
