set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'resnet50_train_fp32_nvidia_h200_memory.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'resnet50 train fp32 · NVIDIA H200'
set ylabel 'peak memory (GiB)'
set yrange [0:*]
set key below
set xrange [-0.38:71.38]
plot 'resnet50_train_fp32_nvidia_h200_memory.dat' using 1:2 with linespoints pt 7 ps 0.9 lw 2 lc rgb '#9467bd' title 'peak memory', \
     (0.222200100239) + (0.0798750657302) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'line (Theil–Sen)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'resnet50_train_fp32_nvidia_h200_memory.svg'
replot
unset output
