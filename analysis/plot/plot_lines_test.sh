#!/bin/bash
# plot_lines.sh draws one line per group from named columns, honours --where, and fails on unknown columns.
set -euo pipefail
plot="$(dirname "$0")/plot_lines.sh"
[[ -x "$plot" ]] || plot="$TEST_SRCDIR/$TEST_WORKSPACE/analysis/plot/plot_lines.sh"
dir="$TEST_TMPDIR"
printf 'method,k,ce,split\nmxd,8,3.1,test\nmxd,2,3.3,test\ntc,8,3.4,test\ntc,2,4.0,test\ntc,4,9.9,train\n' > "$dir/a.csv"
"$plot" --csv="$dir/a.csv" --x=k --y=ce --group=method --where=split=test --out="$dir/a.svg" --logx --hline=3.0:base
grep -q "<svg" "$dir/a.svg"
# Rows: grouped, sorted by x, the train row filtered out.
diff <(cat "$dir/a.dat") <(printf 'mxd 2 3.3\nmxd 8 3.1\ntc 2 4.0\ntc 8 3.4\n')
grep -q "title 'mxd'" "$dir/a.gp"
grep -q "h1 = 3.0" "$dir/a.gp"
if "$plot" --csv="$dir/a.csv" --x=nope --y=ce --group=method --out="$dir/b.svg" 2>/dev/null; then
  echo "an unknown column must fail"; exit 1
fi
echo PASS
