set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'vgg16_train_fp32_nvidia_h200_throughput.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'vgg16 train fp32 · NVIDIA H200'
set ylabel 'throughput (samples/s)'
set yrange [0:*]
set key left top opaque
set xrange [-0.38:71.38]
set label 'fastest: 64 (1347.6 samples/s)' at first 64, first 1347.63628506 right offset character -1,1 front tc rgb '#d62728' point pt 7 ps 2.2 lc rgb '#d62728'
plot 'vgg16_train_fp32_nvidia_h200_throughput.dat' using 1:2 with lines lw 2 lc rgb '#2ca02c' title 'samples/s', \
     '' using 1:($3 == 0 ? $2 : NaN) with points pt 7 ps 0.9 lc rgb '#2ca02c' notitle
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'vgg16_train_fp32_nvidia_h200_throughput.svg'
replot
unset output
