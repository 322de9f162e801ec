set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'mnist_cnn_infer_fp32_nvidia_h200_2_memory.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'mnist_cnn infer fp32 · NVIDIA H200 · transfer included'
set ylabel 'peak memory (GiB)'
set yrange [0:*]
set key below
set logscale x
set xrange [0.833333333333:72000]
set arrow from first 60000, graph 0 to first 60000, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '32768→60000 −144 MiB' at first 60000, graph 0.95 right offset character -0.5,0 front tc rgb '#d62728'
plot 'mnist_cnn_infer_fp32_nvidia_h200_2_memory.dat' using 1:2 with linespoints pt 7 ps 0.9 lw 2 lc rgb '#9467bd' title 'peak memory', \
     (0.0680170059204) + (0.00030142813921) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'line (Theil–Sen)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'mnist_cnn_infer_fp32_nvidia_h200_2_memory.svg'
replot
unset output
