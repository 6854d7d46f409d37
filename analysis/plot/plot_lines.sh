#!/bin/bash
# The one plotting path of the project: CSV -> SVG line plot with gnuplot, one line per group.
# Usage: plot_lines.sh --csv=F --x=COL --y=COL --group=COL --out=F.svg [--where=COL=VALUE]
#                      [--title=T] [--xlabel=T] [--ylabel=T] [--logx] [--logy] [--hline=Y:LABEL]...
# Columns are named by the CSV header. Writes F.svg and the gnuplot script F.gp beside it.
set -euo pipefail
csv="" x="" y="" group="" out="" where="" title="" xlabel="" ylabel="" logx=0 logy=0
hlines=()
for arg in "$@"; do
  case "$arg" in
    --csv=*) csv=${arg#*=} ;; --x=*) x=${arg#*=} ;; --y=*) y=${arg#*=} ;;
    --group=*) group=${arg#*=} ;; --out=*) out=${arg#*=} ;; --where=*) where=${arg#*=} ;;
    --title=*) title=${arg#*=} ;; --xlabel=*) xlabel=${arg#*=} ;; --ylabel=*) ylabel=${arg#*=} ;;
    --logx) logx=1 ;; --logy) logy=1 ;; --hline=*) hlines+=("${arg#*=}") ;;
    *) echo "plot_lines.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
[[ -n "$csv" && -n "$x" && -n "$y" && -n "$group" && -n "$out" ]] || {
  echo "plot_lines.sh: --csv, --x, --y, --group and --out are required" >&2; exit 2; }
data="${out%.svg}.dat"
# Columns by name; rows filtered by --where; output "group x y" sorted by group then x.
awk -F, -v xc="$x" -v yc="$y" -v gc="$group" -v where="$where" '
  NR == 1 {
    for (i = 1; i <= NF; ++i) col[$i] = i
    split(where, w, "=")
    if (!(xc in col) || !(yc in col) || !(gc in col) || (where != "" && !(w[1] in col))) {
      print "plot_lines.sh: a named column is not in the header: " $0 > "/dev/stderr"; exit 3
    }
    next
  }
  where == "" || $col[w[1]] == w[2] { if ($col[yc] != "" && $col[yc] != "nan") print $col[gc], $col[xc], $col[yc] }
' "$csv" | sort -k1,1 -k2,2g > "$data"
[[ -s "$data" ]] || { echo "plot_lines.sh: no rows to plot in $csv" >&2; exit 3; }
script="${out%.svg}.gp"
{
  echo "set terminal svg size 900,520 dynamic background rgb 'white'"
  echo "set output '$out'"
  echo "set title '${title//\'/}'"
  echo "set xlabel '${xlabel:-$x}'; set ylabel '${ylabel:-$y}'"
  echo "set key outside right; set grid"
  ((logx)) && echo "set logscale x 2"
  ((logy)) && echo "set logscale y"
  n=0
  for h in "${hlines[@]+"${hlines[@]}"}"; do
    n=$((n + 1))
    echo "h$n = ${h%%:*}"
  done
  printf "plot "
  sep=""
  for g in $(cut -d' ' -f1 "$data" | uniq); do
    printf "%s'%s' using 2:(strcol(1) eq '%s' ? \$3 : 1/0) with linespoints title '%s'" "$sep" "$data" "$g" "$g"
    sep=", "
  done
  n=0
  for h in "${hlines[@]+"${hlines[@]}"}"; do
    n=$((n + 1))
    printf ", h%d with lines dashtype 2 title '%s'" "$n" "${h#*:}"
  done
  echo
} > "$script"
gnuplot "$script"
