set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'vgg16_train_fp32_nvidia_h200_memory.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'vgg16 train fp32 · NVIDIA H200'
set ylabel 'peak memory (GiB)'
set yrange [0:*]
set key below
set xrange [-0.38:71.38]
set arrow from first 3, graph 0 to first 3, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '2→3 +211 MiB' at first 3, graph 0.95 left offset character 0.5,0 front tc rgb '#d62728'
set arrow from first 10, graph 0 to first 10, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '9→10 +844 MiB' at first 10, graph 0.9 left offset character 0.5,0 front tc rgb '#d62728'
set arrow from first 16, graph 0 to first 16, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '15→16 +457 MiB' at first 16, graph 0.85 left offset character 0.5,0 front tc rgb '#d62728'
set arrow from first 23, graph 0 to first 23, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '22→23 −428 MiB' at first 23, graph 0.95 left offset character 0.5,0 front tc rgb '#d62728'
set arrow from first 24, graph 0 to first 24, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '23→24 +422 MiB' at first 24, graph 0.9 left offset character 0.5,0 front tc rgb '#d62728'
set arrow from first 30, graph 0 to first 30, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '29→30 +154 MiB' at first 30, graph 0.85 left offset character 0.5,0 front tc rgb '#d62728'
plot 'vgg16_train_fp32_nvidia_h200_memory.dat' using 1:2 with lines lw 2 lc rgb '#9467bd' notitle, \
     'vgg16_train_fp32_nvidia_h200_memory.dat' using 1:($3 > 0 ? $2 : 1/0) with points pt 7 ps 0.9 lc rgb '#9467bd' title 'peak memory, a size of the line', \
     'vgg16_train_fp32_nvidia_h200_memory.dat' using 1:($3 > 0 ? 1/0 : $2) with points pt 6 ps 1.1 lw 1.5 lc rgb '#9467bd' title 'peak memory, off the line', \
     (2.71391153336) + (0.0697593688965) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'line (Theil–Sen)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'vgg16_train_fp32_nvidia_h200_memory.svg'
replot
unset output
