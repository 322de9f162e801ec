set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'vgg19_train_fp32_nvidia_h200_time.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'vgg19 train fp32 · NVIDIA H200'
set ylabel 'step time (ms)'
set yrange [0:*]
set key below
set xrange [-0.38:71.38]
set arrow from first 11, graph 0 to first 11, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '10→11 +3.8%' at first 11, graph 0.95 left offset character 0.5,0 front tc rgb '#d62728'
set arrow from first 22, graph 0 to first 22, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '21→22 +4.0%' at first 22, graph 0.9 left offset character 0.5,0 front tc rgb '#d62728'
set arrow from first 44, graph 0 to first 44, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '43→44 +3.3%' at first 44, graph 0.85 right offset character -0.5,0 front tc rgb '#d62728'
set arrow from first 65, graph 0 to first 65, graph 1 nohead dt 3 lw 1.5 lc rgb '#d62728'
set label '64→65 +2.5%' at first 65, graph 0.95 right offset character -0.5,0 front tc rgb '#d62728'
plot 'vgg19_train_fp32_nvidia_h200_time.dat' using 1:3:4 with filledcurves fc rgb '#c6dbef' fs solid 0.7 title 'p10–p90', \
     '' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'median', \
     '' using 1:($5 == 0 && $7 == 0 ? $2 : NaN) with points pt 7 ps 0.9 lc rgb '#1f77b4' notitle, \
     (3.64923056689) + (0.80921606584) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'trend (Theil–Sen)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'vgg19_train_fp32_nvidia_h200_time.svg'
replot
unset output
