set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'resnet18_train_fp32_cpu_rate.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'resnet18 train fp32 · CPU AMD EPYC, 2 threads: TFLOP/s against the measured peaks'
set ylabel 'TFLOP/s'
set yrange [0:0.298941363959]
set key top left
set xrange [7.5:16.5]
plot 'resnet18_train_fp32_cpu_rate.dat' using 1:($3 == 0 ? $2 : NaN) with linespoints lw 2 pt 7 ps 0.8 lc rgb '#2ca02c' title 'achieved', \
     0.201799248802 with lines dt 4 lw 1.5 lc rgb '#1f77b4' title 'fp32 matrix product peak, 0.2018 TFLOP/s', \
     0.221438047377 with lines dt 2 lw 1.5 lc rgb '#d62728' title 'fp32 convolution peak, 0.2214 TFLOP/s'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'resnet18_train_fp32_cpu_rate.svg'
replot
unset output
