set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'layers_resnet18_train_fp32_cpu.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'resnet18 train fp32 · CPU AMD EPYC, 2 threads: time per layer (host time, stacked)'
set ylabel 'ms per step'
set yrange [0:*]
set key outside right top
set xrange [7.5:16.5]
plot 'layers_resnet18_train_fp32_cpu.dat' using 1:($10):($9) with filledcurves fs solid 0.85 lc rgb '#c7c7c7' title '129 other layers', \
     '' using 1:($9):($8) with filledcurves fs solid 0.85 lc rgb '#bcbd22' title 'layer3.1.conv1 bwd', \
     '' using 1:($8):($7) with filledcurves fs solid 0.85 lc rgb '#e377c2' title 'layer3.0.conv2 bwd', \
     '' using 1:($7):($6) with filledcurves fs solid 0.85 lc rgb '#8c564b' title 'layer3.1.conv2 bwd', \
     '' using 1:($6):($5) with filledcurves fs solid 0.85 lc rgb '#9467bd' title 'layer4.0.conv1 bwd', \
     '' using 1:($5):($4) with filledcurves fs solid 0.85 lc rgb '#d62728' title 'step.optimizer', \
     '' using 1:($4):($3) with filledcurves fs solid 0.85 lc rgb '#2ca02c' title 'layer4.1.conv2 bwd', \
     '' using 1:($3):($2) with filledcurves fs solid 0.85 lc rgb '#ff7f0e' title 'layer4.1.conv1 bwd', \
     '' using 1:($2):(0) with filledcurves fs solid 0.85 lc rgb '#1f77b4' title 'layer4.0.conv2 bwd'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'layers_resnet18_train_fp32_cpu.svg'
replot
unset output
