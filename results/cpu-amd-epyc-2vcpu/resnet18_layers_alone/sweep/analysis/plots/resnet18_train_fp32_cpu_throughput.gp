set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'resnet18_train_fp32_cpu_throughput.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'resnet18 train fp32 · CPU AMD EPYC, 2 threads'
set ylabel 'throughput (samples/s)'
set yrange [0:*]
set key left top opaque
set xrange [7.5:16.5]
set label 'fastest: 16 (326.9 samples/s)' at first 16, first 326.865405804 right offset character -1,1 front tc rgb '#d62728' point pt 7 ps 2.2 lc rgb '#d62728'
plot 'resnet18_train_fp32_cpu_throughput.dat' using 1:2 with lines lw 2 lc rgb '#2ca02c' title 'samples/s', \
     '' using 1:($3 == 0 ? $2 : NaN) with points pt 7 ps 0.9 lc rgb '#2ca02c' notitle
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'resnet18_train_fp32_cpu_throughput.svg'
replot
unset output
