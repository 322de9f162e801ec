set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'layers_vgg16_train_fp32_nvidia_h100_80gb_hbm3.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'vgg16 train fp32 · NVIDIA H100 80GB HBM3: time per layer (device time, stacked)'
set ylabel 'ms per step'
set yrange [0:*]
set key outside right top
set xrange [-0.38:71.38]
plot 'layers_vgg16_train_fp32_nvidia_h100_80gb_hbm3.dat' using 1:($10):($9) with filledcurves fs solid 0.85 lc rgb '#c7c7c7' title '83 other layers', \
     '' using 1:($9):($8) with filledcurves fs solid 0.85 lc rgb '#bcbd22' title 'features.19 bwd', \
     '' using 1:($8):($7) with filledcurves fs solid 0.85 lc rgb '#e377c2' title 'features.4 bwd', \
     '' using 1:($7):($6) with filledcurves fs solid 0.85 lc rgb '#8c564b' title 'features.5 bwd', \
     '' using 1:($6):($5) with filledcurves fs solid 0.85 lc rgb '#9467bd' title 'features.12 bwd', \
     '' using 1:($5):($4) with filledcurves fs solid 0.85 lc rgb '#d62728' title 'features.14 bwd', \
     '' using 1:($4):($3) with filledcurves fs solid 0.85 lc rgb '#2ca02c' title 'features.2 fwd', \
     '' using 1:($3):($2) with filledcurves fs solid 0.85 lc rgb '#ff7f0e' title 'features.7 bwd', \
     '' using 1:($2):(0) with filledcurves fs solid 0.85 lc rgb '#1f77b4' title 'features.2 bwd'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'layers_vgg16_train_fp32_nvidia_h100_80gb_hbm3.svg'
replot
unset output
