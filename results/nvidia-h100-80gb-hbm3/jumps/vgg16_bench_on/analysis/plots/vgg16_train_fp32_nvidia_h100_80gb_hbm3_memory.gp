set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'vgg16_train_fp32_nvidia_h100_80gb_hbm3_memory.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'vgg16 train fp32 · NVIDIA H100 80GB HBM3'
set ylabel 'peak memory (GiB)'
set yrange [0:*]
set key below
set xrange [0.18:42.82]
plot 'vgg16_train_fp32_nvidia_h100_80gb_hbm3_memory.dat' using 1:2 with linespoints pt 7 ps 0.9 lw 2 lc rgb '#9467bd' title 'peak memory', \
     (1.09498516719) + (0.0700709025065) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'line (Theil–Sen)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'vgg16_train_fp32_nvidia_h100_80gb_hbm3_memory.svg'
replot
unset output
