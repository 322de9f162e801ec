set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'deepspeech2_train_fp32_nvidia_h200_memory.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'deepspeech2 train fp32 · NVIDIA H200'
set ylabel 'peak memory (GiB)'
set yrange [0:*]
set key below
set logscale x
set xrange [0.833333333333:307.2]
set arrow from first 2, graph 0 to first 2, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '1→2 −56.0 MiB' at first 2, graph 0.95 left offset character 0.5,0 front tc rgb '#d62728'
set arrow from first 4, graph 0 to first 4, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '2→4 −108 MiB' at first 4, graph 0.9 left offset character 0.5,0 front tc rgb '#d62728'
set arrow from first 8, graph 0 to first 8, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '4→8 −58.7 MiB' at first 8, graph 0.85 left offset character 0.5,0 front tc rgb '#d62728'
plot 'deepspeech2_train_fp32_nvidia_h200_memory.dat' using 1:2 with lines lw 2 lc rgb '#9467bd' notitle, \
     'deepspeech2_train_fp32_nvidia_h200_memory.dat' using 1:($3 > 0 ? $2 : 1/0) with points pt 7 ps 0.9 lc rgb '#9467bd' title 'peak memory, a size of the line', \
     'deepspeech2_train_fp32_nvidia_h200_memory.dat' using 1:($3 > 0 ? 1/0 : $2) with points pt 6 ps 1.1 lw 1.5 lc rgb '#9467bd' title 'peak memory, off the line', \
     (0.527364392434) + (0.0934209650563) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'line (Theil–Sen)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'deepspeech2_train_fp32_nvidia_h200_memory.svg'
replot
unset output
