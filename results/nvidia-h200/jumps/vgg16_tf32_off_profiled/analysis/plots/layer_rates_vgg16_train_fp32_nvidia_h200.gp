set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'layer_rates_vgg16_train_fp32_nvidia_h200.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'vgg16 train fp32 · NVIDIA H200: TFLOP/s of the convolution and linear layers (device time)'
set ylabel 'TFLOP/s'
set yrange [0:*]
set key outside right top
set xrange [-0.38:71.38]
plot 'layer_rates_vgg16_train_fp32_nvidia_h200.dat' using 1:2 with linespoints lw 3 pt 7 ps 0.6 lc rgb '#000000' title 'all of them', \
     82.7401932748 with lines dt 2 lw 1.5 lc rgb '#7f7f7f' title 'fp32 convolution peak', \
     '' using 1:3 with linespoints lw 1.5 pt 7 ps 0.4 lc rgb '#1f77b4' title 'features.2 bwd', \
     '' using 1:4 with linespoints lw 1.5 pt 7 ps 0.4 lc rgb '#ff7f0e' title 'features.7 bwd', \
     '' using 1:5 with linespoints lw 1.5 pt 7 ps 0.4 lc rgb '#2ca02c' title 'features.2 fwd', \
     '' using 1:6 with linespoints lw 1.5 pt 7 ps 0.4 lc rgb '#d62728' title 'features.7 fwd', \
     '' using 1:7 with linespoints lw 1.5 pt 7 ps 0.4 lc rgb '#9467bd' title 'features.14 fwd', \
     '' using 1:8 with linespoints lw 1.5 pt 7 ps 0.4 lc rgb '#8c564b' title 'features.12 fwd', \
     '' using 1:9 with linespoints lw 1.5 pt 7 ps 0.4 lc rgb '#e377c2' title 'features.12 bwd', \
     '' using 1:10 with linespoints dt 2 pt 6 ps 1.8 lw 2 lc rgb '#000000' title 'timed alone (circles)', \
     '' using 1:11 with linespoints dt 2 pt 6 ps 1.5 lw 1.5 lc rgb '#1f77b4' notitle, \
     '' using 1:12 with linespoints dt 2 pt 6 ps 1.5 lw 1.5 lc rgb '#ff7f0e' notitle, \
     '' using 1:13 with linespoints dt 2 pt 6 ps 1.5 lw 1.5 lc rgb '#2ca02c' notitle, \
     '' using 1:14 with linespoints dt 2 pt 6 ps 1.5 lw 1.5 lc rgb '#d62728' notitle, \
     '' using 1:15 with linespoints dt 2 pt 6 ps 1.5 lw 1.5 lc rgb '#9467bd' notitle, \
     '' using 1:16 with linespoints dt 2 pt 6 ps 1.5 lw 1.5 lc rgb '#8c564b' notitle, \
     '' using 1:17 with linespoints dt 2 pt 6 ps 1.5 lw 1.5 lc rgb '#e377c2' notitle
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'layer_rates_vgg16_train_fp32_nvidia_h200.svg'
replot
unset output
