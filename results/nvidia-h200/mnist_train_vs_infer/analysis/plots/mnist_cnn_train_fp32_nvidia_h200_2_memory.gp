set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'mnist_cnn_train_fp32_nvidia_h200_2_memory.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'mnist_cnn train fp32 · NVIDIA H200 · transfer included'
set ylabel 'peak memory (GiB)'
set yrange [0:*]
set key right bottom opaque
set logscale x
set xrange [0.833333333333:72000]
set arrow from first 32768, graph 0 to first 32768, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '16384→32768 −9.61 MiB' at first 32768, graph 0.95 left offset character 0.5,0 front tc rgb '#d62728'
set arrow from first 60000, graph 0 to first 60000, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '32768→60000 −405 MiB' at first 60000, graph 0.9 left offset character 0.5,0 front tc rgb '#d62728'
plot 'mnist_cnn_train_fp32_nvidia_h200_2_memory.dat' using 1:2 with linespoints pt 7 ps 0.9 lw 2 lc rgb '#9467bd' title 'peak memory', \
     (0.0793973277682) + (0.000519915537615) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'line (Theil–Sen)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'mnist_cnn_train_fp32_nvidia_h200_2_memory.svg'
replot
unset output
