set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'resnet50_train_fp32_nvidia_h200_time.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'resnet50 train fp32 · NVIDIA H200'
set ylabel 'step time (ms)'
set yrange [0:*]
set key below
set xrange [-0.38:71.38]
set arrow from first 3, graph 0 to first 3, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '2→3 +38.7%' at first 3, graph 0.95 left offset character 0.5,0 front tc rgb '#d62728'
plot 'resnet50_train_fp32_nvidia_h200_time.dat' using 1:3:4 with filledcurves fc rgb '#c6dbef' fs solid 0.7 title 'p10–p90', \
     '' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'median', \
     '' using 1:($5 == 0 && $7 == 0 ? $2 : NaN) with points pt 7 ps 0.9 lc rgb '#1f77b4' notitle, \
     (9.53960259755) + (1.0895591312) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'trend (Theil–Sen)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'resnet50_train_fp32_nvidia_h200_time.svg'
replot
unset output
