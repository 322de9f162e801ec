set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'power_resnet50_train_fp32_nvidia_h200.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'resnet50 train fp32 · NVIDIA H200'
set ylabel 'average power over the window (W)'
set yrange [0:*]
set key right bottom opaque
set logscale x
set xrange [0.833333333333:614.4]
plot 'power_resnet50_train_fp32_nvidia_h200.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#9467bd' title 'average power', \
     '' using 1:3 with lines dt 2 lw 1.5 lc rgb '#555555' title 'idle'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'power_resnet50_train_fp32_nvidia_h200.svg'
replot
unset output
