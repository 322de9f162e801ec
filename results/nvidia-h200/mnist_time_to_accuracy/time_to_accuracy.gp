set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'time_to_accuracy.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'Test accuracy against training time per batch size (learning rate scaled sqrt from batch 32)'
set xlabel 'training time (s, evaluation excluded)'
set ylabel 'test accuracy (%)'
set yrange [*:100]
set key below
set bmargin 6
plot 'time_to_accuracy.dat' index 0 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'batch 64 (lr 0.01414)', \
     '' index 1 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'batch 256 (lr 0.02828)', \
     '' index 2 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'batch 1024 (lr 0.05657)', \
     '' index 3 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'batch 4096 (lr 0.1131)', \
     '' index 4 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'batch 16384 (lr 0.2263)', \
     98 with lines dt 2 lw 1.5 lc rgb '#555555' title 'target 98.00%'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'time_to_accuracy.svg'
replot
unset output
