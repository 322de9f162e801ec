set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'vgg16_train_bf16_nvidia_h200_rate.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'vgg16 train bf16 · NVIDIA H200: TFLOP/s against the measured peaks'
set ylabel 'TFLOP/s'
set yrange [0:1064.8312675]
set key top left
set xrange [-0.38:71.38]
plot 'vgg16_train_bf16_nvidia_h200_rate.dat' using 1:($3 == 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.8 lc rgb '#2ca02c' title 'achieved', \
     788.76390185 with lines dt 4 lw 1.5 lc rgb '#1f77b4' title 'bf16 matrix product peak, 788.8 TFLOP/s', \
     785.666491017 with lines dt 2 lw 1.5 lc rgb '#d62728' title 'bf16 convolution peak, 785.7 TFLOP/s'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'vgg16_train_bf16_nvidia_h200_rate.svg'
replot
unset output
