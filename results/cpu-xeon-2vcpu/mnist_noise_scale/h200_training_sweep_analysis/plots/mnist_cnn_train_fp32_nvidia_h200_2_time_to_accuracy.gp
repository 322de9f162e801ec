set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'mnist_cnn_train_fp32_nvidia_h200_2_time_to_accuracy.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'mnist_cnn train fp32 · NVIDIA H200 · transfer included: time to an accuracy with B_noise 1303'
set ylabel 'against the least (×)'
set logscale y
set yrange [0.9:1955.60312363]
set key top center
set logscale x
set xrange [0.833333333333:72000]
set label 'least: 512' at first 512, first 1 left offset character 1,1 front tc rgb '#d62728' point pt 7 ps 2.2 lc rgb '#d62728'
plot 'mnist_cnn_train_fp32_nvidia_h200_2_time_to_accuracy.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '#2ca02c' title 'time: steps × median step time', \
     '' using 1:3 with lines dt 2 lw 1.5 lc rgb '#555555' title 'steps: S_min (1 + B_noise / B)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'mnist_cnn_train_fp32_nvidia_h200_2_time_to_accuracy.svg'
replot
unset output
