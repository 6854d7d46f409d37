#!/bin/bash
# Heat maps beside plot_lines.sh (same CSV conventions, gnuplot): one cell per (x, y) pair of named columns,
# coloured by a value column and labelled with it up to 400 cells. Rows and columns keep their order of first
# appearance.
# Text is shown verbatim.
# Usage: plot_heatmap.sh --csv=F --x=COL --y=COL --value=COL --out=F.svg [--where=COL=VALUE]...
#                        [--title=T] [--xlabel=T] [--ylabel=T]
set -euo pipefail
csv="" x="" y="" value="" out="" title="" xlabel="" ylabel=""
wheres=()
for arg in "$@"; do
  case "$arg" in
    --csv=*) csv=${arg#*=} ;; --x=*) x=${arg#*=} ;; --y=*) y=${arg#*=} ;; --value=*) value=${arg#*=} ;;
    --out=*) out=${arg#*=} ;; --where=*) wheres+=("${arg#*=}") ;; --title=*) title=${arg#*=} ;;
    --xlabel=*) xlabel=${arg#*=} ;; --ylabel=*) ylabel=${arg#*=} ;;
    *) echo "plot_heatmap.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
[[ -n "$csv" && -n "$x" && -n "$y" && -n "$value" && -n "$out" ]] || {
  echo "plot_heatmap.sh: --csv, --x, --y, --value and --out are required" >&2; exit 2; }
data="${out%.svg}.dat"
# "xi yi value xlabel ylabel" rows, xi / yi the order of first appearance.
awk -F, -v xc="$x" -v yc="$y" -v vc="$value" -v where="${wheres[*]:-}" '
  NR == 1 {
    for (i = 1; i <= NF; ++i) col[$i] = i
    nw = split(where, ws, " ")
    for (i = 1; i <= nw; ++i) { split(ws[i], kv, "="); wk[i] = kv[1]; wv[i] = kv[2]
      if (!(kv[1] in col)) { print "plot_heatmap.sh: no column " kv[1] > "/dev/stderr"; exit 3 } }
    if (!(xc in col) || !(yc in col) || !(vc in col)) { print "plot_heatmap.sh: a named column is not in the header" > "/dev/stderr"; exit 3 }
    next
  }
  {
    for (i = 1; i <= nw; ++i) if ($col[wk[i]] != wv[i]) next
    if (!($col[xc] in xi)) xi[$col[xc]] = nx++
    if (!($col[yc] in yi)) yi[$col[yc]] = ny++
    print xi[$col[xc]], yi[$col[yc]], $col[vc], $col[xc], $col[yc]
  }' "$csv" > "$data"
[[ -s "$data" ]] || { echo "plot_heatmap.sh: no rows to plot in $csv" >&2; exit 3; }
# Large maps (a co-activation matrix) keep every 8th tic and no cell labels, which would cover the colours.
cells=$(wc -l <"$data")
every=1
((cells > 400)) && every=8
xtics=$(awk -v every=$every '!seen[$1]++ && $1 % every == 0 { printf "%s\"%s\" %d", (n++ ? ", " : ""), $4, $1 }' "$data")
ytics=$(awk -v every=$every '!seen[$2]++ && $2 % every == 0 { printf "%s\"%s\" %d", (n++ ? ", " : ""), $5, $2 }' "$data")
labels=", '' using 1:2:(sprintf('%.2f', \$3)) with labels"
((cells > 400)) && labels=""
script="${out%.svg}.gp"
{
  echo "set terminal svg size 900,520 dynamic background rgb 'white'"
  echo "set termoption noenhanced"  # text verbatim: no subscript from moe_x, no @ or ^ markup
  echo "set output '$out'"
  echo "set title '${title//\'/}'"
  echo "set xlabel '${xlabel:-$x}'; set ylabel '${ylabel:-$y}'"
  echo "set xtics ($xtics); set ytics ($ytics)"
  echo "set palette defined (0 'white', 1 'red'); set cblabel '$value'"
  echo "set autoscale fix; unset key"
  echo "plot '$data' using 1:2:3 with image$labels"
} > "$script"
gnuplot "$script"
