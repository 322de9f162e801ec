set encoding utf8
set terminal pngcairo size 1000,600 noenhanced font 'sans,10'
set output 'throughput_all.png'
set grid
set xlabel 'batch size (samples)'
set offsets 0, 0, graph 0.05, 0
set title 'Throughput of every group'
set ylabel 'throughput (samples/s)'
set key below
set logscale x
set xrange [0.833333333333:72000]
set logscale y
set yrange [523.32612005:1655594.30198]
plot 'throughput_all.dat' index 0 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mnist_cnn infer fp32 · NVIDIA H200 · transfer excluded', \
     '' index 1 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mnist_cnn infer fp32 · NVIDIA H200 · transfer included', \
     '' index 2 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mnist_cnn train fp32 · NVIDIA H200 · transfer excluded', \
     '' index 3 using 1:2 with linespoints lw 2 pt 7 ps 0.6 title 'mnist_cnn train fp32 · NVIDIA H200 · transfer included'
set terminal svg size 1000,600 noenhanced font 'sans,10' background '#ffffff'
set output 'throughput_all.svg'
replot
unset output
