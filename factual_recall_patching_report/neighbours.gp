set terminal svg size 900,520 dynamic background rgb 'white'
set output '/work/main/factual_recall_patching_report/neighbours.svg'
set title 'Gating-vector neighbour agreement by block'
set xlabel 'block'; set ylabel 'agreement@10'
set key outside right; set grid
plot '/work/main/factual_recall_patching_report/neighbours.dat' using 2:(strcol(1) eq 'input_token' ? $3 : 1/0) with linespoints title 'input_token', '/work/main/factual_recall_patching_report/neighbours.dat' using 2:(strcol(1) eq 'word_class' ? $3 : 1/0) with linespoints title 'word_class'
