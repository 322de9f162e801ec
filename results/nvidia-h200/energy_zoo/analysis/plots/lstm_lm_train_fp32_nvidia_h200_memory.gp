set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'lstm_lm_train_fp32_nvidia_h200_memory.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'lstm_lm train fp32 · NVIDIA H200'
set ylabel 'peak memory (GiB)'
set yrange [0:*]
set key below
set logscale x
set xrange [0.833333333333:1228.8]
set arrow from first 256, graph 0 to first 256, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '128→256 +227 MiB' at first 256, graph 0.95 right offset character -0.5,0 front tc rgb '#d62728'
set arrow from first 512, graph 0 to first 512, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '256→512 +566 MiB' at first 512, graph 0.9 right offset character -0.5,0 front tc rgb '#d62728'
set arrow from first 1024, graph 0 to first 1024, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '512→1024 +1.10 GiB' at first 1024, graph 0.85 right offset character -0.5,0 front tc rgb '#d62728'
plot 'lstm_lm_train_fp32_nvidia_h200_memory.dat' using 1:2 with linespoints pt 7 ps 0.9 lw 2 lc rgb '#9467bd' title 'peak memory', \
     (0.655159950256) + (0.00462019443512) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'line (Theil–Sen)', \
     (x >= 32 ? (0.537192821503) + (0.00634932518005) * x : 1/0) with lines dt 4 lw 1.5 lc rgb '#ff7f0e' title 'line of the largest sizes'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'lstm_lm_train_fp32_nvidia_h200_memory.svg'
replot
unset output
