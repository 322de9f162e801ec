set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'mnist_cnn_train_fp32_nvidia_h200_2_memory.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'mnist_cnn train fp32 · NVIDIA H200 · transfer included'
set ylabel 'peak memory (GiB)'
set yrange [0:*]
set key below
set logscale x
set xrange [0.833333333333:72000]
plot 'mnist_cnn_train_fp32_nvidia_h200_2_memory.dat' using 1:2 with linespoints pt 7 ps 0.9 lw 2 lc rgb '#9467bd' title 'peak memory', \
     (0.0793973277682) + (0.000519915537615) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'line (Theil–Sen)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'mnist_cnn_train_fp32_nvidia_h200_2_memory.svg'
replot
unset output
