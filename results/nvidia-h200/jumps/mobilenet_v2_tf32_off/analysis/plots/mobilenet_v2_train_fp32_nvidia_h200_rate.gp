set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'mobilenet_v2_train_fp32_nvidia_h200_rate.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'mobilenet_v2 train fp32 · NVIDIA H200: TFLOP/s against the measured peaks'
set ylabel 'TFLOP/s'
set yrange [0:111.699260921]
set key top left
set xrange [-0.38:71.38]
plot 'mobilenet_v2_train_fp32_nvidia_h200_rate.dat' using 1:($3 == 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.8 lc rgb '#2ca02c' title 'achieved', \
     51.2803208137 with lines dt 4 lw 1.5 lc rgb '#1f77b4' title 'fp32 matrix product peak, 51.28 TFLOP/s', \
     82.7401932748 with lines dt 2 lw 1.5 lc rgb '#d62728' title 'fp32 convolution peak, 82.74 TFLOP/s'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'mobilenet_v2_train_fp32_nvidia_h200_rate.svg'
replot
unset output
