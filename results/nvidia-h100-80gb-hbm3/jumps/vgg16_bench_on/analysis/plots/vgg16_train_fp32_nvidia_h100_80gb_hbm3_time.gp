set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'vgg16_train_fp32_nvidia_h100_80gb_hbm3_time.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'vgg16 train fp32 · NVIDIA H100 80GB HBM3'
set ylabel 'step time (ms)'
set yrange [0:*]
set key below
set xrange [0.18:42.82]
plot 'vgg16_train_fp32_nvidia_h100_80gb_hbm3_time.dat' using 1:3:4 with filledcurves fc rgb '#c6dbef' fs solid 0.7 title 'p10–p90', \
     '' using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'median', \
     '' using 1:($5 == 0 && $7 == 0 ? $2 : NaN) with points pt 7 ps 0.9 lc rgb '#1f77b4' notitle, \
     (3.49066400528) + (0.779690742493) * x with lines dt 2 lw 1.5 lc rgb '#555555' title 'trend (Theil–Sen)'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'vgg16_train_fp32_nvidia_h100_80gb_hbm3_time.svg'
replot
unset output
