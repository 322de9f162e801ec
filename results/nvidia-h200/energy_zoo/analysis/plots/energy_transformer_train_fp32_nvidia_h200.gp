set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'energy_transformer_train_fp32_nvidia_h200.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'transformer train fp32 · NVIDIA H200'
set ylabel 'energy per sample (J)'
set yrange [0:*]
set key right top opaque
set logscale x
set xrange [0.833333333333:614.4]
set style textbox opaque noborder
set label 'most efficient: 64 (1.2 samples/J)' at first 64, first 0.83657201087 right offset character -1,1 boxed front tc rgb '#d62728' point pt 7 ps 2.2 lc rgb '#d62728'
set label 'above idle: 16 (1.61 samples/J)' at first 16, first 0.622602035455 left offset character 1,-1 boxed front tc rgb '#2ca02c' point pt 7 ps 2.2 lc rgb '#2ca02c'
plot 'energy_transformer_train_fp32_nvidia_h200.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#1f77b4' title 'J/sample', \
     '' using 1:3 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#2ca02c' title 'J/sample above idle'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'energy_transformer_train_fp32_nvidia_h200.svg'
replot
unset output
