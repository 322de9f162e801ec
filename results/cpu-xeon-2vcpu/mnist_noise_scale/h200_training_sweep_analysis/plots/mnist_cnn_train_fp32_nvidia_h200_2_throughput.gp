set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'mnist_cnn_train_fp32_nvidia_h200_2_throughput.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'mnist_cnn train fp32 · NVIDIA H200 · transfer included'
set ylabel 'throughput (samples/s)'
set yrange [0:*]
set key left top opaque
set logscale x
set xrange [0.833333333333:72000]
set label 'fastest: 32768 (407393.9 samples/s)' at first 32768, first 407393.899498 right offset character -1,1 front tc rgb '#d62728' point pt 7 ps 2.2 lc rgb '#d62728'
plot 'mnist_cnn_train_fp32_nvidia_h200_2_throughput.dat' using 1:2 with lines lw 2 lc rgb '#2ca02c' title 'samples/s', \
     '' using 1:($3 == 0 ? $2 : NaN) with points pt 7 ps 0.9 lc rgb '#2ca02c' notitle
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'mnist_cnn_train_fp32_nvidia_h200_2_throughput.svg'
replot
unset output
