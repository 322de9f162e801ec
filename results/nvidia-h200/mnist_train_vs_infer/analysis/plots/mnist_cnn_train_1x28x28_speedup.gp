set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'mnist_cnn_train_1x28x28_speedup.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'Speedup over transfer excluded — mnist_cnn train 1x28x28'
set ylabel 'speedup over the baseline (×)'
set key below
set yrange [0:*]
set logscale x
set xrange [0.833333333333:72000]
plot 'mnist_cnn_train_1x28x28_speedup.dat' index 0 using 1:2 with linespoints lw 2 pt 7 ps 0.8 title 'transfer included', \
     1 with lines dt 2 lw 1.5 lc rgb '#555555' title 'baseline (1×)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'mnist_cnn_train_1x28x28_speedup.svg'
replot
unset output
