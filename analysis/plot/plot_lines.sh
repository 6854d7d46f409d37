#!/bin/bash
# The one plotting path of the project: CSV -> SVG line plot with gnuplot, one line per group.
# Usage: plot_lines.sh --csv=F --x=COL --y=COL --group=COL --out=F.svg [--where=COL=VALUE]
#                      [--title=T] [--xlabel=T] [--ylabel=T] [--logx] [--logy] [--hline=Y:LABEL]...
#                      [--paper_hline=Y:LABEL]... [--ylow=COL --yhigh=COL] [--integer_x] [--max_series=N]
#                      [--points]
# Columns are named by the CSV header. Writes F.svg, the gnuplot script F.gp and the plotted rows F.dat
# ("group x y", plus "ylow yhigh" with bars) beside it.
#   --ylow/--yhigh  columns holding the lower and upper end of each point's error bar (absolute values, e.g. a
#                   confidence interval); every series is drawn with error bars. A row whose ylow or yhigh is
#                   empty or nan (e.g. a single seed) is drawn as a point without that bar.
#   --integer_x     integer x tics only (the x variable is an index: a block, a layer).
#   --hline=Y:LABEL a horizontal reference line at Y (a control, chance, a base model), LABEL in the key; grey,
#                   each with its own dash pattern; repeatable.
#   --paper_hline=Y:LABEL  the same for a paper's number at the paper's scale: it does not stretch the y range
#                   (our curves keep theirs), so it shows where it falls inside; the key gives "LABEL: Y".
#   --points        a scatter: every row a point, no lines (a 2-D map); not with --ylow / --yhigh.
#   --max_series=N  at most N series per panel (default 8); more groups are split over panels stacked in one
#                   SVG, sharing the x and y ranges, each with its own key.
# Text (title, labels, legend entries) is shown verbatim: gnuplot's enhanced text mode is off.
set -euo pipefail
csv="" x="" y="" group="" out="" where="" title="" xlabel="" ylabel="" logx=0 logy=0
ylow="" yhigh="" integer_x=0 max_series=8 points=0
hlines=() paper_hlines=()  # "Y:LABEL" each; paper_hlines[i] is 1 for a --paper_hline
for arg in "$@"; do
  case "$arg" in
    --csv=*) csv=${arg#*=} ;; --x=*) x=${arg#*=} ;; --y=*) y=${arg#*=} ;;
    --group=*) group=${arg#*=} ;; --out=*) out=${arg#*=} ;; --where=*) where=${arg#*=} ;;
    --title=*) title=${arg#*=} ;; --xlabel=*) xlabel=${arg#*=} ;; --ylabel=*) ylabel=${arg#*=} ;;
    --logx) logx=1 ;; --logy) logy=1 ;; --hline=*) hlines+=("${arg#*=}") paper_hlines+=(0) ;;
    --paper_hline=*) hlines+=("${arg#*=}") paper_hlines+=(1) ;;
    --ylow=*) ylow=${arg#*=} ;; --yhigh=*) yhigh=${arg#*=} ;;
    --integer_x) integer_x=1 ;; --max_series=*) max_series=${arg#*=} ;; --points) points=1 ;;
    *) echo "plot_lines.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
[[ -n "$csv" && -n "$x" && -n "$y" && -n "$group" && -n "$out" ]] || {
  echo "plot_lines.sh: --csv, --x, --y, --group and --out are required" >&2; exit 2; }
[[ -z "$ylow" && -z "$yhigh" || -n "$ylow" && -n "$yhigh" ]] || {
  echo "plot_lines.sh: --ylow and --yhigh go together" >&2; exit 2; }
[[ $points == 0 || -z "$ylow" ]] || { echo "plot_lines.sh: --points draws no error bars" >&2; exit 2; }
[[ "$max_series" =~ ^[1-9][0-9]*$ ]] || {
  echo "plot_lines.sh: --max_series must be a positive integer, not '$max_series'" >&2; exit 2; }
bars=0
[[ -n "$ylow" ]] && bars=1
data="${out%.svg}.dat"
# Columns by name; rows filtered by --where; output "group x y [ylow yhigh]" (an empty or nan bar end written as
# nan) sorted by group, in natural order (s_2 before s_10), then by x.
awk -F, -v xc="$x" -v yc="$y" -v gc="$group" -v where="$where" -v lc="$ylow" -v hc="$yhigh" -v bars="$bars" \
    -v csv="$csv" '
  function bar(v) { return (v == "" || tolower(v) ~ /^[+-]?nan$/) ? "nan" : v }
  NR == 1 {
    for (i = 1; i <= NF; ++i) col[$i] = i
    split(where, w, "=")
    if (!(xc in col) || !(yc in col) || !(gc in col) || (where != "" && !(w[1] in col))) {
      print "plot_lines.sh: a named column is not in the header: " $0 > "/dev/stderr"; exit 3
    }
    if (bars && (!(lc in col) || !(hc in col))) {
      print "plot_lines.sh: --ylow=" lc " / --yhigh=" hc ": column " (lc in col ? hc : lc) \
        " is not in the header of " csv ": " $0 > "/dev/stderr"; exit 3
    }
    next
  }
  where == "" || $col[w[1]] == w[2] {
    if ($col[yc] == "" || tolower($col[yc]) ~ /^[+-]?nan$/) next
    if (bars) print $col[gc], $col[xc], $col[yc], bar($col[lc]), bar($col[hc])
    else print $col[gc], $col[xc], $col[yc]
  }
' "$csv" | sort -k1,1V -k2,2g > "$data"
[[ -s "$data" ]] || { echo "plot_lines.sh: no rows to plot in $csv" >&2; exit 3; }
# A gnuplot single-quoted string: a quote inside is doubled.
q() { printf "'%s'" "${1//\'/\'\'}"; }
groups=()
while IFS= read -r g; do groups+=("$g"); done < <(cut -d' ' -f1 "$data" | uniq)
ngroups=${#groups[@]}
panels=$(((ngroups + max_series - 1) / max_series))
per_panel=$(((ngroups + panels - 1) / panels))
# The plot command for groups[$1 .. $2) and every --hline.
plot_command() {
  local i sep="" n=0 h
  printf "plot "
  for ((i = $1; i < $2; ++i)); do
    printf "%s%s using 2:(strcol(1) eq %s ? \$3 : 1/0)" "$sep" "$(q "$data")" "$(q "${groups[i]}")"
    if ((bars)); then
      printf ":(\$4 == \$4 ? \$4 : \$3):(\$5 == \$5 ? \$5 : \$3) with yerrorlines"
    elif ((points)); then
      printf " with points pointtype 7 pointsize 0.4"
    else
      printf " with linespoints"
    fi
    printf " title %s" "$(q "${groups[i]}")"
    sep=", "
  done
  for h in "${hlines[@]+"${hlines[@]}"}"; do
    n=$((n + 1))
    # Grey, each its own dash pattern: in a curve's colour a reference reads as that curve's (a paper value as ours).
    if ((paper_hlines[n - 1])); then
      printf ", h%d with lines noautoscale dashtype %d linecolor rgb '#505050' title %s" "$n" "$((n + 1))" \
        "$(q "${h#*:}: ${h%%:*}")"
    else
      printf ", h%d with lines dashtype %d linecolor rgb '#505050' title %s" "$n" "$((n + 1))" "$(q "${h#*:}")"
    fi
  done
  echo
}
script="${out%.svg}.gp"
{
  echo "set terminal svg size 900,$((520 * panels)) dynamic background rgb 'white'"
  echo "set termoption noenhanced"
  echo "set xlabel $(q "${xlabel:-$x}"); set ylabel $(q "${ylabel:-$y}")"
  echo "set key outside right; set grid"
  ((logx)) && echo "set logscale x 2"
  ((logy)) && echo "set logscale y"
  if ((integer_x)); then
    if ((logx)); then
      echo "set format x '%.0f'"
    else
      # A round integer step (1, 2, 5, 10, 20, ...) giving about 10 tics at most.
      step=$(awk 'NR == 1 || $2 < lo { lo = $2 } NR == 1 || $2 > hi { hi = $2 }
        END { raw = (hi - lo) / 10
              for (m = 1; ; m *= 10) { if (m >= raw) { print m; exit } if (2 * m >= raw) { print 2 * m; exit }
                                       if (5 * m >= raw) { print 5 * m; exit } } }' "$data")
      echo "set xtics $step; set mxtics 1; set format x '%.0f'"
    fi
  fi
  # Bars at the first and last x would lie on the border: pad the x range a little.
  ((bars)) && echo "set autoscale xfix; set offsets graph 0.03, graph 0.03, 0, 0"
  n=0
  for h in "${hlines[@]+"${hlines[@]}"}"; do
    n=$((n + 1))
    echo "h$n = ${h%%:*}"
  done
  if ((panels == 1)); then
    echo "set output $(q "$out")"
    echo "set title $(q "$title")"
    plot_command 0 "$ngroups"
  else
    # Every panel gets the ranges of one plot of all series: a dry run to /dev/null fixes them.
    echo "set output '/dev/null'"
    plot_command 0 "$ngroups"
    echo "set xrange [GPVAL_X_MIN:GPVAL_X_MAX]; set yrange [GPVAL_Y_MIN:GPVAL_Y_MAX]"
    # The same right margin in every panel (the widest legend entry), so that the panels' x axes line up.
    width=$(printf '%s\n' "${groups[@]}" "${hlines[@]+"${hlines[@]#*:}"}" |
      awk '{ w = length > w ? length : w } END { print w }')
    echo "set rmargin $((width + 7))"
    echo "set output $(q "$out")"
    echo "set multiplot layout $panels,1 title $(q "$title")"
    for ((p = 0; p < panels; ++p)); do
      start=$((p * per_panel)) end=$(((p + 1) * per_panel))
      ((end > ngroups)) && end=$ngroups
      plot_command "$start" "$end"
    done
    echo "unset multiplot"
  fi
} > "$script"
gnuplot "$script"
