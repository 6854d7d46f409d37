set terminal svg size 900,520 dynamic background rgb 'white'
set output '/work/main/factual_recall_patching_report/sgatlin_nie.svg'
set title 'sgatlin: NIE of patching a counterfactual fact'
set xlabel 'patched position'; set ylabel 'patched blocks'
set xtics ("0" 0, "1" 1, "2" 2, "3" 3, "4" 4, "5" 5, "6" 6); set ytics ("0" 0, "1" 1, "2" 2, "3" 3, "all" 4)
set palette defined (0 'white', 1 'red'); set cblabel 'mean_nie'
set autoscale fix; unset key
plot '/work/main/factual_recall_patching_report/sgatlin_nie.dat' using 1:2:3 with image, '' using 1:2:(sprintf('%.2f', $3)) with labels
